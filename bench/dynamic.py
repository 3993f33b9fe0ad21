#!/usr/bin/env python3
"""Orthrus' dynamic experiment (Zhang, Ou, Davis and Jiang, section 3.5): a long Matrix write with a competing load
that appears midway, under the selector (collective.strategy auto) and under each fixed strategy.

One trial is one job: 2 ranks of `iotame-kernel matrix --block-size 1m --depth 4 --iterations N` (8 MiB per
collective call, every call the same signature), writing into a fresh directory after `sync` and dropping the page
cache (root only). The script watches the file grow (its size every 50 ms): the write phase starts when the file
appears; --load-start seconds later the competing load starts, --load-stop seconds later (or when the last call
has written) it gets SIGTERM, and the load window ends when its process has exited. Loads (--load):

  disk     fio writing 4 MiB blocks with an fsync after each (buffered) to a file of its own in the same directory
  cpu      one busy Python loop (a third process on the 2 cores the ranks busy-poll; the default: the only load
           of the ones tried that changed the ranking here, docs/reproductions/orthrus.md)
  net      (with --hosts) TCP traffic both ways over the link of the job's last host, from a host of the
           testbed outside the job (`scripts/testbed up --hosts` one more than the job's): the paper's injected
           inter-node communication
  none     nothing (the schedule still splits the calls into before/during/after)

--hosts N runs the job on the testbed's first N hosts (--per-host ranks each; Open MPI above 2 ranks, or --mpi),
node_local's nodes the hosts; --targets T puts it on T emulated disks striped in --target-unit units (write-behind
off), as bench/collective.py does.

Configurations (--configs): auto is the selector over the five strategies ({"strategy": "auto",
"virtual_node_size": 1}); a fixed strategy X runs as the selector with the single candidate X, so that
collective.trace records every call of it in the same way (MB/s of a call: its bytes over the slowest rank's time
inside it), and virtual_node_size 1 (node_local: every rank its own aggregator). The configurations run
interleaved, --repeat times, the first rotating from repeat to repeat. auto_model (with --profile P, and by
default then) is auto with the machine profile P (collective.profile): the cost model ranks the candidates; its
per-run table adds the model's first choice and departures from the statistics.

Per call: MB/s from the trace, the strategy that served it (auto), and its wall-clock time, the moment the file
reached the end of the call's 8 MiB (interpolated between the size samples; the calls write the file in order).
Calls are assigned to phases before/during/after by that time and the load's actual start and stop. The table:
per phase, the median over all calls of all repeats of the per-call MB/s, and the phase's wall-clock rate (bytes
the file grew over the phase's seconds, median over the repeats); for auto, the examinations visible in the trace
that start in each phase and the strategies that served runs of more than exam_calls + 1 calls. The PNG: the
calls of the first auto run (--plot-run N: the Nth), coloured by strategy, the load window shaded, the fixed strategies' per-phase medians
as lines.

Usage: bench/dynamic.py [--repeat 3] [--load cpu] [--load-start 12] [--load-stop 26] [--iterations 1600]
                        [--configs auto,passthrough,...] [--profile P] [--dir D] [--json F] [--out F.md] [--png F.png] [--small]
       bench/dynamic.py --table F.json [--out F.md] [--png F.png]
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from iotame.bench.caches import evict
from iotame.bench.memory import steady_memory
from iotame.bench.setting import TESTBED, Setting

ROOT = Path(__file__).resolve().parent.parent

STRATEGIES = ["passthrough", "independent", "two_phase", "node_local", "target_aligned", "view_based"]
AUTOS = ["auto", "auto_model"]  # auto_model: auto with the machine profile of --profile (collective.profile)
CONFIGS = AUTOS + STRATEGIES
PHASES = ["before", "during", "after"]
EXAM_CALLS = 3
TRACE = 1000000
POLL = 0.05
TIMEOUT = 900
COLORS = {"passthrough": "tab:blue", "independent": "tab:purple", "two_phase": "tab:orange",
          "node_local": "tab:green", "target_aligned": "tab:red", "view_based": "tab:brown"}

PY_CPU = "while True:\n    pass\n"
# Both directions of one TCP connection kept full: `serve ADDR PORT` accepts one connection, `send ADDR PORT`
# connects (retrying while the server starts); each then sends and receives until killed.
PY_NET = """
import socket, sys, threading, time
mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "serve":
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addr, port))
    listener.listen(1)
    conn = listener.accept()[0]
