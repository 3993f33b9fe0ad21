"""The cost model's recommendation for a workload: from the statistics of the default run and the machine profile
(`iotame calibrate`), a configuration of the tuner's space, each setting with its reason, and the gain the model
predicts. The tuner tries it first after the default; `iotame tune --recommend` prints it without searching.

- collective.strategy: the runtime records the model's predicted seconds of one call per strategy only when the
  model chooses (strategy auto with a profile). So, when the default made collective calls, the tuner makes one
  *model run*: the default configuration with strategy auto, the profile named and exam_budget 0 (the model's first
  choice serves every call, nothing is examined); its statistics' decisions hold per call signature the calls and
  each strategy's predicted seconds. The strategy recommended is the one of least predicted time over all the
  job's collective calls (calls x seconds, summed over signatures). A strategy the space lacks is expressed by the
  hints that do the same where there are such (independent: ROMIO's collective buffering off, data sieving on).
- throttle.readers / writers: the profile's storage.streams curve of the direction (throttle_level).
- staging.enabled: true when the writes reach the device within the job's I/O time: the profile's write-back
  absorbs nothing (absorbed_bytes 0), less than the job writes per node, or the runs make the written files
  durable at close (the tuner's measurement, `posix.sync_at_close`), when the close waits for the device anyway.
- hdf5.transfer collective: a rule, not the model: HDF5 files whose every rank makes the same calls, all
  independent, let the MPI-IO layer aggregate them once collective.
Only settings of the space with one of its values are recommended; the others are listed as left out, with why.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..calibrate.profile import ProfileError, load_profile
from ..config import save_config
from .measure import run_once
from .space import UNSET, Space, encode
from .workload import Workload

__all__ = ["MODEL_RUN", "MODEL_SEED", "TOLERANCE", "DEFAULT_STRATEGY", "Setting", "Recommendation",
           "model_run_config", "needs_model_run", "throttle_level", "strategy_times", "recommend", "no_profile",
           "recommend_for_default", "point_is_default", "curve_value"]

MODEL_RUN = {"strategy": "auto", "exam_budget": 0}
MODEL_SEED = "model"           # the seed label (user attribute) of the recommendation's trial
TOLERANCE = 0.05               # throttle: levels within this fraction of the curve's best count as equal
DEFAULT_STRATEGY = "passthrough"   # collective.strategy unset (runtime/settings.json)
COLLECTIVE_KEYS = (("collective", "strategy"), ("mpiio_hints", "romio_cb_write"), ("mpiio_hints", "romio_cb_read"))


@dataclass(frozen=True)
class Setting:
    """One recommended setting and why."""

    section: str
    name: str
    value: Any
    reason: str

    def to_json(self) -> dict:
        return {"setting": f"{self.section}.{self.name}", "value": self.value, "reason": self.reason}


@dataclass
class Recommendation:
    """What the model recommends: `settings` (in the space), `left` (considered, not recommended: (what, why)),
    `gains` per part (x over the default, None: not predicted), `message` when nothing could be recommended."""

    profile: str | None
    settings: list[Setting] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)
    gains: dict[str, float | None] = field(default_factory=dict)
    message: str | None = None

    def config(self, meta: Mapping[str, Any] | None = None) -> dict:
        """The runtime configuration of the recommended settings (`iotame run --config`)."""
        defaults: dict[str, dict] = {}
        for s in self.settings:
            defaults.setdefault(s.section, {})[s.name] = s.value
        out: dict[str, Any] = {"version": 1}
        if defaults:
            out["defaults"] = defaults
        if meta:
            out["meta"] = dict(meta)
        return out

    def point(self, space: Space) -> dict:
        """The recommendation as a point of `space` (canonical: what cannot act there is unset)."""
        return space.canonical(space.point_from_config(self.config()))

    def gain_text(self) -> str:
        """The predicted gain in words: a figure for the parts the model puts one on, "not predicted" for the rest."""
        parts = []
        for part, g in self.gains.items():
            parts.append(f"{part}: {'not predicted' if g is None else f'{g:.2f}x'}")
        return "; ".join(parts) or "nothing recommended"

    def to_json(self) -> dict:
        return {"profile": self.profile, "settings": [s.to_json() for s in self.settings],
                "left": [{"what": w, "why": y} for w, y in self.left], "gains": dict(self.gains),
                "message": self.message}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Recommendation":
        settings = [Setting(*s["setting"].split(".", 1), s["value"], s["reason"]) for s in d.get("settings", [])]
        return cls(d.get("profile"), settings, [(x["what"], x["why"]) for x in d.get("left", [])],
                   dict(d.get("gains") or {}), d.get("message"))


def no_profile(where: str) -> Recommendation:
    """No profile, no recommendation: how to make one."""
    return Recommendation(None, message=f"no machine profile for {where}: the model cannot recommend without one; "
                                        f"measure this machine with `iotame calibrate` (docs/calibrate.md), or "
                                        f"name a profile with --profile")


def model_run_config(profile: str | Path) -> dict:
    """The default configuration with the cost model choosing each collective call signature's strategy (see the
    module's documentation)."""
    return {"version": 1, "defaults": {"collective": {**MODEL_RUN, "profile": str(profile)}}}


