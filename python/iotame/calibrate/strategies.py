"""The strategies part of a machine profile (issue 48): `iotame-kernel sigprobe` (kernels/sigprobe.c), a design of
synthetic collective call signatures, run once per collective strategy under libiotame.so with that strategy fixed
(`collective.strategy`), through the launcher the network probe uses (network.with_probe). With emulated storage
(calibrate --config) the strategies run on the configuration's own emulated storage, every target of it.

The result is the profile's `strategies` section (docs/formats.md, Machine profile): {"method", "seconds",
"measured": one row per strategy x signature x operation}; calibrate adds "fit" (fit.py) when it is there."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import IotameError
from ..paths import ENV_LIB, require_lib
from ..runner import run_command
from ..tune.job import Job
from .network import NOT_ASKED_NOTE as NETWORK_NOT_ASKED
from .network import with_probe

__all__ = ["STRATEGIES", "ROW_KEYS", "Design", "FULL_DESIGN", "QUICK_DESIGN", "NOT_ASKED_NOTE", "SKIPPED_NOTE",
           "strategy_config", "strategy_rows", "measure_strategies", "signature_label", "median_mbs", "runtime_for"]

# The strategies measured, each fixed in turn; passthrough is the MPI library's own collective call.
STRATEGIES = ("passthrough", "independent", "two_phase", "node_local", "target_aligned", "view_based")
# The keys of a measured row, in the contract's order (docs/formats.md).
ROW_KEYS = ("op", "strategy", "nprocs", "nodes", "ppn", "piece", "pieces", "interleaved", "calls", "bytes", "gap",
            "targets", "unit", "sieves", "open_seconds", "seconds")
NOT_ASKED_NOTE = "strategies not measured: " + NETWORK_NOT_ASKED.split(": ", 1)[1]
SKIPPED_NOTE = "strategies not measured (--no-strategies)"
# A safety net far above a strategy's budget (Design.seconds): the first repeat of every signature runs whatever the
# budget, so a slow strategy overshoots it; a run past this is stopped and left out with a note, and the other
# strategies' measurements are kept.
PROBE_TIMEOUT = 900     # seconds of one strategy's run
KIB = 1 << 10
MIB = 1 << 20


@dataclass(frozen=True)
class Design:
    """The signatures sigprobe measures: piece sizes, calls per phase, layouts, operations, repeats of each, and
    the bytes per process and call (k = max(1, pieces_bytes / size) pieces); `call_sizes` adds pieces at other
    bytes per process and call, (piece size, bytes) each. `seconds` is each strategy's time budget (sigprobe
    --seconds, 0: none): after every signature's first repeat, further repeats only within the signature's share
    of it."""
    sizes: tuple[int, ...]
    calls: tuple[int, ...]
    repeats: int
    layouts: tuple[str, ...] = ("interleaved", "contiguous")
    ops: tuple[str, ...] = ("write", "read")
    pieces_bytes: int = MIB
    call_sizes: tuple[tuple[int, int], ...] = ()
    seconds: float = 0.0

    def argv(self, directory: str | os.PathLike) -> list[str]:
        """sigprobe's arguments (after the program) for a file in `directory`."""
        sizes = [str(s) for s in self.sizes] + [f"{s}@{b}" for s, b in self.call_sizes]
        return ["sigprobe", "--dir", str(directory), "--pieces-bytes", str(self.pieces_bytes),
                "--sizes", ",".join(sizes), "--calls", ",".join(map(str, self.calls)),
                "--layouts", ",".join(self.layouts), "--ops", ",".join(self.ops), "--repeats", str(self.repeats),
                "--seconds", f"{self.seconds:g}"]


# 1 KiB to 4 MiB pieces, 1 MiB per process and call; contiguous pieces merge into one run, so the contiguous layout
# gives the 1 MiB and 4 MiB runs. The call sizes of applications reach from a few KiB to tens of MiB per process,
# where a strategy's per-call costs and its streams weigh differently: small pieces in 16 KiB calls and large ones
# in 8 and 16 MiB calls span the fit's v, and 64 KiB pieces in 256 KiB calls put a point between them where
# applications' mid-size calls are (Matrix-like phases of 64 KiB blocks). 64 B pieces come in 64 KiB calls, as many
# pieces as 1 KiB ones in 1 MiB: a strategy whose aggregators write every small piece on its own (node_local on shared
# targets, or through a FUSE client) takes seconds per thousand, and at 1 MiB a call their first repeat alone took
# minutes. Quick: still at least 4 interleaved and contiguous points of u and 2 of v per operation, so that the fit's
# 7 coefficients per strategy stay determined with rows to spare.
# A strategy's time budget keeps the stage at minutes whatever one strategy does (issue 48: 64 B pieces written at
# 0.4 MB/s on 4 hosts took one strategy's run past its timeout). The full design's strategies take seconds each on
# one node and one to two minutes on two hosts, so there only a slow strategy's slowest signatures get fewer
# repeats; --quick, coarse by intent, a third of that.
FULL_SECONDS = 90.0
QUICK_SECONDS = 30.0
FULL_DESIGN = Design(sizes=(1024, 16384, 262144, 4194304), calls=(1, 8), repeats=5,
                     call_sizes=((64, 64 * KIB), (1024, 16 * KIB), (4096, 16 * KIB), (65536, 256 * KIB),
                                 (MIB, 8 * MIB), (4 * MIB, 16 * MIB)), seconds=FULL_SECONDS)