else:
    for _ in range(100):
        try:
            conn = socket.create_connection((addr, port))
            break
        except OSError:
            time.sleep(0.05)
def drain():
    buf = bytearray(1 << 16)
    while conn.recv_into(buf):
        pass
threading.Thread(target=drain, daemon=True).start()
data = bytes(1 << 16)
while True:
    conn.sendall(data)
"""


def load_command(kind, directory, setting):
    fio = ["fio", "--name=neighbour", f"--filename={directory / 'neighbour.dat'}", "--rw=write", "--bs=4m",
           "--size=4g", "--time_based", "--runtime=3600", "--ioengine=psync", "--output=/dev/null"]
    if kind == "net":
        # the job's last host serves, the first host outside the job sends: that host's link carries it both ways
        tb, inside, outside = str(TESTBED), f"tb{setting.hosts - 1}", f"tb{setting.hosts}"
        addr, port = f"10.213.0.{setting.hosts}", "5201"
        return ["sh", "-c", f'"$1" exec {inside} python3 -c "$0" serve {addr} {port} & '
                            f'"$1" exec {outside} python3 -c "$0" send {addr} {port}; wait', PY_NET, tb]
    return {"disk": fio + ["--fsync=1"], "cpu": [sys.executable, "-c", PY_CPU], "none": None}[kind]


def drop_caches(work):
    """Writes back and evicts the files in `work` (the job's) from the page cache; whether it could. Other
    processes' cached data stays (docs/design/page-cache.md)."""
    return not evict([work]).errors


def config_section(name, setting, state, profile=None):
    c = {"strategy": "auto", "virtual_node_size": "VNODE", "trace": TRACE, "exam_calls": EXAM_CALLS}
    if name == "auto_model":
        c["profile"] = str(Path(profile).resolve())
    elif name not in AUTOS:
        c["candidates"] = [name]
    # node_local: on this machine every rank its own aggregator (2 ranks, virtual nodes of one), else the hosts
    return {"version": 1, "defaults": setting.section({"collective": c}, setting.nprocs, state)}


def stop(proc):
    if proc and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def trial(config, args, tmp, lib, setting):
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    cfg, stats = tmp / f"{config}.json", tmp / "stats.json"
    cfg.write_text(json.dumps(config_section(config, setting, tmp / "device.state", args.profile)))
    if stats.exists():
        stats.unlink()
    cold = drop_caches(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(lib), IOTAME_CONFIG=str(cfg), IOTAME_STATS=str(stats))
    argv = setting.argv(setting.nprocs, setting.kernel, "matrix", "--block-size", args.block_size, "--depth",
                        args.depth, "--iterations", args.iterations, "--file", "matrix.dat")
    per_call = args.block_size * args.depth * setting.nprocs
    total = per_call * args.iterations
    path = work / "matrix.dat"
    loadavg = os.getloadavg()[0]
    load_argv = load_command(args.load, work, setting)
    samples, t0, load, load_on, load_term, load_off, write_end = [], None, None, None, None, None, None
    out, err = tmp / "out.txt", tmp / "err.txt"
    with open(out, "w") as fo, open(err, "w") as fe:
        p = subprocess.Popen(argv, env=env, cwd=work, stdout=fo, stderr=fe, start_new_session=True)
        start = time.monotonic()
        try:
            while p.poll() is None:
                now = time.monotonic()
                if now - start > TIMEOUT:
                    raise RuntimeError(f"no result after {TIMEOUT} s")
                if t0 is None and path.exists():
                    t0 = now
                if t0 is not None and write_end is None:
                    try:
                        size = path.stat().st_size
                    except OSError:
                        size = 0
                    samples.append((now - t0, size))
                    if size >= total:
                        write_end = now - t0
                    if load is None and load_on is None and now - t0 >= args.load_start and write_end is None:
                        load_on = now - t0
                        if load_argv:
                            load = subprocess.Popen(load_argv, cwd=work, stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.DEVNULL, start_new_session=True)
                    if load_on is not None and load_term is None and (now - t0 >= args.load_stop or write_end is not None):
                        load_term = now - t0  # SIGTERM now; the load ends when its process has exited
                        if load and load.poll() is None:
                            os.killpg(load.pid, signal.SIGTERM)
                    if load_term is not None and load_off is None and (load is None or load.poll() is not None):
                        load_off = time.monotonic() - t0
                time.sleep(POLL)
        finally:
            stop(load)
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    if load_on is not None and load_off is None:  # the job ended before the load had exited
        load_off = load_term
    stdout, stderr = out.read_text(), err.read_text()
    if p.returncode != 0:
        raise RuntimeError(f"matrix exited {p.returncode}: {stderr[-1500:]}")
    res = json.loads(stdout.strip().splitlines()[-1])
    if res.get("verified") is not True:
        raise RuntimeError(f"data did not verify: {str(res.get('errors'))[:300]}")
    st = json.loads(stats.read_text())
    shutil.rmtree(work, ignore_errors=True)
    decision, strategies, profile = None, {}, {}
    for f in st.get("files", []):
        profile = profile or {k: f[k] for k in ("profile", "profile_refused") if k in f}
        for d in f.get("decisions") or []:
            if d["signature"]["op"] == "write" and d["signature"]["bytes"] == per_call:
                decision = d
        if f.get("strategies"):
            strategies = f["strategies"]
    if decision is None:
        raise RuntimeError("no write decision in the statistics")
    trace = decision.get("trace") or []
    times = call_times(samples, per_call, len(trace))
    w = next(ph for ph in res["phases"] if ph["name"] == "write")
    return {"config": config, "load": args.load, "loadavg": loadavg, "cold": cold, "per_call": per_call,
            "load_on": load_on, "load_term": load_term, "load_off": load_off, "write_end": write_end, "write_seconds": w["seconds"],
            "write_mbs": w["mbs"], "samples": samples, "trace": trace, "times": times,
            "strategy": decision.get("strategy"), "reexaminations": decision.get("reexaminations"),
            "examination_calls": decision.get("examination_calls"), "throughputs": decision.get("throughputs"),
            "strategies": strategies, "model": decision.get("model"), "profile": profile}


def call_times(samples, per_call, n):
    """Wall-clock end of every call: when the file size first reached the end of the call (linear between samples)."""
    pts = [(0.0, 0)]
    for t, s in samples:
        if s > pts[-1][1]:
            pts.append((t, s))
    out, j = [], 0
    for k in range(n):
        end = (k + 1) * per_call
        while j < len(pts) - 1 and pts[j + 1][1] < end:
            j += 1
        if j == len(pts) - 1:
            out.append(pts[-1][0])
            continue
        (ta, sa), (tb, sb) = pts[j], pts[j + 1]
        out.append(round(ta + (tb - ta) * (end - sa) / (sb - sa), 4))
    return out


# ---- tables and the plot ----

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x):
    return "-" if x != x else f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def phase_of(x, t):
    if x["load_on"] is None or t < x["load_on"]:
        return "before"
    return "during" if t < x["load_off"] else "after"


