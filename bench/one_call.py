#!/usr/bin/env python3
"""Do no harm where a phase is one collective call (issue 48, point 4): the project's kernels at shapes where each
rank writes, and reads back, with one collective call per phase (or, for the HDF5 kernels, their natural few), under

  default         no preload: the MPI library's own collective I/O (ROMIO) with its defaults
  passthrough, independent, two_phase, node_local, target_aligned, view_based
                  libiotame.so with {"collective": {"strategy": S}}: each fixed strategy alone
  auto            strategy auto WITHOUT a machine profile: the selector's configured first candidate serves a
                  one-call phase
  auto_profile    strategy auto with {"profile": P} of --profile P: the cost model's pick serves when the model
                  trusts it (it beats the configured first candidate and the library's call beyond the errors), else the
                  configured first candidate

at 2 ranks (MPICH busy-polls: never more on 2 cores). The cases (--small: the same shapes, tiny):

  tileio-64B   tileio, 2 x 1 tiles of 1 x 2097152 elements of 64 B: one MPI_File_write_all / read_all per rank of
               128 MiB in 64-byte pieces interleaved with the other rank's (256 MiB a phase in 4,194,304 pieces: the
               shape of issue 48's third-party tile reader)
  tileio-4K    the same with 4 KiB elements (32768 rows a tile)
  noncontig    noncontig --collective --loops 1: one MPI_File_write_at_all / read_at_all per rank of a vector of
               524288 chunks of 256 B interleaved with the other rank's (256 MiB)
  ior          ior -c -b 128m -t 128m: one collective call per rank of its contiguous 128 MiB block (256 MiB)
  flashio      FLASH-IO --collective (HDF5), 16^3-cell blocks, --maxblocks 100 (80 and 81 blocks): a checkpoint of 24
               unknowns and two plot files of 4, each dataset one collective H5Dwrite of 1.25 to 2.5 MiB per rank
               (32 calls in 3 signatures and the metadata's); its phases summed (about 150 MB)
  vpicio       VPIC-IO --collective (HDF5), 4194304 particles per rank, 1 step: 8 datasets of 16 MiB per rank, each
               one collective call (256 MiB)

Every trial is two jobs: the kernel writes (timed by the kernel through MPI_File_sync, H5Fflush, or IOR's -e fsync)
and keeps its files (--keep; ior -w -k -e -W); its files are written back and evicted from the page cache
(iotame.bench.caches.evict: any user, other processes' cached data stays); the kernel reads back and verifies (--skip-write;
ior -r -R). A kernel with several write (read) phases counts them together: their bytes over their seconds.

auto must not find a profile by itself: every job runs with HOME and XDG_CONFIG_HOME pointing at an empty temporary
directory, IOTAME_PROFILE unset, and the library copied to TMP/lib/libiotame.so (its installation's
share/iotame/profiles does not exist); the statistics of every auto job are checked for a profile, and the report
says so if one was found anyway (docs/calibrate.md, "Where the runtime finds the profile"). The auto configurations
record their calls (collective.trace), so the report says which strategy served each call, the model's first
choice and whether it was trusted (the decisions' "model" in the statistics, IOTAME_STATS).

Rounds (--repeat, default 5): within a round every case runs every configuration in turn, the starting configuration
rotating from round to round. Per case and operation the report gives each configuration's median MB/s (min-max),
the best fixed strategy (the best median), and the ratio of medians auto_profile / the better (by median) of
default and auto, with its 90 % paired bootstrap interval over the rounds (iotame.bench.baseline.ratio_interval).
A row is met where the ratio is at least 0.95; "~" where it is below but the interval reaches 0.95 (a miss within
this machine's noise); "**" where the whole interval is below (a miss beyond the noise).

With --baseline OLD/libiotame.so every configuration that preloads the runtime also runs with that library,
NAME@baseline, in the same rounds, and the report adds the ratios NAME / NAME@baseline with their intervals.

The library is copied once at the start (a rebuild during the run does not change it). The default 5 rounds take
about 15 minutes on this machine's 2 cores.

Usage: bench/one_call.py --profile P.json [--repeat 5] [--kernels tileio,noncontig,ior,flashio,vpicio]
                         [--cases tileio-64B,...] [--configs default,...] [--baseline OLD/libiotame.so] [--small]
                         [--dir D] [--json F] [--out F.md]
       bench/one_call.py --table F.json [--out F.md]
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
from iotame.bench.execute import verified_job
from iotame.bench.baseline import BASELINE, base_name, copy_baseline, ratio_interval, with_baseline
from iotame.bench.memory import steady_memory
from iotame.bench.setting import Setting

ROOT = Path(__file__).resolve().parent.parent
NP = 2
TIMEOUT = 600
TRACE = 1000  # the auto configurations record their first calls of each signature: which strategy served them
GOAL = 0.95

# ---- the cases ----

# name: (kernel, options, small options, what it is); the write and read jobs add SPLIT[kernel]
CASES = {
    "tileio-64B": ("tileio", ["--nr-tiles-x", "2", "--nr-tiles-y", "1", "--sz-tile-x", "1", "--sz-tile-y", "2097152",
                              "--sz-element", "64"],
                   ["--nr-tiles-x", "2", "--nr-tiles-y", "1", "--sz-tile-x", "1", "--sz-tile-y", "8192",
                    "--sz-element", "64"],
                   "one call per rank and phase of a tile 1 element wide, 64-byte elements interleaved"),
    "tileio-4K": ("tileio", ["--nr-tiles-x", "2", "--nr-tiles-y", "1", "--sz-tile-x", "1", "--sz-tile-y", "32768",
                             "--sz-element", "4096"],
                  ["--nr-tiles-x", "2", "--nr-tiles-y", "1", "--sz-tile-x", "1", "--sz-tile-y", "128",
                   "--sz-element", "4096"],
                  "one call per rank and phase of a tile 1 element wide, 4 KiB elements interleaved"),
    "noncontig": ("noncontig", ["--collective", "--loops", "1", "--elmtcount", "64", "--veclen", "524288"],
                  ["--collective", "--loops", "1", "--elmtcount", "64", "--veclen", "2048"],
                  "--loops 1: one call per rank and phase of a vector of 256-byte chunks interleaved"),
    "ior": ("ior", ["-c", "-b", "128m", "-t", "128m"], ["-c", "-b", "512k", "-t", "512k"],
            "-c, block = transfer: one call per rank and phase of its contiguous block"),
    "flashio": ("flashio", ["--collective", "--nxb", "16", "--nyb", "16", "--nzb", "16", "--maxblocks", "100"],
                ["--collective", "--maxblocks", "2"],
                "HDF5, --collective: checkpoint and two plot files, each dataset one collective call; phases summed"),
    "vpicio": ("vpicio", ["--collective", "--particles", "4194304", "--steps", "1"],
               ["--collective", "--particles", "16384", "--steps", "1"],
               "HDF5, --collective, 1 step: 8 datasets, each one collective call per rank"),
}
KERNELS = list(dict.fromkeys(k for k, *_ in CASES.values()))
# what the write job and the read job add: keep the files (and fsync, for ior, inside its timed write), then read
# them back and verify
SPLIT = {"ior": (["-w", "-k", "-e", "-W"], ["-r", "-R"])}
LONG_SPLIT = (["--keep"], ["--skip-write"])

STRATEGIES = ["passthrough", "independent", "two_phase", "node_local", "target_aligned", "view_based"]
AUTO, MODEL = "auto", "auto_profile"
# name: the collective section, or None for no preload; PROFILE becomes --profile
CONFIGS = {"default": None, **{s: {"strategy": s} for s in STRATEGIES},
           AUTO: {"strategy": "auto", "trace": TRACE},
           MODEL: {"strategy": "auto", "profile": "PROFILE", "trace": TRACE}}


def case_line(name, small):
    kernel, args, small_args, text = CASES[name]
    return f"`{name}`: {kernel} {' '.join(small_args if small else args)} ({text})"


# ---- running ----

def environment(lib, config_path, stats, home):
    """The job's environment: no IOTAME_* of the caller's, HOME and XDG_CONFIG_HOME an empty directory (no profile
    of the user's), and the runtime preloaded when there is a configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTAME_") and k != "LD_PRELOAD"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home))
    if config_path:
        env.update(LD_PRELOAD=str(lib), IOTAME_CONFIG=str(config_path), IOTAME_STATS=str(stats))
    return env


def job(argv, env, cwd, stats):
    """Runs one job; returns (result, statistics or None). RuntimeError on failure or unverified data."""
    return verified_job(argv, env, cwd, stats, TIMEOUT)


def op_phases(res, op):
    """The result's phases of one operation: `write`, or every `*_write` (flashio's three files)."""
    return [p for p in res["phases"] if p["name"] == op or p["name"].endswith("_" + op)]


def op_figures(res, op):
    """(bytes, seconds, MB/s) of one operation: its phases summed."""
    ps = op_phases(res, op)
    b, s = sum(p["bytes"] for p in ps), sum(p["seconds"] for p in ps)
    if not ps or s <= 0:
        raise RuntimeError(f"{res.get('kernel')}: no {op} phase in its result")
    return b, s, b / s / 1e6


def selector(stats, op):
    """What the statistics say of op's calls: the profile found (or refused), and per decision of op its
    signature, winner, the strategies that served its calls (from the trace), and the model's part."""
    out = {"profile": None, "profile_refused": None, "decisions": [], "strategies": {}, "passthrough_reasons": {}}
    for f in (stats or {}).get("files", []):
        for name, s in (f.get("strategies") or {}).items():  # every call of the job, of every op
            out["strategies"][name] = out["strategies"].get(name, 0) + s.get("calls", 0)
        if f.get("profile") and not out["profile"]:
            out["profile"] = {k: f["profile"].get(k) for k in ("path", "found_by", "fitted_strategies",
                                                                "corrections", "model_error")}
        if f.get("profile_refused") and not out["profile_refused"]:
            out["profile_refused"] = f["profile_refused"]
        for d in f.get("decisions") or []:
            if d["signature"]["op"] != op:
                continue
            trace = d.get("trace") or []
            served = Counter(s for s, _ in trace) if trace else Counter({d.get("strategy") or "?": d.get("calls", 0)})
            model = d.get("model")
            if model:
                model = {k: model.get(k) for k in ("first", "trusted", "leads", "deferred", "examined", "predicted_s",
                                                   "measured_s", "error")}
            out["decisions"].append({"signature": d["signature"], "strategy": d.get("strategy"),
                                     "calls": d.get("calls"), "served": dict(served), "model": model})
        for reason, n in (f.get("passthrough_reasons") or {}).items():
            out["passthrough_reasons"][reason] = out["passthrough_reasons"].get(reason, 0) + n
    return out


def trial(case, config, small, tmp, lib, config_path, setting):
    kernel, args, small_args, _ = CASES[case]
    w_extra, r_extra = SPLIT.get(kernel, LONG_SPLIT)
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    base = setting.argv(NP, setting.kernel, kernel, *(small_args if small else args))
    load = os.getloadavg()[0]
    w, ws = job(base + w_extra, environment(lib, config_path, tmp / "w.json", tmp / "home"), work, tmp / "w.json")
    cold = not evict([work]).errors  # the job's files written back and evicted (docs/design/page-cache.md)
    r, rs = job(base + r_extra, environment(lib, config_path, tmp / "r.json", tmp / "home"), work, tmp / "r.json")
    shutil.rmtree(work, ignore_errors=True)
    os.sync()  # the deletion's journal commit is not left to the next trial's sync
    wb, wsec, wmbs = op_figures(w, "write")
    rb, rsec, rmbs = op_figures(r, "read")
    return {"case": case, "config": config, "load": load, "cold": cold, "bytes": wb, "read_bytes": rb,
            "write_mbs": wmbs, "read_mbs": rmbs, "write_seconds": wsec, "read_seconds": rsec,
            "write_phases": op_phases(w, "write"), "read_phases": op_phases(r, "read"),
            "write_selector": selector(ws, "write"), "read_selector": selector(rs, "read")}


def config_writer(tmp, profile):
    """config_file(name) -> the path of that configuration (None: no preload), written on first use."""
    made = {}

    def config_file(name):
        section = CONFIGS[base_name(name)]
        if section is None:
            return None
        if name not in made:
            coll = dict(section)
            if coll.get("profile") == "PROFILE":
                coll["profile"] = str(Path(profile).resolve())
            made[name] = tmp / f"{name}.json"
            made[name].write_text(json.dumps({"version": 1, "defaults": {"collective": coll}}))
        return made[name]
    return config_file


# ---- tables ----

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x):
    return "-" if x != x else f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def ok_runs(runs):
    return [x for x in runs if not x.get("failed")]


