"""A second libiotame.so measured beside the current one (the bench scripts' --baseline: say, the commit before a
change): every configuration that preloads the runtime also runs with it, named NAME@baseline, in the same rounds,
and the report gives the ratio of medians current / baseline with its paired bootstrap interval."""
from __future__ import annotations

import hashlib
import random
import shutil
import statistics
from pathlib import Path

__all__ = ["BASELINE", "base_name", "with_baseline", "copy_baseline", "ratio_interval"]

BASELINE = "@baseline"  # a configuration run with the --baseline library: "auto@baseline"


def base_name(name: str) -> str:
    """The configuration a name runs (NAME@baseline runs NAME)."""
    return name.removesuffix(BASELINE)


def with_baseline(names: list, preloads) -> list:
    """names with NAME@baseline after each NAME for which preloads(NAME) is true (the baseline library changes
    nothing in a job that does not load the runtime)."""
    return [x for n in names for x in ([n, n + BASELINE] if preloads(n) else [n])]


def copy_baseline(path: str | Path, dest: Path) -> dict:
    """Copies the --baseline library to dest (SystemExit naming the option when it is no file); its meta data for
    the report."""
    src = Path(path)
    if not src.is_file():
        raise SystemExit(f"--baseline {src}: no such file (expected a libiotame.so)")
    shutil.copy2(src, dest)
    return {"path": str(src), "sha256": hashlib.sha256(dest.read_bytes()).hexdigest()}


def ratio_interval(a: dict, b: dict, seed: int = 1, draws: int = 2000, level: float = 0.90) -> tuple:
    """The ratio of medians a / b (repeat -> value each) and its paired bootstrap interval: the repeats both have are
    resampled together, since one row's trials of one repeat ran back to back and share the machine's state.
    (nan, nan) as the interval with fewer than 3 common repeats."""
    med = statistics.median
    r = med(list(a.values())) / med(list(b.values()))
    keys = sorted(set(a) & set(b))
    if len(keys) < 3:
        return r, float("nan"), float("nan")
    rng = random.Random(seed)
    rs = sorted(med([a[k] for k in pick]) / med([b[k] for k in pick])
                for pick in ([rng.choice(keys) for _ in keys] for _ in range(draws)))
    return r, rs[int((1 - level) / 2 * draws)], rs[int((1 + level) / 2 * draws) - 1]