def phase_calls(x, ph):
    return [(t, s, v) for t, (s, v) in zip(x["times"], x["trace"]) if phase_of(x, t) == ph]


def wall_rate(x, ph):
    """MB/s the file grew during the phase (wall clock)."""
    lo = {"before": 0.0, "during": x["load_on"], "after": x["load_off"]}[ph]
    hi = {"before": x["load_on"], "during": x["load_off"], "after": x["write_end"]}[ph]
    if lo is None or hi is None or hi - lo < 0.5:
        return float("nan")

    def size_at(t):
        prev = (0.0, 0)
        for ts, s in x["samples"]:
            if ts >= t:
                if ts == prev[0]:
                    return s
                return prev[1] + (s - prev[1]) * (t - prev[0]) / (ts - prev[0])
            prev = (ts, s)
        return prev[1]
    return (size_at(hi) - size_at(lo)) / (hi - lo) / 1e6


def segments(trace):
    segs = []
    for s, _ in trace:
        if segs and segs[-1][0] == s:
            segs[-1][1] += 1
        else:
            segs.append([s, 1])
    return segs


def auto_phases(x):
    """Per phase: examinations visible in the trace that start in it, and the strategies that served runs of more
    than exam_calls + 1 calls (the winners), with their calls in the phase."""
    exams, winners = Counter(), {ph: Counter() for ph in PHASES}
    k, in_exam = 0, False
    for s, n in segments(x["trace"]):
        ph = phase_of(x, x["times"][k])
        if n > EXAM_CALLS + 1:
            for i in range(k, k + n):
                winners[phase_of(x, x["times"][i])][s] += 1
            in_exam = False
        elif not in_exam:
            exams[ph] += 1
            in_exam = True
        k += n
    return exams, winners