def needs_model_run(space: Space, w: Workload) -> bool:
    """Whether the recommendation needs the model's predictions: collective calls, and a setting of the space that
    changes how they are served."""
    return w.collective_ops > 0 and any(space.find(s, n) is not None for s, n in COLLECTIVE_KEYS)


# --- throttle -------------------------------------------------------------------------------------------------------

def curve_value(pts: list[tuple[int, float]], x: int) -> float:
    """A streams curve (sorted points) at x streams: a power law between its points (straight in log-log), clamped
    beyond the last and before the first, as the runtime reads it."""
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            return y0 * (y1 / y0) ** (math.log(x / x0) / math.log(x1 / x0))
    return pts[-1][1]


def throttle_level(points: list, ppn: int, tolerance: float = TOLERANCE) -> int:
    """The throttle level the profile's streams curve predicts best for ppn processes per node, by the runtime's own
    rule (throttle_predict_level in runtime/src/throttle/control.c): among the curve's measured stream counts up to
    ppn, and ppn itself when it lies below the last, the highest level within `tolerance` of the best (fewer waits
    for the same throughput). 0: no prediction (a curve of one point says nothing of concurrency)."""
    pts = sorted((int(a), float(b)) for a, b in points)
    if len(pts) < 2 or ppn < 1:
        return 0
    levels = [x for x, _ in pts if x <= ppn]
    if ppn < pts[-1][0] and (not levels or levels[-1] < ppn):
        levels.append(ppn)
    values = {n: curve_value(pts, n) for n in levels}
    best = max(values.values())
    return max(n for n, v in values.items() if v >= (1 - tolerance) * best)


# --- collective strategy -----------------------------------------------------------------------------------------

def strategy_times(stats: Mapping[str, Any]) -> dict[str, float]:
    """Per strategy, the model's predicted seconds of all the job's collective calls: calls x one call's seconds,
    summed over the decisions of every file (a strategy counts only when predicted for every signature)."""
    totals: dict[str, float] = {}
    signatures = 0
    counts: dict[str, int] = {}
    for f in stats.get("files") or []:
        for d in f.get("decisions") or []:
            predicted = (d.get("model") or {}).get("predicted_s") or {}
            calls = int(d.get("calls") or 0)
            if not predicted or calls <= 0:
                continue
            signatures += 1
            for name, seconds in predicted.items():
                totals[name] = totals.get(name, 0.0) + calls * float(seconds)
                counts[name] = counts.get(name, 0) + 1
    return {n: t for n, t in totals.items() if counts[n] == signatures}


def _recommend_collective_seconds(stats: Mapping[str, Any]) -> float:
    """The default run's seconds in collective data calls (the slowest rank's, summed over files and calls)."""
    total = 0.0
    for f in stats.get("files") or []:
        for op, o in (f.get("ops") or {}).items():
            if "_all" in op and isinstance(o, dict):
                total += float((o.get("seconds") or {}).get("max", 0) or 0)
    return total


class _RecommendBuilder:
    """Collects settings, keeping only those of the space with one of its values."""

    def __init__(self, space: Space, rec: Recommendation):
        self.space, self.rec = space, rec

    def has(self, section: str, name: str, value: Any) -> bool:
        p = self.space.find(section, name)
        return p is not None and encode(value) in p.choices

    def add(self, section: str, name: str, value: Any, reason: str) -> bool:
        if not self.has(section, name, value):
            self.rec.left.append((f"{section}.{name}={value}", f"not in the tuner's space ({reason})"))
            return False
        self.rec.settings.append(Setting(section, name, value, reason))
        return True

    def leave(self, what: str, why: str) -> None:
        self.rec.left.append((what, why))


