"""Benchmarks: kernels of iotame-kernel run under the runtime, repeated and swept, summarized per phase,
plotted; and the device's limit measured with fio."""
from .caches import drop_caches
from .execute import BenchRun, merge_results, parse_kernel_output, run_bench, run_trial
from .fio import FIO_FILE, fio_command, load_fio, parse_fio_output, probe_direct, run_fio, save_fio
from .kernels import (FALSE, KERNELS, TRUE, CacheSplit, Ior, Kernel, LongKernel, describe_kernel, get_kernel,
                      kernel_names, list_kernels, parse_set, parse_sweep)
from .options import Option, parse_description, parse_size
from .plan import BenchSpec, Trial, plan
from .plot import plot_sweep
from .results import RUNTIME_ROW, bench_json, caches_dropped, phase_mbs, summarize_phases

__all__ = ["BenchSpec", "Trial", "plan", "BenchRun", "run_bench", "run_trial", "parse_kernel_output",
           "merge_results", "Kernel", "Ior", "LongKernel", "CacheSplit", "KERNELS", "get_kernel", "kernel_names",
           "list_kernels", "describe_kernel", "parse_set", "parse_sweep", "TRUE", "FALSE",
           "Option", "parse_description", "parse_size", "summarize_phases", "phase_mbs", "bench_json",
           "caches_dropped", "RUNTIME_ROW", "drop_caches", "plot_sweep", "run_fio", "fio_command",
           "parse_fio_output", "probe_direct", "save_fio", "load_fio", "FIO_FILE"]