def report(data):
    runs, meta = [x for x in data["runs"] if not x.get("failed")], data["meta"]
    configs = [c for c in CONFIGS if any(x["config"] == c for x in runs)]
    loads = [x["loadavg"] for x in runs]
    lines = [f"{meta['repeat']} repeats, interleaved. Load `{meta['load']}` from {meta['load_start']:g} s to "
             f"{meta['load_stop']:g} s after the write phase began; matrix --block-size {meta['block_size']} --depth "
             f"{meta['depth']} --iterations {meta['iterations']} ({meta['per_call'] / 1024:.0f} KiB per call). "
             f"libiotame.so sha256 {meta.get('lib_sha256', '?')[:12]} (commit {meta.get('commit', '?')}). Load "
             f"average (1 min) at the trials' starts {min(loads):.1f} to {max(loads):.1f}. Write phase "
             f"{min(x['write_seconds'] for x in runs):.0f} to {max(x['write_seconds'] for x in runs):.0f} s; the load "
             f"ran from {med([x['load_on'] for x in runs if x['load_on'] is not None]):.1f} to "
             f"{med([x['load_off'] for x in runs if x['load_off'] is not None]):.1f} s (medians)."
             + (f" Memory: {meta['memory']}." if meta.get("memory") else ""), "",
             "MB/s per call (median over the calls of all repeats) / wall-clock MB/s of the phase (the file's growth, "
             "median over the repeats); calls in the phase (all repeats):", "",
             "| configuration | " + " | ".join(PHASES) + " | whole write phase (kernel) |",
             "| --- | " + " | ".join("---:" for _ in PHASES) + " | ---: |"]
    for c in configs:
        mine = [x for x in runs if x["config"] == c]
        cells = []
        for ph in PHASES:
            calls = [v for x in mine for _, _, v in phase_calls(x, ph)]
            cells.append(f"{fmt(med(calls))} / {fmt(med([wall_rate(x, ph) for x in mine]))} ({len(calls)})")
        cells.append(fmt(med([x["write_mbs"] for x in mine])))
        lines.append(f"| {c if c in AUTOS else c + ' alone'} | " + " | ".join(cells) + " |")
    for auto in AUTOS:
        lines += auto_lines([x for x in runs if x["config"] == auto], auto)
    return "\n".join(lines)


def model_text(x):
    """What auto_model's cost model said for the write signature: its first choice and departures, the profile."""
    m, prof = x.get("model"), x.get("profile") or {}
    text = f"; model first {m['first']}, {m.get('departures', 0)} departures" if m else ""
    if "profile_refused" in prof:
        text += f"; profile REFUSED: {prof['profile_refused']}"
    return text


