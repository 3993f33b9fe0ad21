"""The cost model fitted to the strategies' measured calls (issue 48, item 2; the contract of the profile's
`strategies` section, docs/formats.md): per strategy, a least-squares fit on log time of the measured seconds
against the model's raw prediction (`iotame-config predict`, the runtime's own model), as a factor exp(coef .
features) of a call's piece size, bytes per process, direction and interleaving, and its leave-one-out
cross-validated error."""
from __future__ import annotations

import json
import math
import statistics
import tempfile
from pathlib import Path

import numpy as np

from ..config import run_config_tool
from ..errors import IotameError

__all__ = ["FEATURES", "RIDGE", "MIN_ROWS", "REACH", "NOISE_MIN", "features", "row_features", "fitted_seconds",
           "anchor_weight", "fit_strategies", "raw_predictions", "setup_seconds", "steady_seconds"]

FEATURES = ("one", "u", "u2", "write", "interleaved", "first", "v")
RIDGE = 1e-3       # penalty on every coefficient but `one`: a rank-deficient design stays finite
MIN_ROWS = 3       # a strategy with fewer measured rows gets no fit
REACH = 4.0        # an anchor's reach in octaves of piece and call size: a size step of calibrate's design (64 B, 1 KiB, ...)
NOISE_MIN = 0.05   # log error of an anchor at least: a lead under hypot(0.05, 0.05) = 7 % is not worth trusting
_CALL_KEYS = ("nprocs", "nodes", "ppn", "bytes", "pieces", "piece", "gap", "targets", "unit", "sieves")


def features(piece: float, write: bool | int, interleaved: bool | int, first: float = 0.0,
             process_bytes: float = 1 << 19) -> list[float]:
    """The features of a call (the contract's, the same in the runtime): one; u = clamp((log2(piece) - 14) / 8, -1,
    1), so 64 B -> -1, 16 KiB -> 0, 4 MiB -> 1; u2 = u * u; write and interleaved as 1 or 0; first: 1 for a
    handle's first call (the runtime), for a measured phase of C calls 1 / C (the first call's share of it); v =
    clamp((log2(bytes per process and call) - 19) / 5, -1, 1), so 16 KiB -> -1, 512 KiB -> 0, 16 MiB -> 1."""
    u = min(1.0, max(-1.0, (math.log2(max(float(piece), 1.0)) - 14.0) / 8.0))
    v = min(1.0, max(-1.0, (math.log2(max(float(process_bytes), 1.0)) - 19.0) / 5.0))
    return [1.0, u, u * u, 1.0 if write else 0.0, 1.0 if interleaved else 0.0, float(first), v]


def row_features(row: dict) -> list[float]:
    """The features of a measured row (its calls' piece, bytes per process, direction and layout; first 1 / calls)."""
    return features(row["piece"], row["op"] == "write", row.get("interleaved"), 1.0 / row["calls"],
                    row.get("bytes", 0) / max(int(row.get("nprocs", 1)), 1))


def anchor_weight(anchors: list, f: list[float]) -> tuple[float, list | None]:
    """(weight, anchor) of the nearest anchor [u, v, write, interleaved, r, noise] of the call's operation and layout
    (features f): weight (1 - distance / REACH) (1 - first), 0 beyond, the distance in octaves (u and v unscaled:
    twice the piece size or the call size is one octave away); (0, None) when there is none. An anchor measures
    the calls after a phase's first: a handle's first call (first 1) is the fit's alone."""
    best, nearest = None, None
    for a in anchors:
        if a[2] == f[3] and a[3] == f[4]:
            d = math.hypot(8.0 * (a[0] - f[1]), 5.0 * (a[1] - f[6]))     # u and v back to octaves (features)
            if best is None or d < best:
                best, nearest = d, a
    return (0.0, None) if nearest is None else (max(0.0, 1.0 - best / REACH) * (1.0 - f[5]), nearest)


def fitted_seconds(fit_entry: dict, raw: float, piece: float, write: bool | int, interleaved: bool | int,
                   first: float = 0.0, process_bytes: float = 1 << 19) -> float:
    """The fitted seconds of one call: the model's raw seconds times exp(coef . features + w r), r the residual of
    the nearest anchor and w its weight; a fit of an earlier profile, with fewer coefficients or no anchors, leaves
    out what it lacks."""
    f = features(piece, write, interleaved, first, process_bytes)
    w, a = anchor_weight(fit_entry.get("anchors") or [], f)
    return raw * math.exp(float(np.dot(fit_entry["coef"], f[:len(fit_entry["coef"])])) + (w * a[4] if a else 0.0))


def _call(row: dict) -> dict:
    call = {k: int(row.get(k, 0)) for k in _CALL_KEYS}
    call.update(op=row["op"], interleaved=bool(row.get("interleaved", False)), setup_seconds=0.0)
    return call