QUICK_DESIGN = Design(sizes=(1024, 16384, 4194304), calls=(1, 8), repeats=2,
                      call_sizes=((64, 64 * KIB), (4096, 16 * KIB), (MIB, 8 * MIB)), seconds=QUICK_SECONDS)


def strategy_config(strategy: str, emulate: dict | None = None) -> dict:
    """The configuration a strategy's run has: the strategy fixed, and the emulated storage when there is one."""
    defaults: dict = {"collective": {"strategy": strategy}}
    if emulate is not None:
        defaults["emulate"] = emulate
    return {"version": 1, "defaults": defaults}


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def strategy_rows(result: dict, strategy: str, layout: dict) -> list[dict]:
    """The profile's rows of one sigprobe result: the kernel's rows with the strategy, and the file's layout as the
    runtime sees it (`layout`: the profile's filesystem targets and stripe_unit)."""
    rows = []
    for r in result["rows"]:
        row = dict(r, strategy=strategy, targets=int(layout.get("targets", 1)),
                   unit=int(layout.get("stripe_unit", 0)), open_seconds=_round(r["open_seconds"]),
                   seconds=[_round(s) for s in r["seconds"]])
        rows.append({k: row[k] for k in ROW_KEYS})
    return rows


def signature_label(row: dict) -> str:
    """A signature in words: `write 16384 x 64 B interleaved, 8 calls`."""
    layout = "interleaved" if row["interleaved"] else "contiguous"
    calls = f"{row['calls']} call{'s' if row['calls'] != 1 else ''}"
    return f"{row['op']} {row['pieces']:,} x {row['piece']:,} B {layout}, {calls}"


def _parse(stdout: str | None) -> dict | None:
    for line in (stdout or "").splitlines():
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def _served(stats: dict | None, strategy: str) -> str | None:
    """A note when the statistics show collective calls that the strategy did not serve (it does not apply to the
    file, or the runtime passed them through), else None. Calls served by the library are listed under no
    strategy (passthrough's own)."""
    if stats is None:
        return f"strategy {strategy}: no statistics, which strategy served the calls is unknown"
    calls = served = 0
    reasons: dict[str, int] = {}
    for f in stats.get("files", []):
        ops, ranks = f.get("ops") or {}, f.get("ranks") or stats.get("nprocs") or 1    # ops: summed over ranks
        calls += sum(int((ops.get(op) or {}).get("count", 0)) for op in ("write_all", "read_all")) // int(ranks)
        served += sum(int(s.get("calls", 0)) for name, s in (f.get("strategies") or {}).items() if name == strategy)
        for reason, n in (f.get("passthrough_reasons") or {}).items():
            reasons[reason] = reasons.get(reason, 0) + (n if isinstance(n, int) else 1)
    if strategy == "passthrough":
        served = calls - sum(int(s.get("calls", 0)) for f in stats.get("files", [])
                             for s in (f.get("strategies") or {}).values())
    if served >= calls and not (reasons and strategy != "passthrough"):
        return None
    why = "; ".join(f"{n} x {reason}" for reason, n in sorted(reasons.items()))
    return f"strategy {strategy}: served {served} of {calls} collective calls" + (f" (passed through: {why})"
                                                                                 if why else "")


def _cut(result: dict, strategy: str) -> str | None:
    """A note when the budget left rows of the strategy with fewer repeats than the design's, else None."""
    cut, rows = int(result.get("rows_cut") or 0), len(result.get("rows") or [])
    if not cut:
        return None
    return (f"strategy {strategy}: {cut} of {rows} rows have fewer than {result.get('repeats')} repeats (its "
            f"{result.get('seconds_budget', 0):g} s budget: its slowest signatures were repeated less)")


def runtime_for(kernel: str | os.PathLike) -> Path:
    """The libiotame.so a kernel runs under: $IOTAME_LIB when set, else the one built beside the kernel (a build
    tree's runtime/, as build-openmpi/ has: the runtime built against the kernel's MPI), else the one paths.py
    finds."""
    if os.environ.get(ENV_LIB):
        return require_lib()
    beside = Path(kernel).resolve().parent.parent / "runtime" / "libiotame.so"
    return beside if Path(kernel).parent.name == "kernels" and beside.is_file() else require_lib()


