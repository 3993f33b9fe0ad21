"""The measurements behind a machine profile, made with fio on files in a scratch directory of the file system
(each point one fio run; the page cache written back and dropped before each, as root), and a numpy copy for the
memory. Writes are timed durable: buffered, with an fsync at the end inside the timed run (fio's end_fsync), as
the tuner's durable objective makes files durable at close. Reads are buffered with the page cache dropped before;
when it cannot be dropped (not root) the profile says that reads came from the page cache."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from .. import __version__
from ..bench.caches import CACHE_MODES, drop_caches, evict
from ..bench.fio import parse_fio_output
from ..errors import IotameError
from ..tune.job import Job
from .emulated import EmulatedStorage, state_dir
from .filesystem import fs_identity
from .network import NOT_ASKED_NOTE as NETWORK_NOTE
from .network import measure_network
from .profile import PROFILE_KIND, PROFILE_VERSION
from .strategies import FULL_DESIGN, QUICK_DESIGN, SKIPPED_NOTE, Design, measure_strategies

__all__ = ["Settings", "FULL", "QUICK", "DEFAULT_STREAMS", "stream_counts", "Calibration", "calibrate",
           "memory_copy_mbs", "dirty_freerun_bytes", "write_back_section", "NETWORK_NOTE"]

KIB, MIB = 1 << 10, 1 << 20
# buffered writes faster than this many times the durable ones are taken as absorbed by write-back
ABSORB_FACTOR = 1.5
# the most concurrent streams measured by default: the processes per node of a typical compute node's job, so that
# the throttle's predicted level (docs/throttle.md) comes from measured points, not from the curve's clamped end
DEFAULT_STREAMS = 16


def stream_counts(maximum: int = DEFAULT_STREAMS) -> tuple[int, ...]:
    """The stream counts measured up to `maximum`: 1 and every power of two below it, then `maximum` itself."""
    if maximum < 1:
        raise ValueError(f"streams: expected a count >= 1, got {maximum}")
    counts = [1]
    while counts[-1] * 2 < maximum:
        counts.append(counts[-1] * 2)
    return tuple(counts + ([maximum] if maximum > 1 else []))


@dataclass(frozen=True)
class Settings:
    """How much to measure: request sizes, the data file's size, at most `runtime` s and `max_ios` requests per
    scattered point, bytes per stream, bytes of the buffered write-back write, bytes of the memory copy."""
    sizes: tuple[int, ...]
    file_bytes: int
    runtime: int
    max_ios: int
    streams: tuple[int, ...]
    stream_bytes: int
    write_back_bytes: int
    memory_bytes: int


FULL = Settings(sizes=(4 * KIB, 64 * KIB, MIB, 16 * MIB), file_bytes=256 * MIB, runtime=10, max_ios=2048,
                streams=stream_counts(), stream_bytes=128 * MIB, write_back_bytes=256 * MIB, memory_bytes=256 * MIB)
QUICK = Settings(sizes=(4 * KIB, MIB), file_bytes=8 * MIB, runtime=2, max_ios=256,
                 streams=stream_counts(), stream_bytes=4 * MIB, write_back_bytes=16 * MIB, memory_bytes=32 * MIB)


def memory_copy_mbs(nbytes: int = 64 * MIB, repeat: int = 5) -> float:
    """Bytes copied per second (each byte counted once, read and written), in MB/s: the best of `repeat` numpy
    copies of `nbytes` between two arrays already touched."""
    import numpy as np
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes, dtype=np.uint8)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return nbytes / max(best, 1e-9) / 1e6


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def dirty_freerun_bytes(vm: str = "/proc/sys/vm", available: int | None = None) -> int | None:
    """The dirty bytes a writer may leave before the kernel throttles it (the midpoint between the background and
    the hard dirty threshold, where balance_dirty_pages starts to slow writers), from vm.dirty_bytes or
    vm.dirty_ratio of the available memory (and the background ones alike). None when unknown."""
    available = _meminfo_available() if available is None else available

    def threshold(name: str) -> int | None:
        nbytes = _read_int(f"{vm}/dirty_{name}bytes")
        if nbytes:
            return nbytes
        ratio = _read_int(f"{vm}/dirty_{name}ratio")
        return None if ratio is None or available is None else available * ratio // 100

    hard, background = threshold(""), threshold("background_")
    if hard is None or background is None:
        return None
    return (hard + min(background, hard)) // 2


def write_back_section(buffered_mbs: float, durable_mbs: float, written: int, freerun: int | None) -> dict:
    """The `write_back` section: nothing absorbed when buffered writes go no faster than ABSORB_FACTOR x durable
    ones (synchronous writes); else the kernel's free-running dirty bytes (at least what the buffered write put
    down at memory speed) at the buffered rate."""
    if buffered_mbs <= ABSORB_FACTOR * durable_mbs:
        return {"absorbed_bytes": 0, "absorbed_mbs": 0.0, "buffered_mbs": round(buffered_mbs, 1),
                "durable_mbs": round(durable_mbs, 1), "method": "buffered writes no faster than durable ones"}
    absorbed = max(freerun or 0, written)
    how = "vm.dirty_* thresholds (the free-running dirty bytes)" if freerun else "bytes of the buffered write"
    return {"absorbed_bytes": int(absorbed), "absorbed_mbs": round(buffered_mbs, 1),
            "buffered_mbs": round(buffered_mbs, 1), "durable_mbs": round(durable_mbs, 1), "method": how}


class Calibration:
    """One calibration of `directory`: the fio points, in a scratch directory removed at the end."""

    def __init__(self, directory: str | os.PathLike, settings: Settings = FULL, program: str = "fio",
                 on_step: Callable[[str], None] | None = None, drop: str | bool = "files", env: dict | None = None):
        self.env = env  # fio's environment (None: this process's), e.g. EmulatedStorage.env
        self.directory = Path(directory).resolve()
        self.settings = settings
        self.on_step = on_step or (lambda _: None)
        self.fio = shutil.which(program)
        if self.fio is None:
            raise IotameError(f"calibrate: {program} not found (install the Debian package fio; make setup does)")
        if not self.directory.is_dir():
            raise IotameError(f"calibrate: {self.directory} is not a directory")
        self.scratch = self.directory / f".iotame-calibrate-{os.getpid()}"
        self.cache_mode = {True: "files", False: "off"}.get(drop, drop) if isinstance(drop, bool) else drop
        if self.cache_mode not in CACHE_MODES:
            raise IotameError(f"calibrate: page cache mode {drop!r}: expected one of {', '.join(CACHE_MODES)}")
        self.drop_reason: str | None = None if self.cache_mode != "off" else "not asked to (--cache off)"
        self.cache_drops = 0
        self.fio_runs = 0

    def _drop(self) -> None:
        """Keeps the next read off the page cache: "files" writes back and evicts the scratch files calibration
        wrote (other processes' cached data stays); "machine" drops the machine's clean caches when possible (the
        first failure is kept); "off" only writes back the scratch files."""
        if self.cache_mode == "files":
            self.cache_drops += evict([self.scratch]).files > 0
            return
        if self.drop_reason is not None:
            evict([self.scratch])
            return
        self.drop_reason = drop_caches()
        self.cache_drops += self.drop_reason is None

    def _fio(self, argv: list[str]) -> dict:
        """Runs fio with `argv` after the common options; the summed bytes, seconds and MB/s of its jobs."""
        full = [self.fio, "--output-format=json", "--ioengine=psync", "--direct=0", "--fallocate=none"] + argv
        limit = 3 * self.settings.runtime + 120
        try:
            p = subprocess.run(full, capture_output=True, text=True, errors="replace", timeout=limit, env=self.env)
        except subprocess.TimeoutExpired:
            raise IotameError(f"calibrate: fio did not finish in {limit} s: {' '.join(full)}") from None
        self.fio_runs += 1
        start = p.stdout.find("{")
        if p.returncode != 0 or start < 0:
            tail = " | ".join(p.stderr.strip().splitlines()[-3:])
            raise IotameError(f"calibrate: fio failed (exit status {p.returncode}): {tail}")
        rows = parse_fio_output(json.loads(p.stdout[start:]))
        failed = [r["name"] for r in rows if r["error"]]
        if failed or not rows:
            raise IotameError(f"calibrate: fio job(s) {', '.join(failed) or '?'} failed: {p.stderr.strip()[-300:]}")
        nbytes = sum(r["bytes"] for r in rows)
        seconds = max(r["seconds"] for r in rows)
        mbs = sum(r["mbs"] for r in rows)
        if nbytes <= 0:
            raise IotameError(f"calibrate: fio moved no bytes: {' '.join(full)}")
        if mbs <= 0:
            raise IotameError(f"calibrate: fio moved {nbytes:,} bytes too fast for its millisecond clock "
                              f"({' '.join(full)}); calibrate without --quick")
        return {"bytes": nbytes, "seconds": seconds, "mbs": mbs}

    def _file_options(self, name: str = "data") -> list[str]:
        return [f"--name={name}", "--filename=" + str(self.scratch / name).replace(":", "\\:"),
                f"--size={self.settings.file_bytes}"]

    def layout(self) -> None:
        """The data file, written whole and made durable (untimed), so that reads and overwrites find real blocks."""
        self.on_step("laying out the data file")
        try:
            self.scratch.mkdir(exist_ok=True)
        except OSError as e:
            raise IotameError(f"calibrate: cannot create {self.scratch}: {e.strerror or e}") from None
        self._fio(self._file_options() + ["--rw=write", "--bs=1m", "--end_fsync=1"])

    def point(self, direction: str, pattern: str, request: int) -> float:
        """MB/s of one point: `direction` write (durable) or read (page cache dropped), sequential or scattered
        requests of `request` bytes over the data file."""
        s = self.settings
        self.on_step(f"{direction} {pattern} {request:,} B")
        rw = ("" if pattern == "sequential" else "rand") + direction
        argv = self._file_options() + [f"--rw={rw}", f"--bs={request}", f"--runtime={s.runtime}"]
        argv += ["--end_fsync=1"] if direction == "write" else []
        argv += [f"--number_ios={s.max_ios}"] if pattern == "scattered" else []
        self._drop()
        return self._fio(argv)["mbs"]

    def streams(self, direction: str, count: int) -> float:
        """Aggregate MB/s of `count` concurrent processes, each on its own file with sequential 1 MiB requests
        (fio numjobs); writes durable, reads after the files were written and the cache dropped."""
        s = self.settings
        self.on_step(f"{count} stream(s) {direction}")
        argv = [f"--name=streams{count}", "--directory=" + str(self.scratch).replace(":", "\\:"),
                f"--numjobs={count}", "--group_reporting", f"--size={s.stream_bytes}", f"--rw={direction}",
                "--bs=1m", f"--runtime={s.runtime}"]
        argv += ["--end_fsync=1"] if direction == "write" else []
        self._drop()
        return self._fio(argv)["mbs"]

    def buffered_write(self) -> float:
        """MB/s of a sequential 1 MiB buffered write of write_back_bytes to a new file, without fsync."""
        self.on_step("buffered write (write-back)")
        self._drop()
        name = "write-back"
        argv = [f"--name={name}", "--filename=" + str(self.scratch / name).replace(":", "\\:"),
                f"--size={self.settings.write_back_bytes}", "--rw=write", "--bs=1m"]
        mbs = self._fio(argv)["mbs"]
        os.sync()
        (self.scratch / name).unlink(missing_ok=True)
        return mbs

    def storage(self) -> dict:
        """The `storage` section."""
        s = self.settings
        curves = {d: {p: [] for p in ("sequential", "scattered")} for d in ("write", "read")}
        self.layout()
        for direction in ("write", "read"):
            for pattern in ("sequential", "scattered"):
                for request in s.sizes:
                    curves[direction][pattern].append([request, round(self.point(direction, pattern, request), 2)])
        streams = {"write": [], "read": []}
        for count in s.streams:
            for direction in ("write", "read"):
                streams[direction].append([count, round(self.streams(direction, count), 2)])
            for path in self.scratch.glob(f"streams{count}.*"):
                path.unlink()
        durable = max(mbs for _, mbs in curves["write"]["sequential"])
        write_back = write_back_section(self.buffered_write(), durable, s.write_back_bytes, dirty_freerun_bytes())
        reads_from = "storage" if self.drop_reason is None else "page cache"
        section = {"write": curves["write"], "read": curves["read"], "streams": streams, "write_back": write_back,
                   "reads_from": reads_from}
        if self.drop_reason is not None:
            section["reads_note"] = f"page cache not dropped ({self.drop_reason}): reads came from the page cache"
        return section

    def cleanup(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


def _reads_text(mode: str, reads_from: str) -> str:
    """How the reads were measured, for the profile's `measurement.reads`."""
    if reads_from != "storage":
        return "buffered, from the page cache"
    if mode == "files":
        return "buffered, the scratch files evicted from the page cache before each point (posix_fadvise DONTNEED)"
    return "buffered, the machine's page cache dropped before each point"


def calibrate(directory: str | os.PathLike, settings: Settings = FULL, quick: bool = False,
              on_step: Callable[[str], None] | None = None, drop: str | bool = "files", network_job: Job | None = None,
              emulate: str | os.PathLike | None = None, strategies: bool = True,
              design: Design | None = None) -> dict:
    """Measures a machine profile for the file system holding `directory`: the network first (with
    `network_job`, see network.network_job; without one the network is null with a note), then storage and
    memory, then, with `strategies`, the collective strategies on `design` (default QUICK_DESIGN with `quick`,
    else FULL_DESIGN) through the network's launcher (strategies.py; without one there is no `strategies` section,
    and a note), fitted when fit.py is there. With `emulate` (a configuration with defaults.emulate) the storage is
    one target of that emulated storage, the strategies run on all of it, and the profile's layout is the
    configuration's (emulated.py)."""
    started = time.time()
    emulated = EmulatedStorage.from_config(emulate, state_dir()) if emulate is not None else None
    if design is None:
        design = QUICK_DESIGN if quick else FULL_DESIGN
    try:
        return _calibrate(directory, settings, quick, on_step, drop, network_job, emulated, started,
                          design if strategies else None)
    finally:
        if emulated is not None:
            emulated.cleanup()


def _fit(profile: dict) -> tuple[dict | None, str | None]:
    """(the fit of the measured strategies, note): fit.fit_strategies(profile); a fit that fails leaves the
    measurements unfitted, with a note (`iotame calibrate --refit` tries again)."""
    from .fit import fit_strategies     # numpy: imported when a calibration needs it
    try:
        return fit_strategies(profile), None
    except Exception as e:      # the minutes of measurements are kept whatever the fit does
        return None, f"strategies not fitted: {type(e).__name__}: {e}"


def _calibrate(directory: str | os.PathLike, settings: Settings, quick: bool,
               on_step: Callable[[str], None] | None, drop: str | bool, network_job: Job | None,
               emulated: EmulatedStorage | None, started: float, design: Design | None) -> dict:
    cal = Calibration(directory, settings, on_step=on_step, drop=drop, env=emulated.env if emulated else None)
    identity = fs_identity(cal.directory)
    if emulated is not None:
        identity.update(emulated.layout())
    if on_step and network_job is not None:
        on_step(f"network ({network_job.nprocs} processes)")
    network, nodes, network_note = measure_network(network_job)
    notes = [network_note] if network_note else []
    if identity["mount_type"] in ("tmpfs", "ramfs") and emulated is None:
        notes.append(f"{cal.directory} is on {identity['mount_type']}: storage figures are memory speeds")
    try:
        storage = cal.storage()
    finally:
        cal.cleanup()
    if on_step:
        on_step("memory copy")
    memory = {"copy_mbs": round(memory_copy_mbs(settings.memory_bytes), 1), "bytes": settings.memory_bytes,
              "method": "numpy copyto between two touched arrays, best of 5 (bytes copied per second)"}
    if storage.get("reads_note"):
        notes.append(storage["reads_note"])
    if emulated is not None:
        notes.append(f"storage EMULATED ({emulated.source}): one target of the model measured, not this "
                     f"machine's storage")
    strategies = None
    if design is None:
        notes.append(SKIPPED_NOTE)
    elif network_job is not None and network is None:
        notes.append("strategies not measured: the network probe could not run (" + network_note + ")")
    else:
        strategies, strategy_notes = measure_strategies(cal.directory, network_job, design, layout=identity,
                                                        emulate=emulated.section if emulated else None,
                                                        on_step=on_step)
        notes += strategy_notes
    profile = {"version": PROFILE_VERSION, "kind": PROFILE_KIND,
               "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": os.uname().nodename, "iotame": __version__,
               "filesystem": identity,
               "nodes": nodes or {"count": 1, "processes_per_node": 1},
               "storage": storage, "memory": memory, "network": network, "notes": notes,
               **({"strategies": strategies} if strategies is not None else {}),
               "measurement": {"quick": quick, "settings": asdict(settings), "fio_runs": cal.fio_runs,
                               "cache_drops": cal.cache_drops, "seconds": round(time.time() - started, 1),
                               "writes": "buffered, fsync at the end inside the timed run (durable)",
                               "reads": _reads_text(cal.cache_mode, storage["reads_from"])}}
    if emulated is not None:
        profile["emulated"] = emulated.section
    if strategies is not None:
        fit, note = _fit(profile)
        if fit is not None:
            strategies["fit"] = fit
        if note:
            notes.append(note)
    return profile