def auto_lines(autos, name):
    """Per run of an auto configuration: examinations and winners per phase, re-examinations, the winner at the end
    (and the model's first choice); the calls each strategy served."""
    lines = []
    if autos:
        lines += ["", f"{name} per run: examinations visible in the trace that begin in the phase; strategies that served "
                  "runs of more than " + f"{EXAM_CALLS + 1} calls (calls in the phase); re-examinations and the "
                  "winner at the end (statistics):", "",
                  "| run | " + " | ".join(PHASES) + " | re-examinations, winner at the end |",
                  "| ---: | " + " | ".join("---" for _ in PHASES) + " | --- |"]
        for i, x in enumerate(autos):
            exams, winners = auto_phases(x)
            cells = []
            for ph in PHASES:
                w = ", ".join(f"{s} {n}" for s, n in winners[ph].most_common())
                cells.append(f"{exams[ph]} exam.; {w or '-'}")
            lines.append(f"| {i + 1} | " + " | ".join(cells) + f" | {x['reexaminations']}, {x['strategy']}"
                         f"{model_text(x)} |")
        served = Counter()
        for x in autos:
            for s, _ in x["trace"]:
                served[s] += 1
        lines += ["", f"Calls served by each strategy under {name} (all runs): "
                  + ", ".join(f"{s} {n}" for s, n in served.most_common())]
    return lines