def _run(job: Job, strategy: str, config: dict, workdir: Path, lib: Path,
         timeout: float) -> tuple[dict | None, list[str]]:
    """(sigprobe's result, notes); a run past `timeout` gives no result and a note (PROBE_TIMEOUT's reason)."""
    path = workdir / f"{strategy}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    try:
        r = run_command(list(job.argv), config=path, capture=True, timeout=timeout, lib=lib)
    except OSError as e:
        raise IotameError(f"calibrate: cannot start {job.argv[0]}: {e.strerror or e}") from None
    if r.timed_out:
        return None, [f"strategy {strategy}: not measured: sigprobe did not finish in {timeout:g} s (the first "
                      f"repeat of every signature alone takes longer): {' '.join(job.argv)}"]
    result = _parse(r.stdout)
    if r.returncode != 0 or result is None:
        lines = (r.stderr or "").strip().splitlines()
        own = [line for line in lines if line.startswith("iotame-kernel ")]   # the kernel's reason, before the
        tail = " | ".join(own[:3] or lines[-3:])                               # launcher's words on MPI_Abort
        raise IotameError(f"calibrate: strategy {strategy}: sigprobe failed (exit status {r.exit_status}): "
                          f"{' '.join(job.argv)}: {tail}")
    if result.get("nprocs") != job.nprocs:
        raise IotameError(f"calibrate: strategy {strategy}: sigprobe ran as {result.get('nprocs')} process(es), "
                          f"not {job.nprocs}")
    if result.get("verified") is not True:
        raise IotameError(f"calibrate: strategy {strategy}: the data read back differ from what was written "
                          f"({result.get('mismatches')} bad words): {json.dumps(result.get('errors'))[:300]}")
    return result, [note for note in (_served(r.stats, strategy), _cut(result, strategy)) if note]


def measure_strategies(directory: str | os.PathLike, job: Job | None, design: Design = FULL_DESIGN,
                       layout: dict | None = None, emulate: dict | None = None,
                       on_step: Callable[[str], None] | None = None, strategies: Sequence[str] = STRATEGIES,
                       timeout: float = PROBE_TIMEOUT) -> tuple[dict | None, list[str]]:
    """(the `strategies` section, notes): sigprobe on a file in `directory`, launched as `job` launches the network
    probe (None: nothing asked for processes; the section is None with a note), once per strategy. `layout` is the
    profile's filesystem section (targets, stripe_unit), `emulate` an emulate section to run under (its own state
    file is made and removed here). Each run has the design's time budget; one past `timeout` is left out with a
    note (no strategy measured: no section). IotameError when a run fails or reads back wrong data."""
    if job is None:
        return None, [NOT_ASKED_NOTE]
    if shutil.which(job.argv[0]) is None:
        return None, [f"strategies not measured: {job.argv[0]} not found (no MPI launcher available)"]
    scratch = Path(directory).resolve() / f".iotame-strategies-{os.getpid()}"
    probe = with_probe(job, design.argv(scratch))
    lib = runtime_for(probe.argv[probe.argv.index("sigprobe") - 1])
    on_step = on_step or (lambda _: None)
    started = time.time()
    measured, notes = [], []
    with tempfile.TemporaryDirectory(prefix="iotame-strategies-") as tmp:
        workdir = Path(tmp)
        section = None
        if emulate is not None:
            from .emulated import state_dir
            state = state_dir() / f"iotame-calibrate-{os.getpid()}-strategies.state"
            section = dict(emulate, state=str(state))
        try:
            scratch.mkdir(exist_ok=True)
        except OSError as e:
            raise IotameError(f"calibrate: cannot create {scratch}: {e.strerror or e}") from None
        try:
            for i, strategy in enumerate(strategies):
                budget = f", budget {design.seconds:g} s" if design.seconds > 0 else ""
                on_step(f"strategies: {strategy} ({i + 1} of {len(strategies)}, {job.nprocs} processes{budget})")
                result, run_notes = _run(probe, strategy, strategy_config(strategy, section), workdir, lib,
                                         timeout)
                if result is not None:
                    measured += strategy_rows(result, strategy, layout or {})
                notes += run_notes
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            if section is not None:
                Path(section["state"]).unlink(missing_ok=True)
    seconds = time.time() - started
    if not measured:
        return None, notes
    budget = (f"; after each signature's first, repeats only within its share of a {design.seconds:g} s budget "
              f"per strategy" if design.seconds > 0 else "")
    method = (f"iotame-kernel sigprobe under libiotame.so, each strategy fixed (collective.strategy S), "
              f"{job.nprocs} processes: per signature a fresh file, MPI_File_write_all x calls timed from a barrier "
              f"to the slowest rank's return of the last (pattern fill excluded), sync and close untimed, the "
              f"file's pages evicted (posix_fadvise DONTNEED), MPI_File_read_all x calls timed alike; seconds per "
              f"call, one per repeat (up to {design.repeats}{budget}); open_seconds the slowest rank's "
              f"MPI_File_open, median")
    return {"method": method, "seconds": round(seconds, 1), "measured": measured}, notes


def median_mbs(row: dict) -> float:
    """MB/s of a row's median call."""
    return row["bytes"] / max(statistics.median(row["seconds"]), 1e-12) / 1e6