def raw_predictions(profile: dict, rows: list[dict]) -> list[dict[str, float]]:
    """The model's raw seconds of a steady call of each measured row's signature under every kind (no set-up: the
    set-up a strategy measured is taken out of its rows' times instead, steady_seconds). One run of
    `iotame-config predict` on the profile; IotameError when it fails."""
    if not rows:
        return []
    index: dict[str, int] = {}
    for r in rows:
        index.setdefault(json.dumps(_call(r), sort_keys=True), len(index))
    calls = list(index)
    with tempfile.TemporaryDirectory(prefix="iotame-fit-") as tmp:
        path = Path(tmp) / "profile.json"
        path.write_text(json.dumps(profile), encoding="utf-8")
        p = run_config_tool(["predict", str(path)], "\n".join(calls) + "\n")
    answers = p.stdout.splitlines()
    if p.returncode != 0 or len(answers) != len(calls):
        why = p.stderr.strip() or f"exit status {p.returncode}, {len(answers)} answers to {len(calls)} calls"
        raise IotameError(f"iotame-config predict: {why}")
    raws = [json.loads(a)["raw"] for a in answers]
    return [raws[index[json.dumps(_call(r), sort_keys=True)]] for r in rows]


def steady_seconds(seconds: float, calls: int, setup: float) -> float:
    """A steady call's seconds in a measured phase of `calls` calls whose mean call took `seconds` and whose first
    call added `setup` (setup_seconds): seconds - setup / calls, at least a tenth of seconds (a row whose own first
    call cost less than the strategy's median set-up keeps most of its time)."""
    return max(seconds - setup / calls, 0.1 * seconds)


def _solve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Ridge least squares of y on the columns of x that vary over its rows (`one` always kept, unpenalized); the
    coefficients of the others 0."""
    keep = [0] + [j for j in range(1, x.shape[1]) if np.ptp(x[:, j]) > 0]
    penalty = math.sqrt(RIDGE) * np.eye(len(keep))[1:]
    a = np.vstack([x[:, keep], penalty])
    b = np.concatenate([y, np.zeros(len(keep) - 1)])
    solved = np.linalg.lstsq(a, b, rcond=None)[0]
    coef = np.zeros(x.shape[1])
    coef[keep] = solved
    return coef


def _spread(seconds: list[float]) -> float:
    """The standard deviation of a row's log seconds over its repeats (at least two)."""
    return statistics.stdev(math.log(s) for s in seconds)


def _noise(seconds: list[float], typical: float | None) -> float | None:
    """The log standard error of a row's median over its repeats (1.25 sigma / sqrt(n)), at least NOISE_MIN; for a
    row measured once (calibrate's budget cut its repeats) the calibration's typical spread `typical`, or None
    when there is none to say it."""
    if len(seconds) < 2:
        return None if typical is None else max(NOISE_MIN, typical)
    return max(NOISE_MIN, 1.2533 * _spread(seconds) / math.sqrt(len(seconds)))


