"""Benchmarks: kernels of iotame-kernel run under the runtime, repeated, summarized per phase."""
from .execute import BenchRun, parse_kernel_output, run_bench, run_trial
from .kernels import FALSE, KERNELS, TRUE, Ior, Kernel, get_kernel, parse_set
from .plan import BenchSpec, Trial, plan
from .results import RUNTIME_ROW, bench_json, phase_mbs, summarize_phases

__all__ = ["BenchSpec", "Trial", "plan", "BenchRun", "run_bench", "run_trial", "parse_kernel_output", "Kernel",
           "Ior", "KERNELS", "get_kernel", "parse_set", "TRUE", "FALSE", "summarize_phases", "phase_mbs",
           "bench_json", "RUNTIME_ROW"]