def case_names(runs):
    seen = {x["case"] for x in ok_runs(runs)}
    return [c for c in CASES if c in seen] + sorted(seen - set(CASES))


def config_names(runs):
    seen = list(dict.fromkeys(x["config"] for x in runs))
    order = [c for b in CONFIGS for c in (b, b + BASELINE)]
    return [c for c in order if c in seen] + [c for c in seen if c not in order]


def values(runs, case, op, config):
    """Round -> MB/s of one cell."""
    return {x["repeat"]: x[f"{op}_mbs"] for x in ok_runs(runs) if x["case"] == case and x["config"] == config}


def cell(v):
    xs = list(v.values())
    return f"{fmt(med(xs))} ({fmt(min(xs))}-{fmt(max(xs))})" if xs else "-"


def verdict(runs, case, op):
    """(ratio, lo, hi, reference, mark) of auto_profile against the better by median of default and auto, or None."""
    mine = values(runs, case, op, MODEL)
    refs = {c: values(runs, case, op, c) for c in ("default", AUTO)}
    refs = {c: v for c, v in refs.items() if v}
    if not mine or not refs:
        return None
    ref = max(refs, key=lambda c: med(list(refs[c].values())))
    r, lo, hi = ratio_interval(mine, refs[ref])
    mark = "" if r >= GOAL else "?" if hi != hi else "~" if hi >= GOAL else "**"
    return r, lo, hi, ref, mark