def _fit_one(x: np.ndarray, y: np.ndarray, noise: list[float | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The coefficients on every row, the leave-one-out residuals y_i - x_i . coef(without row i), and the anchored
    leave-one-out residuals: the same less the weighted residual, under coef(without row i), of the nearest other
    row that is an anchor (noise not None)."""
    coef = _solve(x, y)
    loo, anchored = np.empty(len(y)), np.empty(len(y))
    for i in range(len(y)):
        others = np.arange(len(y)) != i
        c = _solve(x[others], y[others])
        loo[i] = y[i] - x[i] @ c
        anchors = [[x[j, 1], x[j, 6], x[j, 3], x[j, 4], y[j] - x[j] @ c] for j in range(len(y))
                   if j != i and noise[j] is not None]
        w, a = anchor_weight(anchors, list(x[i]))
        anchored[i] = loo[i] - (w * a[4] if a else 0.0)
    return coef, loo, anchored


def _target(row: dict, where: str) -> float:
    """The row's median seconds; ValueError naming the key when the row cannot be fitted."""
    if row.get("op") not in ("write", "read"):
        raise ValueError(f"{where}.op: expected \"write\" or \"read\", got {json.dumps(row.get('op'))[:40]}")
    for key in ("piece", "calls"):
        if not isinstance(row.get(key), int) or isinstance(row.get(key), bool) or row[key] < 1:
            raise ValueError(f"{where}.{key}: expected an integer >= 1, got {json.dumps(row.get(key))[:40]}")
    seconds = row.get("seconds")
    if not isinstance(seconds, list) or not seconds or \
            not all(isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0 for s in seconds):
        raise ValueError(f"{where}.seconds: expected a list of seconds > 0, got {json.dumps(seconds)[:40]}")
    return statistics.median(seconds)


def setup_seconds(rows: list[dict], members: list[int], targets: list[float]) -> dict[str, float]:
    """What a handle's first call of the strategy costs beyond a steady call, per operation: the median over the
    signatures measured both as a phase of one call (t1) and of C calls (mean tC) of t1 - s, s = (C tC - t1) / (C - 1)
    the steady call; at least 0. The engine strategies' first call sets up what the handle's later calls share (a
    shadow handle, the node groups), a cost of the file system's opens, not of the call's bytes, so it is an amount
    of seconds, not a factor. Operations without such a pair are left out."""
    phases: dict[tuple, dict[int, float]] = {}
    for i in members:
        r = rows[i]
        key = (r["op"], r["piece"], r.get("pieces"), bool(r.get("interleaved")), r.get("bytes"), r.get("nprocs"),
               r.get("nodes"), r.get("targets"), r.get("unit"))
        phases.setdefault(key, {})[r["calls"]] = targets[i]
    extra: dict[str, list[float]] = {}
    for key, by_calls in phases.items():
        several = [c for c in by_calls if c > 1]
        if 1 not in by_calls or not several:
            continue
        c = max(several)
        steady = (c * by_calls[c] - by_calls[1]) / (c - 1)
        extra.setdefault(key[0], []).append(by_calls[1] - steady)
    return {op: round(max(0.0, statistics.median(v)), 9) for op, v in sorted(extra.items())}


def fit_strategies(profile: dict) -> dict:
    """The contract's `strategies.fit` object from profile["strategies"]["measured"]: per strategy with at least
    MIN_ROWS rows, the coefficients of log(steady / raw) on FEATURES (steady: a row's measured seconds less its
    strategy's set-up share, steady_seconds; raw: a steady call's, raw_predictions), the rows, each row's leave-one-out
    residual of the fit [u, v, write, interleaved, r], the anchors (rows of several calls: [u, v, write,
    interleaved, in-sample residual, noise]), the median and largest relative error (exp|r| - 1) of the model as
    the runtime applies it (fit and anchor) with each row left out, and the set-up a first call adds
    (setup_seconds, per operation measured so). ValueError for a malformed row, IotameError when
    the model cannot be run."""
    rows = (profile.get("strategies") or {}).get("measured") or []
    targets = [_target(r, f"strategies.measured[{i}]") for i, r in enumerate(rows)]
    by_strategy: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_strategy.setdefault(r.get("strategy"), []).append(i)
    # the fit and the anchors are of steady calls, the set-up each strategy measured taken out of its rows: the
    # selector predicts calls after a strategy's first and adds the set-up itself where it counts (deferral); the
    # equations' own set-up (two opens of the file) would stand for the application's open, which on a network file
    # system's client can cost many times the engine's set-up, and the anchors would take it for faster calls
    setups = {s: setup_seconds(rows, members, targets) for s, members in by_strategy.items()}
    raws = raw_predictions(profile, rows)
    for i, r in enumerate(rows):
        if r.get("strategy") not in raws[i]:
            raise ValueError(f"strategies.measured[{i}].strategy: expected one of {', '.join(raws[i])}, got "
                             f"{json.dumps(r.get('strategy'))}")
        if not raws[i][r["strategy"]] or raws[i][r["strategy"]] <= 0:
            raise IotameError(f"strategies.measured[{i}]: the model predicts no time for {r['strategy']}")
    # a row measured once has no spread of its own: the median over the rows of several calls measured more often
    spreads = [_spread(r["seconds"]) for r in rows if r["calls"] > 1 and len(r["seconds"]) > 1]
    typical = statistics.median(spreads) if spreads else None
    fits = {}
    for strategy, members in by_strategy.items():
        # the rows of several calls, whose steady calls are what the selector predicts; a one-call row's steady call
        # is its time less the whole set-up, a difference of two noisy amounts, and it counts only in the set-up
        several = [i for i in members if rows[i]["calls"] > 1]
        members = several if len(several) >= MIN_ROWS else members
        if len(members) < MIN_ROWS:
            continue
        x = np.array([row_features(rows[i]) for i in members])
        y = np.array([math.log(steady_seconds(targets[i], rows[i]["calls"], setups[strategy].get(rows[i]["op"], 0.0)))
                      - math.log(raws[i][strategy]) for i in members])
        # an anchor: a row of several calls (the selector predicts calls after a phase's first)
        noise = [_noise(rows[i]["seconds"], typical) if rows[i]["calls"] > 1 else None for i in members]
        coef, loo, anchored = _fit_one(x, y, noise)
        errors = np.expm1(np.abs(anchored))
        fits[strategy] = {"coef": [float(c) for c in coef], "rows": len(members),
                          "residuals": [[round(float(xi[1]), 6), round(float(xi[6]), 6), int(xi[3]), int(xi[4]),
                                         round(float(r), 6)] for xi, r in zip(x, loo)],
                          "anchors": [[round(float(xi[1]), 6), round(float(xi[6]), 6), int(xi[3]), int(xi[4]),
                                       round(float(yi - xi @ coef), 6), round(n, 6)]
                                      for xi, yi, n in zip(x, y, noise) if n is not None],
                          "cv_median": round(float(np.median(errors)), 6), "cv_max": round(float(errors.max()), 6)}
        if setups[strategy]:
            fits[strategy]["setup"] = setups[strategy]
    return {"features": list(FEATURES), "strategies": fits}
