"""The device's limit on a directory, measured with fio and O_DIRECT (no page cache): sequential 1 MiB writes,
sequential 1 MiB reads and random 4 KiB reads on one file, one job after the other.

Stored as `fio.json` beside benchmark results, where plots find it and draw each figure as a line:
{"tool": "fio", "fio_version", "time", "dir", "fstype", "size", "runtime", "command",
 "results": [{"name", "label", "rw", "bs", "mbs", "iops", "bytes", "seconds"}], "raw": fio's own JSON}.
MB is 10^6 bytes.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from ..errors import IotameError

__all__ = ["FIO_JOBS", "FIO_FILE", "fio_command", "parse_fio_output", "run_fio", "save_fio", "load_fio",
           "probe_direct", "fs_type"]

FIO_FILE = "fio.json"
# (job name, fio rw, block size, label for tables and plots)
FIO_JOBS = (("seq-write-1m", "write", "1m", "seq write 1 MiB"),
            ("seq-read-1m", "read", "1m", "seq read 1 MiB"),
            ("rand-read-4k", "randread", "4k", "rand read 4 KiB"))
_DATA = ".iotame-fio.tmp"


def fs_type(path: str | Path) -> str | None:
    """The file system type of the mount holding `path` (from /proc/mounts), or None."""
    target = os.path.realpath(path)
    best, kind = "", None
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount = fields[1].replace("\\040", " ")
                inside = target == mount or target.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, fields[2]
    except OSError:
        return None
    return kind


def probe_direct(directory: str | Path) -> str | None:
    """None when a file in `directory` can be opened with O_DIRECT, else why not."""
    path = Path(directory) / ".iotame-odirect-probe"
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC | getattr(os, "O_DIRECT", 0), 0o600)
    except OSError as e:
        if e.errno == errno.EINVAL:
            return f"{directory} ({fs_type(directory) or 'unknown file system'}) does not support O_DIRECT"
        return f"cannot create a file in {directory}: {e.strerror}"
    os.close(fd)
    path.unlink(missing_ok=True)
    return None


def fio_command(directory: str | Path, size: int, runtime: int, program: str = "fio") -> list[str]:
    """fio's command line: global options, then one job per FIO_JOBS entry, each waiting for the previous."""
    filename = str(Path(directory) / _DATA).replace(":", "\\:")      # fio separates file names with ':'
    argv = [program, "--output-format=json", "--direct=1", "--ioengine=psync", f"--filename={filename}",
            f"--size={int(size)}", f"--runtime={int(runtime)}"]
    for i, (name, rw, bs, _) in enumerate(FIO_JOBS):
        argv += [f"--name={name}", f"--rw={rw}", f"--bs={bs}"]
        argv += ["--end_fsync=1"] if rw == "write" else []
        argv += ["--stonewall"] if i else []
    return argv


def parse_fio_output(raw: dict) -> list[dict]:
    """One row per job of fio's JSON output: name, label, rw, bs, mbs, iops, bytes, seconds."""
    labels = {name: label for name, _, _, label in FIO_JOBS}
    rows = []
    for job in raw.get("jobs", []):
        name = job.get("jobname", "?")
        options = job.get("job options", {})
        rw = options.get("rw", "")
        side = job.get("write" if "write" in rw else "read", {})
        rows.append({"name": name, "label": labels.get(name, name), "rw": rw, "bs": options.get("bs"),
                     "mbs": side.get("bw_bytes", 0) / 1e6, "iops": side.get("iops", 0.0),
                     "bytes": side.get("io_bytes", 0), "seconds": side.get("runtime", 0) / 1000,
                     "error": job.get("error", 0)})
    return rows


def _fio_json(stdout: str) -> dict:
    """fio's JSON, skipping anything it printed before it (some versions print notes on stdout)."""
    start = stdout.find("{")
    if start < 0:
        raise ValueError("no JSON in fio's output")
    return json.loads(stdout[start:])


def run_fio(directory: str | Path = ".", size: int = 1 << 30, runtime: int = 10, program: str = "fio") -> dict:
    """Runs the three fio jobs on a file in `directory` and returns what fio.json stores. IotameError when fio
    is missing, O_DIRECT is not supported there, or fio fails."""
    directory = Path(directory).resolve()
    exe = shutil.which(program)
    if exe is None:
        raise IotameError(f"bench fio: {program} not found (install the Debian package fio; make setup does)")
    if not directory.is_dir():
        raise IotameError(f"bench fio: {directory} is not a directory")
    why = probe_direct(directory)
    if why:
        raise IotameError(f"bench fio: {why}; the device limit cannot be measured without the page cache "
                          "there (give --dir on a disk-backed file system)")
    argv = fio_command(directory, size, runtime, exe)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=3 * runtime + 300)
    except subprocess.TimeoutExpired:
        raise IotameError(f"bench fio: fio did not finish in {3 * runtime + 300} s") from None
    finally:
        (directory / _DATA).unlink(missing_ok=True)
    if p.returncode != 0:
        tail = " | ".join(p.stderr.strip().splitlines()[-3:])
        raise IotameError(f"bench fio: fio failed (exit status {p.returncode}): {tail}")
    try:
        raw = _fio_json(p.stdout)
    except ValueError as e:
        raise IotameError(f"bench fio: cannot read fio's output ({e})") from None
    results = parse_fio_output(raw)
    failed = [r["name"] for r in results if r["error"]]
    if failed:
        raise IotameError(f"bench fio: job(s) {', '.join(failed)} failed: {p.stderr.strip()[-300:]}")
    return {"tool": "fio", "fio_version": raw.get("fio version"), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "dir": str(directory), "fstype": fs_type(directory), "size": int(size), "runtime": int(runtime),
            "direct": True, "command": argv, "results": results, "raw": raw}


def save_fio(result: dict, out: str | Path) -> Path:
    """Writes `OUT/fio.json`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / FIO_FILE
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return path


def load_fio(out: str | Path | None) -> dict[str, Any] | None:
    """`OUT/fio.json` when there is a readable one, else None."""
    if out is None:
        return None
    try:
        obj = json.loads((Path(out) / FIO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("results"), list) else None