def decisions_summary(decisions):
    """(served, model's firsts, served first (trusted alone or leading), decisions with a model) of a list of
    decisions."""
    served, first, trusted, n = Counter(), Counter(), 0, 0
    for d in decisions:
        served.update(d["served"])
        if d.get("model"):
            n += 1
            first[d["model"]["first"]] += 1
            trusted += bool(d["model"]["trusted"] or d["model"].get("leads"))
    return served, first, trusted, n


def counts(c):
    return ", ".join(f"{s} x{k}" for s, k in c.most_common())


def served_summary(runs, case, op, config):
    """What served the calls of op under an auto configuration over the rounds: strategy x calls of the decisions
    (collective.trace), and (with a profile) the model's first choices and how many decisions trusted it. Where the
    statistics have no decision (calls served in steady windows), the calls of the jobs by strategy (a write job's
    include its read-back)."""
    mine = [x for x in ok_runs(runs) if x["case"] == case and x["config"] == config]
    served, first, trusted, n = decisions_summary([d for x in mine for d in x[f"{op}_selector"]["decisions"]])
    if not served:
        jobs = Counter()
        for x in mine:
            jobs.update(x[f"{op}_selector"].get("strategies") or {})
        return (f"no decision; the jobs' calls: {counts(jobs)}" + (" (read-back included)" if op == "write" else "")
                if jobs else "no decision")
    text = counts(served)
    if n:
        text += f" (model's first: {counts(first)}; served first {trusted}/{n})"
    return text