def _recommend_strategy(b: _RecommendBuilder, w: Workload, default_stats: Mapping | None,
                        model_stats: Mapping | None, reference: str) -> None:
    if not needs_model_run(b.space, w):
        return
    times = strategy_times(model_stats or {})
    if not times:
        b.leave("collective.strategy", "no prediction: the model run's statistics hold none (no profile matched "
                                       "the data files, or the run failed)")
        b.rec.gains["collective strategy"] = None
        return
    best = min(times, key=times.get)
    shown = ", ".join(f"{n} {t * 1e3:.1f} ms" for n, t in sorted(times.items(), key=lambda x: x[1]))
    gain = times[reference] / times[best] if reference in times and times[best] > 0 else None
    b.rec.gains["collective strategy"] = gain
    if default_stats and gain is not None:
        total = float((default_stats.get("summary") or {}).get("io_seconds", 0) or 0)
        coll = min(_recommend_collective_seconds(default_stats), total)
        if total > 0:
            b.rec.gains["job I/O time (collective calls' share)"] = total / (total - coll + coll / gain)
    if best == reference:
        b.leave(f"collective.strategy={best}", f"the default's strategy is the model's best (predicted: {shown})")
        return
    why = f"least predicted time of the job's collective calls ({shown})"
    if b.has("collective", "strategy", best):
        b.add("collective", "strategy", best, why)
    elif best == "independent":
        # the library's independent calls with data sieving: ROMIO's collective buffering off, sieving on
        hints = [(d, h, v) for d, ops in (("write", w.write_ops), ("read", w.read_ops)) if ops
                 for h, v in ((f"romio_cb_{d}", "disable"), (f"romio_ds_{d}", "enable"))]
        if not any(b.has("mpiio_hints", h, v) for _, h, v in hints):
            b.leave(f"collective.strategy={best}", f"not in the tuner's space, nor the hints that do it ({why})")
            return
        for _, h, v in hints:
            b.add("mpiio_hints", h, v, f"strategy independent, not in the space, as ROMIO's hints; {why}")
    else:
        b.leave(f"collective.strategy={best}", f"not in the tuner's space ({why})")


def _recommend_throttle(b: _RecommendBuilder, w: Workload, profile: Mapping, nodes: int) -> None:
    ppn = int(((profile.get("nodes") or {}).get("processes_per_node")) or 1)
    streams = (profile.get("storage") or {}).get("streams") or {}
    for direction, setting, ops in (("read", "readers", w.read_ops), ("write", "writers", w.write_ops)):
        if not ops or b.space.find("throttle", setting) is None:
            continue
        points = streams.get(direction)
        if not points:
            b.leave(f"throttle.{setting}", f"the profile has no {direction} streams curve")
            continue
        level = throttle_level(points, ppn)
        curve = ", ".join(f"{int(x)}: {y:g}" for x, y in points)
        if not level:
            b.leave(f"throttle.{setting}", f"the profile's {direction} streams curve ({curve} MB/s) has one point: "
                                           f"it says nothing of concurrency")
            continue
        measured = max(int(x) for x, _ in points)
        if level < ppn and measured < ppn:
            b.leave(f"throttle.{setting}", f"the profile's {direction} streams curve ({curve} MB/s) stops at "
                                           f"{measured} streams, below the node's {ppn} processes: a static level "
                                           f"would be a guess (calibrate with --streams {ppn}; throttle auto "
                                           f"measures the levels above)")
            continue
        if level >= ppn:
            b.leave(f"throttle.{setting}", f"the profile's {direction} streams curve ({curve} MB/s) is best with "
                                           f"every process of a node ({ppn}): no limit, the default")
            continue
        b.add("throttle", setting, level * nodes,
              f"the profile's {direction} streams curve ({curve} MB/s) is best at {level} of {ppn} processes a node")
        b.rec.gains[f"throttle.{setting}"] = None


