#!/usr/bin/env python3
"""Asynchronous staging measured side by side (runtime/src/stage; Isaila et al., "Latency Hiding File
I/O for Blue Gene Systems", CCGrid 2009, Figures 3-6): the same job without staging and with it, in turns within
each repeat, medians over the repeats.

  phases     the phases kernel (compute phases alternating with I/O phases in which every process writes its
             records, one file shared by all): record sizes x process counts x compute (0, and longer than the
             synchronous I/O of a phase: 1.5 x its median, measured first) on each device. Without staging the job
             runs as the user would run it (no preload on the real file system; on an emulated device the runtime
             with the device and nothing else). Reports the I/O time the application sees, the close time (where
             staging's final flush goes) and the job's total, against the targets: with compute >= I/O, staged I/O
             <= 10 % of the synchronous I/O and total <= 1.1 x (compute + close); with compute 0, throughput (bytes
             over I/O + close) >= 0.9 x without staging.
  btio       BT-IO (collective dumps between solver steps that sleep), as the paper's Figures 7-8: write time
             (through the kernel's final sync) and total time under the library's own collective I/O, the runtime's
             two_phase and view_based strategies, and staging.
  noncontig  Noncontig with 64-byte elements, collective writes, 2 ranks: ROMIO's own collective I/O under a grid
             of its hints (the best one is the reference) against staged writes that the flusher merges.

Writes are timed as the kernels time them (phases: no sync, as the paper's application; btio and noncontig through
MPI_File_sync); the page cache is flushed (sync) between runs; free page reporting is held off as by every bench.
MPICH busy-polls: more than 2 processes use the Open MPI build (--mpi openmpi, mpirun --oversubscribe).

Usage: bench/staging.py phases [--mpi mpich] [--np 1,2] [--devices none,disk] [--sizes 1k,16k,64k,1m]
                               [--phase-mb 4] [--phases 3] [--repeat 3] [--json F] [--out F.md]
       bench/staging.py btio|noncontig [--repeat 5] ...
       bench/staging.py --table F.json
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iotame.bench.memory import steady_memory

ROOT = Path(__file__).resolve().parent.parent
BUILDS = {"mpich": ROOT / "build", "openmpi": ROOT / "build-openmpi"}
TIMEOUT = 1800
KiB = 1024
NONCONTIG_HINTS = [{"romio_cb_write": cb, "romio_ds_write": ds, "cb_buffer_size": buf}
                   for cb in ("enable", "disable") for ds in ("enable", "disable") for buf in (4 << 20, 16 << 20)]


def size_of(text):
    units = {"k": KiB, "m": KiB * KiB}
    return int(float(text[:-1]) * units[text[-1].lower()]) if text[-1].lower() in units else int(text)


def runtime_config(device, tmp, staged, hints=None, strategy=None):
    """The configuration of a run, or None: no preload at all (the real file system without staging)."""
    d = {}
    if device != "none":
        d["emulate"] = {"device": device, "state": str(tmp / "device.state")}
    if staged:
        d["staging"] = {"enabled": True}
    if hints:
        d["mpiio_hints"] = hints
    if strategy:
        d["collective"] = {"strategy": strategy}
    return {"version": 1, "defaults": d} if d else None


def run(a, np_, kernel_args, config, tmp):
    """One job in a fresh directory; the kernel's result and the statistics (None without preload)."""
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    launcher = (["mpirun.openmpi", "--oversubscribe", "-n", str(np_)] if a.mpi == "openmpi"
                else ["mpiexec", "-n", str(np_)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    if a.mpi == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none")
    stats = tmp / "stats.json"
    if config:
        (tmp / "config.json").write_text(json.dumps(config))
        env.update(LD_PRELOAD=str(tmp / "libiotame.so"), IOTAME_CONFIG=str(tmp / "config.json"),
                   IOTAME_STATS=str(stats))
    os.sync()
    argv = launcher + [str(BUILDS[a.mpi] / "kernels" / "iotame-kernel"), *map(str, kernel_args)]
    p = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}:\n{p.stderr[-1500:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if res.get("verified") is not True:
        raise RuntimeError(f"{' '.join(argv)}: data did not verify")
    st = json.loads(stats.read_text()) if config else None
    shutil.rmtree(work, ignore_errors=True)
    return res, st


def stage_numbers(st):
    s = ((st or {}).get("modules") or {}).get("stage")
    if not s:
        return None
    f = s["flusher"]
    return {"flush_seconds": f["flush_seconds"], "overlapped_seconds": f["overlapped_seconds"],
            "extents_in": f["extents_in"], "writes_out": f["writes_out"], "blocked_seconds": s["blocked_seconds"]}


# ---- the experiments ----

def phases(a, tmp, data):
    for np_ in map(int, a.np.split(",")):
        for device in a.devices.split(","):
            for size in a.sizes.split(","):
                rs = size_of(size)
                records = max(1, int(a.phase_mb * KiB * KiB) // rs)
                base = ["phases", "--phases", a.phases, "--records", records, "--record-size", rs,
                        "--compute-mode", "sleep", "--layout", a.layout, "--file", "p.dat"]
                calib = [run(a, np_, base, runtime_config(device, tmp, False), tmp)[0]["application"]
                         for _ in range(3)]
                io_phase = statistics.median(statistics.median(c["io_phase_seconds"]) for c in calib)
                for compute in (0.0, round(max(0.02, 1.5 * io_phase), 4)):
                    for rep in range(a.repeat):
                        for staged in ((False, True) if rep % 2 == 0 else (True, False)):
                            res, st = run(a, np_, base + ["--compute", compute],
                                          runtime_config(device, tmp, staged), tmp)
                            app = res["application"]
                            r = {"experiment": "phases", "np": np_, "device": device, "record": rs,
                                 "compute_per_phase": compute, "staged": staged, **{k: app[k] for k in (
                                     "bytes", "io_seconds", "close_seconds", "compute_seconds", "wall_seconds")},
                                 "stage": stage_numbers(st)}
                            data["runs"].append(r)
                            print(f"phases np {np_} {device} {size} compute {compute}: "
                                  f"{'staged' if staged else 'sync  '} io {app['io_seconds']:.4f} close "
                                  f"{app['close_seconds']:.4f} wall {app['wall_seconds']:.4f}", file=sys.stderr,
                                  flush=True)
                            save(a, data)


BTIO_CONFIGS = ("library", "two_phase", "view_based", "staged")


def btio(a, tmp, data):
    args = ["btio", "--grid", a.grid, "--steps", a.steps, "--write-interval", 1, "--compute-seconds", a.compute,
            "--file", "bt.dat"]
    for np_ in map(int, a.np.split(",")):
        for device in a.devices.split(","):
            for rep in range(a.repeat):
                for i in range(len(BTIO_CONFIGS)):
                    name = BTIO_CONFIGS[(i + rep) % len(BTIO_CONFIGS)]
                    strategy = name if name in ("two_phase", "view_based") else None
                    config = runtime_config(device, tmp, name == "staged", strategy=strategy)
                    t0 = time.monotonic()
                    res, st = run(a, np_, args, config, tmp)
                    total = time.monotonic() - t0
                    w = next(p for p in res["phases"] if p["name"] == "write")
                    data["runs"].append({"experiment": "btio", "np": np_, "device": device, "config": name,
                                         "write_seconds": w["seconds"], "total_seconds": total, "bytes": w["bytes"],
                                         "stage": stage_numbers(st)})
                    print(f"btio np {np_} {device} {name}: write {w['seconds']:.3f} s, total {total:.2f} s",
                          file=sys.stderr, flush=True)
                    save(a, data)


def noncontig(a, tmp, data):
    args = ["noncontig", "--elmtcount", 16, "--veclen", a.veclen, "--loops", a.loops, "--collective",
            "--file", "nc.dat"]
    configs = [("hints", h) for h in NONCONTIG_HINTS] + [("staged", None)]
    for device in a.devices.split(","):
        for rep in range(a.repeat):
            for i in range(len(configs)):
                kind, hints = configs[(i + rep) % len(configs)]
                res, st = run(a, 2, args, runtime_config(device, tmp, kind == "staged", hints), tmp)
                w = next(p for p in res["phases"] if p["name"] == "write")
                data["runs"].append({"experiment": "noncontig", "np": 2, "device": device, "kind": kind,
                                     "hints": hints, "mbs": w["mbs"], "stage": stage_numbers(st)})
                print(f"noncontig {device} {kind} {hints or ''}: {w['mbs']:.1f} MB/s", file=sys.stderr, flush=True)
                save(a, data)


def save(a, data):
    if a.json:
        Path(a.json).write_text(json.dumps(data))


# ---- the report ----

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def report(data):
    runs, out = data["runs"], [f"Measured {data['date']}, {data['mpi']}; medians of {data['repeat']} repeats."]
    ph = [r for r in runs if r["experiment"] == "phases"]
    if ph:
        out += ["", "| device | np | record | compute/phase s | sync I/O s | staged I/O s | staged/sync I/O | "
                    "staged close s | staged total s | total / (compute + close) | throughput staged/sync |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        keys = sorted({(r["device"], r["np"], r["record"], r["compute_per_phase"]) for r in ph})
        for key in keys:
            rs = [r for r in ph if (r["device"], r["np"], r["record"], r["compute_per_phase"]) == key]
            s = [r for r in rs if r["staged"]]
            y = [r for r in rs if not r["staged"]]
            io_s, io_y = med([r["io_seconds"] for r in s]), med([r["io_seconds"] for r in y])
            close_s, wall_s = med([r["close_seconds"] for r in s]), med([r["wall_seconds"] for r in s])
            comp = med([r["compute_seconds"] for r in s])
            tput = med([r["bytes"] / (r["io_seconds"] + r["close_seconds"]) for r in s]) / \
                med([r["bytes"] / (r["io_seconds"] + r["close_seconds"]) for r in y])
            rec = f"{key[2] // KiB} KiB" if key[2] < KiB * KiB else f"{key[2] // KiB // KiB} MiB"
            out.append(f"| {key[0]} | {key[1]} | {rec} | {key[3]:.3f} | {io_y:.4f} | {io_s:.4f} | "
                       f"{io_s / io_y:.3f} | {close_s:.4f} | {wall_s:.3f} | "
                       f"{wall_s / (comp + close_s) if comp else float('nan'):.3f} | {tput:.2f} |")
    bt = [r for r in runs if r["experiment"] == "btio"]
    if bt:
        out += ["", "| device | np | configuration | write s | write / library's | job s (launch included) |",
                "| --- | ---: | --- | ---: | ---: | ---: |"]
        for key in sorted({(r["device"], r["np"]) for r in bt}):
            rs = [r for r in bt if (r["device"], r["np"]) == key]
            lib = med([r["write_seconds"] for r in rs if r["config"] == "library"])
            for name in BTIO_CONFIGS:
                w = med([r["write_seconds"] for r in rs if r["config"] == name])
                t = med([r["total_seconds"] for r in rs if r["config"] == name])
                out.append(f"| {key[0]} | {key[1]} | {name} | {w:.3f} | {w / lib:.3f} | {t:.2f} |")
    nc = [r for r in runs if r["experiment"] == "noncontig"]
    if nc:
        out += ["", "| device | configuration | write MB/s (median) |", "| --- | --- | ---: |"]
        for device in sorted({r["device"] for r in nc}):
            rs = [r for r in nc if r["device"] == device]
            by = {}
            for r in rs:
                name = "staged" if r["kind"] == "staged" else ", ".join(f"{k}={v}" for k, v in r["hints"].items())
                by.setdefault(name, []).append(r["mbs"])
            for name, v in sorted(by.items(), key=lambda kv: -med(kv[1])):
                out.append(f"| {device} | {name} | {med(v):.1f} |")
            best = max(med(v) for n, v in by.items() if n != "staged")
            out.append(f"| {device} | **staged / best ROMIO hints** | **{med(by['staged']) / best:.2f}** |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment", nargs="?", choices=("phases", "btio", "noncontig"))
    ap.add_argument("--mpi", choices=sorted(BUILDS), default="mpich")
    ap.add_argument("--np", default="1,2")
    ap.add_argument("--devices", default="none,disk")
    ap.add_argument("--sizes", default="1k,16k,64k,1m")
    ap.add_argument("--phase-mb", type=float, default=4, dest="phase_mb", help="MiB each process writes per phase")
    ap.add_argument("--phases", type=int, default=3)
    ap.add_argument("--layout", default="contiguous", choices=("contiguous", "interleaved"))
    ap.add_argument("--grid", type=int, default=48)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--compute", type=float, default=0.2, help="btio: seconds per solver step")
    ap.add_argument("--veclen", type=int, default=4096)
    ap.add_argument("--loops", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="where the runs' files go (default: a temporary directory)")
    ap.add_argument("--json", help="write every run here")
    ap.add_argument("--out", help="write the report here (Markdown)")
    ap.add_argument("--table", help="print the report of an earlier --json file")
    a = ap.parse_args()
    if a.table:
        text = report(json.loads(Path(a.table).read_text()))
    else:
        if not a.experiment:
            ap.error("name an experiment (phases, btio, noncontig) or --table")
        data = {"date": time.strftime("%Y-%m-%d %H:%M"), "mpi": a.mpi, "repeat": a.repeat, "args": vars(a),
                "runs": []}
        with tempfile.TemporaryDirectory(dir=a.dir, prefix="bench-staging-") as tmp, steady_memory() as memory:
            tmp = Path(tmp)
            data["memory"] = memory
            shutil.copy2(BUILDS[a.mpi] / "runtime" / "libiotame.so", tmp / "libiotame.so")
            {"phases": phases, "btio": btio, "noncontig": noncontig}[a.experiment](a, tmp, data)
        text = report(data)
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