def main_table(runs):
    """The one-call table: per case and operation, default, best fixed, auto, auto_profile, the ratio and verdict,
    and what auto_profile served."""
    names = config_names(runs)
    fixed = [s for s in STRATEGIES if s in names]
    out = [f"| case | op | MB | default | best fixed (which) | {AUTO} | {MODEL} | {MODEL} / better of default and "
           f"{AUTO} [90 % interval] | >= {GOAL} | {MODEL} served (model's first; served first) |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: | --- |"]
    counts = Counter()
    for case in case_names(runs):
        for op in ("write", "read"):
            mb = next(x["bytes" if op == "write" else "read_bytes"] for x in ok_runs(runs) if x["case"] == case)
            cells = [cell(values(runs, case, op, c)) for c in ("default",)]
            meds = {s: med(list(values(runs, case, op, s).values())) for s in fixed if values(runs, case, op, s)}
            best = max(meds, key=meds.get) if meds else None
            cells.append(f"{cell(values(runs, case, op, best))} {best}" if best else "-")
            cells += [cell(values(runs, case, op, c)) for c in (AUTO, MODEL)]
            v = verdict(runs, case, op)
            if v:
                r, lo, hi, ref, mark = v
                interval = f" [{lo:.2f}-{hi:.2f}]" if lo == lo else " [fewer than 3 rounds]"
                cells.append(f"{r:.2f}{mark}{interval} ({ref})")
                kind = {"": "met", "~": "noise", "**": "missed", "?": "unknown"}[mark]
                counts[kind] += 1
                cells.append({"met": "yes", "noise": "no (within the noise)", "missed": "**no**",
                              "unknown": "no (no interval)"}[kind])
            else:
                cells += ["-", "-"]
            cells.append(served_summary(runs, case, op, MODEL) if any(x["config"] == MODEL for x in runs) else "-")
            out.append(f"| {case} | {op} | {mb / 1e6:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(out), counts


def range_table(runs):
    """Every configuration: median MB/s (min-max) per case and operation."""
    names = config_names(runs)
    out = ["| case | op | " + " | ".join(names) + " |", "| --- | --- |" + " ---: |" * len(names)]
    for case in case_names(runs):
        for op in ("write", "read"):
            out.append(f"| {case} | {op} | " + " | ".join(cell(values(runs, case, op, c)) for c in names) + " |")
    return "\n".join(out)


def auto_table(runs):
    """What auto and auto_profile served per case and operation, and the model's predictions of auto_profile's
    main decision (the one with the most bytes x calls), median over the rounds."""
    autos = [c for c in (AUTO, MODEL) if any(x["config"] == c for x in runs)]
    out = ["| case | op | " + " | ".join(f"{a} served" for a in autos) + " | model's predicted ms per call "
           "(median; * its first) | examined where not trusted (decisions) |",
           "| --- | --- |" + " --- |" * len(autos) + " --- | --- |"]
    for case in case_names(runs):
        for op in ("write", "read"):
            pred = {}
            firsts, examined = Counter(), Counter()
            for x in ok_runs(runs):
                if x["case"] != case or x["config"] != MODEL:
                    continue
                ds = [d for d in x[f"{op}_selector"]["decisions"] if d.get("model")]
                examined.update(", ".join(d["model"].get("examined") or []) for d in ds if not d["model"]["trusted"])
                d = max(ds, key=lambda d: d["signature"]["bytes"] * (d.get("calls") or 1), default=None)
                if d:
                    firsts[d["model"]["first"]] += 1
                    for s, t in (d["model"].get("predicted_s") or {}).items():
                        pred.setdefault(s, []).append(t * 1e3)
            first = firsts.most_common(1)[0][0] if firsts else None
            ptext = ", ".join(f"{s}{'*' if s == first else ''} {med(v):.1f}" for s, v in pred.items()) or "-"
            etext = "; ".join(f"[{e}] x{k}" for e, k in examined.most_common()) or "-"
            out.append(f"| {case} | {op} | " + " | ".join(served_summary(runs, case, op, a) for a in autos)
                       + f" | {ptext} | {etext} |")
    return "\n".join(out)


def baseline_table(runs):
    """NAME / NAME@baseline: ratio of medians and its 90 % paired bootstrap interval, per case and operation."""
    names = config_names(runs)
    pairs = [c for c in names if c + BASELINE in names]
    if not pairs:
        return ""
    out = ["| case | op | " + " | ".join(f"{c} / {c}{BASELINE}" for c in pairs) + " |",
           "| --- | --- |" + " ---: |" * len(pairs)]
    for case in case_names(runs):
        for op in ("write", "read"):
            cells = []
            for c in pairs:
                r, lo, hi = ratio_interval(values(runs, case, op, c), values(runs, case, op, c + BASELINE))
                cells.append(f"{r:.2f} [{lo:.2f}-{hi:.2f}]")
            out.append(f"| {case} | {op} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def profile_lines(runs):
    """Which profile auto_profile's jobs read (or why refused); whether any auto job found one (it must not)."""
    seen, leaks = Counter(), Counter()
    for x in ok_runs(runs):
        for side in ("write_selector", "read_selector"):
            sel = x.get(side) or {}
            p = sel.get("profile")
            if base_name(x["config"]) == MODEL:
                if sel.get("profile_refused"):
                    seen[f"REFUSED: {sel['profile_refused']}"] += 1
                elif p:
                    seen[f"{p['path']} (found by {p['found_by']}, fitted strategies {p.get('fitted_strategies')}, "
                         f"corrections {json.dumps(p.get('corrections'))})"] += 1
            elif p:
                leaks[f"{x['config']}: {p['path']} (found by {p['found_by']})"] += 1
    lines = [f"Machine profile of `{MODEL}`: "
             + ("; ".join(f"{k} ({n} jobs)" for k, n in seen.most_common()) or "none reported") + "."]
    auto_jobs = sum(1 for x in ok_runs(runs) if base_name(x["config"]) == AUTO)
    if leaks:
        lines.append("**A configuration without a profile found one** (its figures are not auto without a profile): "
                     + "; ".join(f"{k} ({n} jobs)" for k, n in leaks.most_common()) + ".")
    elif auto_jobs:
        lines.append(f"`{AUTO}` ran without a profile: none in the statistics of its {2 * auto_jobs} jobs.")
    return lines


def report(data):
    runs, meta = data["runs"], data["meta"]
    good = ok_runs(runs)
    loads = [x["load"] for x in good]
    cold = all(x.get("cold") for x in good)
    failed = [x for x in runs if x.get("failed")]
    lines = [f"{meta.get('repeat')} rounds, every configuration of a case in turn, the first rotating; 2 ranks, "
             f"MPICH; medians (min-max) of MB/s. libiotame.so sha256 {meta.get('lib_sha256', '?')[:12]} (commit "
             f"{meta.get('commit', '?')}{', runtime/ modified in the work tree' if meta.get('runtime_dirty') else ''}"
             f"); load average (1 min) at the trials' starts "
             + (f"{min(loads):.1f} to {max(loads):.1f}, median {med(loads):.1f}; " if loads else "")
             + ("writes through the kernels' sync, reads after dropping the page cache"
                if cold else "READS FROM THE PAGE CACHE (not root)")
             + (f"; {meta['memory']}." if meta.get("memory") else ".")
             + (" --small: tiny sizes, this checks the script and measures nothing." if meta.get("small") else ""),
             ""]
    lines += ["Cases: " + "; ".join(case_line(c, meta.get("small")) for c in case_names(runs)) + ".", ""]
    if not good:
        lines.append("No trial succeeded.")
    else:
        table, n = main_table(runs)
        total = sum(n.values())
        lines += [f"`{MODEL}` against the better (by median) of `default` and `{AUTO}` (ratio of medians [90 % paired "
                  f"bootstrap interval over the rounds], the reference in parentheses): "
                  + (f"{n['met']} of {total} rows at least {GOAL}; {n['noise']} below within the noise (~: the "
                     f"interval reaches {GOAL}), {n['missed']} below beyond it (**)"
                     + (f", {n['unknown']} below with no interval (?: fewer than 3 rounds)" if n["unknown"] else "")
                     + "." if total else
                     f"no row has both `{MODEL}` and a reference (run with --profile)."), "", table, ""]
        lines += profile_lines(runs) + [""]
        lines += ["Every configuration (MB/s, median (min-max)):", "", range_table(runs), ""]
        if any(base_name(x["config"]) in (AUTO, MODEL) for x in good):
            lines += ["What the auto configurations served (strategy x calls over the rounds, from collective.trace; "
                      "with a profile the model's first choice per decision and how many decisions trusted it), "
                      f"the model's predictions in `{MODEL}`'s main decision, and where the model was not trusted the "
                      "candidates it examined, in the configured order (a one-call phase gets the first):", "",
                      auto_table(runs), ""]
        if meta.get("baseline"):
            lines += [f"Against the baseline library ({meta['baseline']['path']}, sha256 "
                      f"{meta['baseline']['sha256'][:12]}), side by side in the same rounds:", "",
                      baseline_table(runs), ""]
        reasons = Counter()
        for x in good:
            for side in ("write_selector", "read_selector"):
                reasons.update((x.get(side) or {}).get("passthrough_reasons", {}))
        lines.append("Pass-through reasons in the statistics: " + (json.dumps(dict(reasons)) if reasons else "none")
                     + "\n")
    if failed:
        lines += ["Failed trials:", ""] + [f"- round {x['repeat']} {x['case']} {x['config']}: {x['error'][:300]}"
                                           for x in failed]
    return "\n".join(lines)


# ---- main ----

def pick(text, known, what, ap):
    names = [c.strip() for c in text.split(",") if c.strip()]
    for c in names:
        if c not in known:
            ap.error(f"unknown {what} {c} (expected: {', '.join(known)})")
    return names


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # the temporary directory is removed on the way out
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, help="rounds (default 5; 1 with --small)")
    ap.add_argument("--kernels", help="comma-separated, of: " + ", ".join(KERNELS) + " (default: all)")
    ap.add_argument("--cases", help="comma-separated, of: " + ", ".join(CASES) + " (default: all of --kernels)")
    ap.add_argument("--configs", help="comma-separated, of: " + ", ".join(CONFIGS) + " (default: all; "
                    f"{MODEL} only with --profile)")
    ap.add_argument("--profile", help=f"a machine profile (iotame calibrate --out): {MODEL}'s collective.profile")
    ap.add_argument("--baseline", help="another libiotame.so (say, of the commit before a change): every "
                    "configuration that preloads the library also runs with it, named NAME@baseline, in the same "
                    "rounds")
    ap.add_argument("--small", action="store_true", help="tiny sizes, 1 round unless --repeat: checks the script in "
                    "seconds, measures nothing")
    ap.add_argument("--dir", default=str(ROOT / "build"), help="where the files go (default build/)")
    ap.add_argument("--json", help="also write every run to this file")
    ap.add_argument("--out", help="also write the markdown tables to this file")
    ap.add_argument("--table", help="print the tables of an earlier --json file, run nothing")
    args = ap.parse_args()
    if args.table:
        text = report(json.loads(Path(args.table).read_text()))
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
        return 0
    repeat = args.repeat or (1 if args.small else 5)
    if repeat < 1:
        ap.error("--repeat: at least 1")
    kernels = pick(args.kernels, KERNELS, "kernel", ap) if args.kernels else KERNELS
    cases = pick(args.cases, list(CASES), "case", ap) if args.cases else list(CASES)
    cases = [c for c in cases if CASES[c][0] in kernels]
    if not cases:
        ap.error("no case left: --cases and --kernels have none in common")
    names = (pick(args.configs, list(CONFIGS), "configuration", ap) if args.configs else
             [c for c in CONFIGS if c != MODEL or args.profile])
    if MODEL in names and not args.profile:
        ap.error(f"{MODEL} needs --profile PROFILE.json (a machine profile, iotame calibrate --out)")
    if args.profile and not Path(args.profile).is_file():
        ap.error(f"--profile {args.profile}: no such file (expected a machine profile, iotame calibrate --out)")
    if args.baseline:
        if not Path(args.baseline).is_file():
            ap.error(f"--baseline {args.baseline}: no such file (expected a libiotame.so)")
        names = with_baseline(names, lambda c: CONFIGS[c] is not None)
    setting = Setting()
    for f in (setting.kernel, setting.lib):
        if not f.exists():
            print(f"{f} is missing: run make setup", file=sys.stderr)
            return 1
    meta = {"repeat": repeat, "cases": cases, "configs": names, "small": args.small, "np": NP,
            "profile": str(Path(args.profile).resolve()) if args.profile else None,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv[1:]}
    try:
        meta["commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                        text=True).stdout.strip()
        meta["runtime_dirty"] = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "runtime/"],
                                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        pass
    runs = []
    t_start = time.time()
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731 (progress: stderr)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-one-call-") as tmp, steady_memory() as memory:
        tmp = Path(tmp)
        meta["memory"] = memory
        log(memory)
        (tmp / "home").mkdir()  # HOME and XDG_CONFIG_HOME of every job: no profile directory
        # TMP/lib/libiotame.so: its installation's profile directory, TMP/share/iotame/profiles, does not exist
        libs = {False: tmp / "lib" / "libiotame.so", True: tmp / "baseline" / "lib" / "libiotame.so"}
        libs[False].parent.mkdir(parents=True)
        shutil.copy2(setting.lib, libs[False])
        if args.baseline:
            libs[True].parent.mkdir(parents=True)
            meta["baseline"] = copy_baseline(args.baseline, libs[True])
        meta["lib_sha256"] = hashlib.sha256(libs[False].read_bytes()).hexdigest()
        meta["lib_mtime"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(setting.lib.stat().st_mtime))
        config_file = config_writer(tmp, args.profile)
        log(f"libiotame.so {meta['lib_sha256'][:12]} (built {meta['lib_mtime']}), commit {meta.get('commit')}"
            f"{' with runtime/ modified' if meta.get('runtime_dirty') else ''}; {len(cases)} cases x {len(names)} "
            f"configurations x {repeat} rounds")
        total, done = len(cases) * len(names) * repeat, 0
        for rep in range(repeat):
            order = names[rep % len(names):] + names[:rep % len(names)]
            for case in cases:
                for name in order:
                    t0 = time.time()
                    done += 1
                    try:
                        x = trial(case, name, args.small, tmp, libs[name.endswith(BASELINE)], config_file(name),
                                  setting)
                        line = f"write {x['write_mbs']:8.1f} MB/s  read {x['read_mbs']:8.1f} MB/s"
                        if base_name(name) in (AUTO, MODEL):
                            for op in ("write", "read"):
                                served, first, trusted, n = decisions_summary(x[f"{op}_selector"]["decisions"])
                                line += f"  {op}: {counts(served) or 'no decision'}" + (
                                    f" (first {counts(first)}; trusted {trusted}/{n})" if n else "")
                    except RuntimeError as e:
                        x = {"case": case, "config": name, "failed": True, "error": str(e)}
                        line = "FAILED: " + str(e).splitlines()[0]
                    x["repeat"] = rep + 1
                    runs.append(x)
                    log(f"[{done}/{total}] round {rep + 1} {case:11s} {name:15s} {line}  [{time.time() - t0:.1f} s, "
                        f"load {os.getloadavg()[0]:.1f}]")
    meta["seconds"] = round(time.time() - t_start, 1)
    data = {"meta": meta, "runs": runs}
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    text = report(data)
    log(f"{len(runs)} trials in {meta['seconds']:.0f} s")
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 1 if any(x.get("failed") for x in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
