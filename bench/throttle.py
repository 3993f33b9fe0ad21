#!/usr/bin/env python3
"""Stream throttling measured with MADbench (runtime/src/throttle; Seelam, Kerstens and Teller, "Throttling I/O
Streams to Accelerate File-I/O Performance", Tables 6-8): the madbench kernel in I/O mode (no computation: the
stubs' time scaled to 0 so that the I/O dominates) under each configuration

  W/R      throttle.writers W and throttle.readers R (static levels; "all" is the process count: no throttle
           section at all, the runtime's default)
  auto     throttle.readers and throttle.writers "auto": the adaptive controller, told nothing
  auto+profile
           auto with collective.profile naming the device's machine profile (--profile DEVICE=FILE, made by
           `iotame calibrate --config`): the controller starts at the level the profile's streams curve predicts
           and examines only its neighbours

on a storage device: `disk` and `raid5` are the runtime's emulated devices (runtime/src/emulate; every table says
so), `none` the machine's real file system. Every trial is two jobs: dSdC writes and keeps its files (the kernel
syncs each bin), the page cache is dropped (root), invD and W read them back (--skip-write). Within a repeat the
configurations run in turn, the first rotating from repeat to repeat; medians over the repeats.

Per phase the paper's TIO (mean over processes of the time from the barrier before the I/O to the end of its own
I/O, the wait for a token included) and LBSTIO (mean time in the barrier after the I/O), as the kernel measures
them; Total is the sum of the phases' TIO + LBSTIO. The report names the best static level, and checks the
targets: auto (and auto+profile) within 5 % of the best static, the best static at least 1.2 x the unthrottled where
throttling helps, and on the real file system auto at least 0.97 x the unthrottled.

MPICH busy-polls: timings with more than 2 processes use the Open MPI build (--mpi openmpi, mpirun --oversubscribe).

Usage: bench/throttle.py [--mpi openmpi] [--np 4,16] [--devices disk,raid5] [--filetypes unique,shared]
                         [--configs all/all,all/1,...,auto,auto+profile] [--profile DEVICE=FILE ...] [--repeat 3]
                         [--no-pix N] [--no-bin N] [--baseline OLD/libiotame.so] [--json F] [--out F.md]
       bench/throttle.py --table F.json [--out F.md]
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

from iotame.bench.caches import evict
from iotame.bench.baseline import BASELINE, base_name, copy_baseline, ratio_interval, with_baseline
from iotame.bench.memory import steady_memory

ROOT = Path(__file__).resolve().parent.parent
BUILDS = {"mpich": ROOT / "build", "openmpi": ROOT / "build-openmpi"}
PHASES = ("dSdC", "invD", "W")
TIMEOUT = 1800


def default_configs(np_):
    """The paper's rows: all or one writer by all or one reader (Tables 6 and 7), the readers between them with all
    writers (Table 8 and Figure 3), then auto."""
    return ["all/all", "1/all", "all/1", "1/1"] + [f"all/{r}" for r in (2, 4, 8) if r < np_] + ["auto"]


AUTOS = ("auto", "auto+profile")


def runtime_config(name, device, state, window, profiles=None):
    """The runtime configuration of a configuration name on a device (profiles: device -> machine profile path,
    for auto+profile)."""
    d = {"posix": {"all_files": False}}
    if device != "none":
        d["emulate"] = {"device": device, "state": str(state)}
    if name in AUTOS:
        d["throttle"] = {"readers": "auto", "writers": "auto", "window_seconds": window}
        if name == "auto+profile":
            d["collective"] = {"profile": str(profiles[device])}
    else:
        w, r = name.split("/")
        t = {k: int(v) for k, v in (("writers", w), ("readers", r)) if v != "all"}
        if t:
            d["throttle"] = t
    return {"version": 1, "defaults": d}


def launcher(mpi, np_):
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--oversubscribe", "-n", str(np_)]
    return ["mpiexec", "-n", str(np_)]


def environment(mpi, lib, config, stats):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=str(lib), IOTAME_CONFIG=str(config), IOTAME_STATS=str(stats))
    if mpi == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none")
    return env


def job(argv, env, cwd, stats):
    if stats.exists():
        stats.unlink()
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {p.returncode}:\n{p.stderr[-1500:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if res.get("verified") is not True:
        raise RuntimeError(f"{' '.join(map(str, argv))}: data did not verify")
    return res, json.loads(stats.read_text())


def levels(stats, direction, key="level"):
    """The levels the throttle kept (or, key "predicted_level", started from) for a direction, one per target, from
    the statistics."""
    t = (stats.get("modules") or {}).get("throttle") or {}
    return [g[direction].get(key, 0) for g in t.get("targets", []) if direction in g]


def parse_profiles(items):
    """--profile DEVICE=FILE options as {device: absolute path}; SystemExit naming the option when malformed."""
    out = {}
    for item in items or []:
        device, sep, path = item.partition("=")
        if not sep or not device or not path:
            sys.exit(f"bench/throttle.py: --profile {item!r}: expected DEVICE=FILE (e.g. raid5=raid5.profile.json)")
        if not Path(path).is_file():
            sys.exit(f"bench/throttle.py: --profile {item!r}: {path} is not a file")
        out[device] = Path(path).resolve()
    return out


def trial(a, mpi, np_, device, filetype, name, tmp):
    build = BUILDS[mpi]
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    cfg = tmp / "config.json"
    cfg.write_text(json.dumps(runtime_config(base_name(name), device, tmp / "device.state", a.window, a.profiles)))
    base = launcher(mpi, np_) + [str(build / "kernels" / "iotame-kernel"), "madbench", "--api", "mpiio",
                                 "--filetype", filetype, "--no-pix", str(a.no_pix), "--no-bin", str(a.no_bin),
                                 "--file", str(work / "mad.dat")]
    lib = tmp / f"libiotame-{mpi}{'-baseline' if name.endswith(BASELINE) else ''}.so"
    w, ws = job(base + ["--keep"], environment(mpi, lib, cfg, tmp / "w.json"), work, tmp / "w.json")
    cold = not evict([work]).errors      # the job's files only (docs/design/page-cache.md)
    r, rs = job(base + ["--skip-write"], environment(mpi, lib, cfg, tmp / "r.json"), work, tmp / "r.json")
    shutil.rmtree(work, ignore_errors=True)
    os.sync()
    mad = {**w["madbench"], **{k: v for k, v in r["madbench"].items() if k in ("invD", "W")}}
    out = {"mpi": mpi, "np": np_, "device": device, "filetype": filetype, "config": name, "cold": cold,
           "phases": {p: {"tio": mad[p]["tio"], "lbstio": mad[p]["lbstio"]} for p in PHASES},
           "bytes": w["madbench"]["matrix_bytes"] * a.no_bin,
           "write_levels": levels(ws, "write"), "read_levels": levels(rs, "read"),
           "write_predicted": levels(ws, "write", "predicted_level"),
           "read_predicted": levels(rs, "read", "predicted_level"),
           "emulated": (rs.get("modules") or {}).get("emulate")}
    out["total"] = sum(v["tio"] + v["lbstio"] for v in out["phases"].values())
    return out


# ---- the report ----

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def groups(runs):
    keys = []
    for r in runs:
        k = (r["mpi"], r["np"], r["device"], r["filetype"])
        if k not in keys:
            keys.append(k)
    return keys


def table(runs, key):
    mine = [r for r in runs if (r["mpi"], r["np"], r["device"], r["filetype"]) == key]
    names = list(dict.fromkeys(r["config"] for r in mine))
    lines = ["| writers | readers | Total (s) | dSdC TIO | dSdC LBSTIO | invD TIO | invD LBSTIO | W TIO | W LBSTIO | runs |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    totals = {}
    for n in names:
        rs = [r for r in mine if r["config"] == n]
        totals[n] = med([r["total"] for r in rs])
        cells = []
        for p in PHASES:
            cells += [med([r["phases"][p]["tio"] for r in rs]), med([r["phases"][p]["lbstio"] for r in rs])]
        if base_name(n) in AUTOS:
            cols = []
            for d in ("write", "read"):
                kept = sorted({l for r in rs for l in r[f"{d}_levels"]})
                pred = sorted({l for r in rs for l in r.get(f"{d}_predicted", []) if l})
                cols.append(f"{n} ({','.join(map(str, kept))}" + (f"; from {','.join(map(str, pred))}" if pred else "")
                            + ")")
            w, rd = cols
        else:
            w, rd = base_name(n).split("/")
            w += n.removeprefix(base_name(n))
        lines.append(f"| {w} | {rd} | {totals[n]:.2f} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {len(rs)} |")
    static = {n: t for n, t in totals.items() if n not in AUTOS and not n.endswith(BASELINE)}
    best = min(static, key=static.get)
    base = totals.get("all/all")
    notes = [f"best static: {best} ({static[best]:.2f} s)"]
    if base:
        notes.append(f"unthrottled / best static: {base / static[best]:.2f}")
    for n in AUTOS:
        if n in totals:
            notes.append(f"{n} / best static (time): {totals[n] / static[best]:.3f}")
            if base:
                notes.append(f"unthrottled / {n}: {base / totals[n]:.2f}")
    return lines, notes


def report(data):
    out = [f"bench/throttle.py, {data['date']}: madbench --no-pix {data['no_pix']} --no-bin {data['no_bin']} "
           f"(I/O mode, no computation), {data['repeat']} repeats, auto window {data['window']} s; "
           f"{data['memory']}"]
    for key in groups(data["runs"]):
        mpi, np_, device, filetype = key
        rs = [r for r in data["runs"] if (r["mpi"], r["np"], r["device"], r["filetype"]) == key]
        emulated = rs[0].get("emulated")
        dev = (f"EMULATED {device} ({', '.join(f'{k} {v}' for k, v in emulated.items() if k in ('servers', 'bandwidth_mbs', 'position_ms', 'seek_ms', 'streams'))})"
               if device != "none" else "the real file system (no emulation)")
        cold = "reads after dropping the page cache" if all(r["cold"] for r in rs) else "READS MAY COME FROM THE PAGE CACHE"
        lines, notes = table(data["runs"], key)
        out += ["", f"### {np_} processes, {filetype} files, {dev}", "",
                f"{mpi}{' --oversubscribe' if mpi == 'openmpi' else ''}; {cold}; times in seconds, medians", ""]
        out += lines + ["", "; ".join(notes)]
        if data.get("baseline"):
            out += ["", f"Against the baseline library ({data['baseline']['path']}, sha256 "
                        f"{data['baseline']['sha256'][:12]}), side by side in the same rounds:", ""]
            out += baseline_table(rs)
    return "\n".join(out) + "\n"


def baseline_table(rs):
    """Each configuration's Total and phases with the current library over the --baseline one: the ratio of medians
    (time: below 1 is faster now) and its 90 % paired bootstrap interval."""
    def by_repeat(name, value):
        return {r["repeat"]: value(r) for r in rs if r["config"] == name}
    cols = [("Total", lambda r: r["total"])] + [(p, lambda r, p=p: r["phases"][p]["tio"] + r["phases"][p]["lbstio"])
                                                for p in PHASES]
    lines = ["| configuration | " + " | ".join(f"{c} now / baseline" for c, _ in cols) + " |",
             "| --- |" + " ---: |" * len(cols)]
    for n in dict.fromkeys(r["config"] for r in rs):
        if n.endswith(BASELINE) or not any(r["config"] == n + BASELINE for r in rs):
            continue
        cells = [ratio_interval(by_repeat(n, f), by_repeat(n + BASELINE, f)) for _, f in cols]
        lines.append(f"| {n} | " + " | ".join(f"{x:.2f} [{lo:.2f}-{hi:.2f}]" for x, lo, hi in cells) + " |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", choices=sorted(BUILDS), default="openmpi")
    ap.add_argument("--np", default="4,16")
    ap.add_argument("--devices", default="disk,raid5")
    ap.add_argument("--filetypes", default="unique")
    ap.add_argument("--configs", help="comma-separated W/R names, auto and auto+profile (default: Seelam et al.'s "
                                      "grid and auto)")
    ap.add_argument("--profile", action="append", metavar="DEVICE=FILE",
                    help="the machine profile auto+profile names on DEVICE (iotame calibrate --config; repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-pix", type=int, default=1448, dest="no_pix")
    ap.add_argument("--no-bin", type=int, default=8, dest="no_bin")
    ap.add_argument("--window", type=float, default=0.25, help="throttle.window_seconds of auto")
    ap.add_argument("--baseline", help="another libiotame.so built for the same MPI (say, of the commit before a "
                    "change): every configuration also runs with it, named NAME@baseline, in the same rounds, and "
                    "the report gives the ratios of medians")
    ap.add_argument("--dir", help="where the runs' files go (default: a temporary directory)")
    ap.add_argument("--json", help="write every run here")
    ap.add_argument("--out", help="write the report here (Markdown)")
    ap.add_argument("--table", help="print the report of an earlier --json file")
    a = ap.parse_args()
    a.profiles = parse_profiles(a.profile)
    missing = [d for d in a.devices.split(",") if d not in a.profiles]
    if "auto+profile" in (a.configs or "").split(",") and missing:
        sys.exit(f"bench/throttle.py: --configs auto+profile: no --profile for device(s) {', '.join(missing)} "
                 f"(expected --profile DEVICE=FILE, from iotame calibrate --config)")
    if a.table:
        text = report(json.loads(Path(a.table).read_text()))
    else:
        data = {"date": time.strftime("%Y-%m-%d %H:%M"), "no_pix": a.no_pix, "no_bin": a.no_bin,
                "repeat": a.repeat, "window": a.window, "runs": []}
        with tempfile.TemporaryDirectory(dir=a.dir, prefix="bench-throttle-") as tmp, steady_memory() as memory:
            tmp = Path(tmp)
            data["memory"] = memory
            shutil.copy2(BUILDS[a.mpi] / "runtime" / "libiotame.so", tmp / f"libiotame-{a.mpi}.so")
            if a.baseline:
                data["baseline"] = copy_baseline(a.baseline, tmp / f"libiotame-{a.mpi}-baseline.so")
            for np_ in map(int, a.np.split(",")):
                configs = a.configs.split(",") if a.configs else default_configs(np_)
                if a.baseline:
                    configs = with_baseline(configs, lambda c: True)  # every configuration loads the runtime
                for device in a.devices.split(","):
                    for filetype in a.filetypes.split(","):
                        for rep in range(a.repeat):
                            for i in range(len(configs)):
                                name = configs[(i + rep) % len(configs)]
                                r = trial(a, a.mpi, np_, device, filetype, name, tmp)
                                data["runs"].append({**r, "repeat": rep + 1})
                                print(f"{np_} {device} {filetype} {name}: total {r['total']:.2f} s, levels "
                                      f"w {r['write_levels']} r {r['read_levels']}", file=sys.stderr, flush=True)
                                if a.json:
                                    Path(a.json).write_text(json.dumps(data))
        text = report(data)
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