def _recommend_staging(b: _RecommendBuilder, w: Workload, profile: Mapping, nodes: int, durable: bool) -> None:
    if not w.write_ops or b.space.find("staging", "enabled") is None:
        return
    absorbed = int(((profile.get("storage") or {}).get("write_back") or {}).get("absorbed_bytes") or 0)
    per_node = w.bytes_written / max(1, nodes)
    mib = 1 << 20
    if durable:
        why = "the runs make written files durable at close, so the writes reach the device within the I/O time"
    elif absorbed == 0:
        why = "the profile's write-back absorbs nothing (synchronous writes)"
    elif absorbed < per_node:
        why = f"the job writes {per_node / mib:.0f} MiB a node, more than the page cache absorbs " \
              f"({absorbed / mib:.0f} MiB)"
    else:
        b.leave("staging.enabled", f"the page cache absorbs the job's writes ({per_node / mib:.0f} MiB a node of "
                                   f"{absorbed / mib:.0f} MiB)")
        return
    b.add("staging", "enabled", True, f"{why}: staged writes return once copied and are written behind")
    b.rec.gains["staging"] = None


def _recommend_hdf5_transfer(b: _RecommendBuilder, w: Workload) -> None:
    if not (w.hdf5_files and w.hdf5_same_calls and w.collective_ops == 0 and w.independent_ops):
        return
    if b.add("hdf5", "transfer", "collective", "rule: every rank makes the same HDF5 calls, all independent; "
                                               "collective transfers let the MPI-IO layer aggregate them"):
        b.rec.gains["hdf5.transfer"] = None


def recommend(w: Workload, profile: Mapping | None, space: Space, *, profile_path: str | None = None,
              default_stats: Mapping | None = None, model_stats: Mapping | None = None, durable: bool = True,
              reference: str = DEFAULT_STRATEGY, where: str = "the job's directory") -> Recommendation:
    """The recommendation for workload `w` under `profile` (None: none, with how to make one), in `space` (the
    tuner's space, pruned for the workload). `default_stats`: the default run's statistics (the job's I/O time);
    `model_stats`: the model run's (the predictions); `durable`: the runs sync written files at close;
    `reference`: the collective strategy in force in the default run."""
    if profile is None:
        return no_profile(where)
    rec = Recommendation(profile_path)
    b = _RecommendBuilder(space, rec)
    ppn = int(((profile.get("nodes") or {}).get("processes_per_node")) or 1)
    nodes = max(1, math.ceil(w.nprocs / ppn)) if w.nprocs else 1
    _recommend_strategy(b, w, default_stats, model_stats, reference)
    _recommend_throttle(b, w, profile, nodes)
    _recommend_staging(b, w, profile, nodes, durable)
    _recommend_hdf5_transfer(b, w)
    if not rec.settings:
        rec.message = "the model recommends the default configuration for this workload"
    return rec


def point_is_default(rec: Recommendation, space: Space) -> bool:
    return all(v == UNSET for v in rec.point(space).values())


def recommend_for_default(argv: list, config_for_run: Callable[[dict], dict], profile_path: Path | None,
                          space: Space, w: Workload | None, default_stats_path: Path | None, out: Path, *,
                          durable: bool, reference: str, where: str, cwd: Path | None = None,
                          timeout: float | None = None, page_cache=None) -> Recommendation:
    """The recommendation after the tuner's default run: the profile loaded, the model run made when needed (in
    `out`, with the configuration `config_for_run(model_run_config(profile))` gives: the study's base and
    measurement), the recommendation computed. A profile that cannot be read gives a recommendation of nothing
    with the reason."""
    if profile_path is None:
        return no_profile(where)
    if w is None:
        return Recommendation(str(profile_path), message="the default run left no statistics: no workload to "
                                                         "recommend for")
    try:
        profile = load_profile(profile_path)
    except ProfileError as e:
        return Recommendation(str(profile_path), message=f"the machine profile cannot be used: {e}")
    default_stats = _recommend_read_json(default_stats_path)
    model_stats = None
    if needs_model_run(space, w):
        out.mkdir(parents=True, exist_ok=True)
        path = save_config(config_for_run(model_run_config(profile_path)), out / "config.json")
        o = run_once(argv, path, out / "run", "io-bandwidth", timeout=timeout, cwd=cwd, page_cache=page_cache)
        model_stats = _recommend_read_json(out / "run" / "stats.json") if o.error is None else None
    return recommend(w, profile, space, profile_path=str(profile_path), default_stats=default_stats,
                     model_stats=model_stats, durable=durable, reference=reference, where=where)


def _recommend_read_json(path: Path | None) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError):
        return None