def plot(data, png, which=1):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    runs = [x for x in data["runs"] if not x.get("failed")]
    autos = [x for x in runs if x["config"] == "auto"]
    if not autos:
        return
    a = autos[min(which, len(autos)) - 1]
    fig, ax = plt.subplots(figsize=(10, 5.2), dpi=100)
    if a["load_on"] is not None:
        ax.axvspan(a["load_on"], a["load_off"], color="0.85", zorder=0)
    for s in STRATEGIES:
        pts = [(t, v) for t, (st, v) in zip(a["times"], a["trace"]) if st == s]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=4, color=COLORS[s], zorder=3, linewidths=0)
    bounds = {"before": (0, med([x["load_on"] for x in runs if x["load_on"] is not None])),
              "during": (med([x["load_on"] for x in runs if x["load_on"] is not None]),
                         med([x["load_off"] for x in runs if x["load_off"] is not None])),
              "after": (med([x["load_off"] for x in runs if x["load_off"] is not None]),
                        med([x["write_end"] for x in runs if x["write_end"] is not None]))}
    for s in STRATEGIES:
        mine = [x for x in runs if x["config"] == s]
        for ph in PHASES:
            v = med([v for x in mine for _, _, v in phase_calls(x, ph)])
            if v == v:
                ax.hlines(v, *bounds[ph], color=COLORS[s], linestyles="--", linewidth=1.6, zorder=4)
    ax.set_yscale("log")
    ax.set_xlabel("seconds since the write phase began (the moment each call's data reached the file)")
    ax.set_ylabel("MB/s of the call")
    m = data["meta"]
    hosts = (m.get("setting") or {}).get("hosts")
    ax.set_title(f"Matrix write, {f'{hosts} hosts' if hosts else '2 ranks'}, {m['per_call'] / 1024:.0f} KiB per call; load '{m['load']}' "
                 f"(shaded) — auto, run {autos.index(a) + 1}; dashed: each strategy alone, median per phase", fontsize=10)
    handles = [Line2D([], [], marker="o", linestyle="", color=COLORS[s], label=f"{s}") for s in STRATEGIES
               if any(st == s for st, _ in a["trace"]) or any(x["config"] == s for x in runs)]
    ax.legend(handles=handles, loc="lower left", fontsize=8, ncol=3,
              title="dots: auto's calls by strategy; dashed: strategy alone", title_fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--load", default="cpu", choices=["disk", "cpu", "net", "none"])
    ap.add_argument("--hosts", type=int, default=0, help="run on the testbed's first HOSTS hosts")
    ap.add_argument("--per-host", type=int, default=1)
    ap.add_argument("--mpi", choices=("mpich", "openmpi"))
    ap.add_argument("--targets", type=int, default=0, help="emulated disks the file is striped over (0: the real "
                    "file system)")
    ap.add_argument("--target-unit", type=int, default=65536)
    ap.add_argument("--load-start", type=float, default=12.0, help="seconds after the write phase began")
    ap.add_argument("--load-stop", type=float, default=26.0)
    ap.add_argument("--iterations", type=int, default=1600, help="collective calls of the write phase")
    ap.add_argument("--block-size", type=int, default=1048576)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--configs", help="comma-separated, of: " + ", ".join(CONFIGS) + " (default: all, auto_model "
                    "with --profile)")
    ap.add_argument("--profile", help="a machine profile (iotame calibrate): auto_model's collective.profile")
    ap.add_argument("--small", action="store_true", help="a few seconds per trial: checks the script")
    ap.add_argument("--dir", default=str(ROOT / "build"), help="where the files go (default build/)")
    ap.add_argument("--json", help="also write every run to this file")
    ap.add_argument("--out", help="also write the markdown tables to this file")
    ap.add_argument("--png", help="draw the plot to this file")
    ap.add_argument("--plot-run", type=int, default=1, help="which auto run the plot draws (default the first)")
    ap.add_argument("--table", help="the tables (and --png) of an earlier --json file, run nothing")
    args = ap.parse_args()
    if args.table:
        data = json.loads(Path(args.table).read_text())
    else:
        if args.small:
            args.iterations, args.load_start, args.load_stop = 200, 0.5, 1.0
        configs = args.configs or ",".join(c for c in CONFIGS if c != "auto_model" or args.profile)
        names = [c.strip() for c in configs.split(",") if c.strip()]
        for c in names:
            if c not in CONFIGS:
                ap.error(f"unknown configuration {c}")
        if "auto_model" in names and not args.profile:
            ap.error("auto_model needs --profile PROFILE.json (a machine profile, iotame calibrate)")
        if args.profile and not Path(args.profile).is_file():
            ap.error(f"--profile {args.profile}: no such file (expected a machine profile, iotame calibrate --out)")
        setting = Setting(args.hosts, args.per_host, args.mpi, args.targets, args.target_unit)
        if args.load == "net" and not args.hosts:
            ap.error("--load net needs --hosts (the testbed)")
        for f in (setting.kernel, setting.lib):
            if not f.exists():
                print(f"{f} is missing: run make setup", file=sys.stderr)
                return 1
        meta = {k: getattr(args, k) for k in ("repeat", "load", "load_start", "load_stop", "iterations",
                                              "block_size", "depth", "profile")}
        meta.update(setting=setting.to_json(), configs=names, per_call=args.block_size * args.depth * setting.nprocs,
                    argv=sys.argv[1:],
                    started=time.strftime("%Y-%m-%d %H:%M:%S"))
        meta["commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
        runs = []
        with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-dynamic-") as tmp, steady_memory() as memory:
            tmp = Path(tmp)
            meta["memory"] = memory
            print(memory, flush=True)
            lib = tmp / "libiotame.so"
            shutil.copy2(setting.lib, lib)
            meta["lib_sha256"] = hashlib.sha256(lib.read_bytes()).hexdigest()
            for r in range(args.repeat):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    t = time.time()
                    try:
                        x = trial(name, args, tmp, lib, setting)
                        line = (f"write {x['write_mbs']:7.1f} MB/s in {x['write_seconds']:5.1f} s, load "
                                f"{x['load_on'] or 0:.1f}-{x['load_off'] or 0:.1f} s, per call " + " ".join(
                                    f"{ph} {fmt(med([v for _, _, v in phase_calls(x, ph)]))}" for ph in PHASES))
                        if name in AUTOS:
                            line += f"  re-exam {x['reexaminations']}, winner {x['strategy']}{model_text(x)}"
                    except RuntimeError as e:
                        x = {"config": name, "failed": True, "error": str(e)}
                        line = "FAILED: " + str(e).splitlines()[0]
                    x["repeat"] = r + 1
                    runs.append(x)
                    print(f"repeat {r + 1} {name:15s} {line}  [{time.time() - t:.0f} s]", flush=True)
        data = {"meta": meta, "runs": runs}
        if args.json:
            Path(args.json).write_text(json.dumps(data))
    text = report(data)
    print("\n" + text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.png:
        plot(data, args.png, args.plot_run)
    return 1 if any(x.get("failed") for x in data["runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
