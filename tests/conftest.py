"""Shared fixtures: where the build is, a helper that runs real mpiexec jobs, and the sample of a long matrix that
`make test` takes (`make test-all` takes all of it)."""
import datetime
import json
import os
import random
import subprocess
from pathlib import Path

import pytest

# tests/mpi/kernel_helpers.py holds the kernel tests' shared checks: rewrite its asserts as in test modules.
pytest.register_assert_rewrite("kernel_helpers")

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
LIBIOTAME = BUILD / "runtime" / "libiotame.so"
KERNEL = BUILD / "kernels" / "iotame-kernel"
TEST_PROGRAMS = BUILD / "tests"
IOTAME_CLI = ROOT / ".venv" / "bin" / "iotame"

# Long matrices (docs/reliability.md, "Running the tests"): `make test` runs a sample of each, drawn with
# IOTAME_SAMPLE_SEED (default: the day; tests/run_all.sh sets it once for every layer and prints it), and
# `make test-all` runs every case (IOTAME_FULL_MATRIX=1).
FULL_MATRIX = os.environ.get("IOTAME_FULL_MATRIX") == "1"
SAMPLE_SEED = os.environ.get("IOTAME_SAMPLE_SEED") or datetime.date.today().isoformat()


def sample(cases, k, salt, cover=()):
    """k of a matrix's cases (tuples of parameters, or single values), in their order: every case with
    IOTAME_FULL_MATRIX=1; else drawn with IOTAME_SAMPLE_SEED and salt (the test's name, so that matrices draw apart).
    cover: positions in the tuples whose every value the sample holds (every strategy, every rank count), even where
    that takes more than k cases. The same seed gives the same cases in every process (pytest and its workers
    collect the same tests)."""
    cases = list(cases)
    if FULL_MATRIX or k >= len(cases):
        return cases

    def values(case):
        return {(i, repr(case[i])) for i in cover}

    order = random.Random(f"{SAMPLE_SEED}/{salt}").sample(range(len(cases)), len(cases))
    missing = set().union(*(values(cases[i]) for i in order))
    chosen = []
    while missing:   # the case that brings the most values not yet taken (the first drawn of those)
        best = max(order, key=lambda i: len(values(cases[i]) & missing))
        chosen.append(best)
        missing -= values(cases[best])
    chosen += [i for i in order if i not in chosen][:max(0, k - len(chosen))]
    return [cases[i] for i in sorted(chosen)]


# Environment variables of ours that must not leak from the caller into a test's job.
_OURS = ("IOTAME_CONFIG", "IOTAME_STATS", "IOTAME_DISABLE", "IOTAME_ON_ERROR", "IOTAME_VERBOSE", "IOTAME_PROFILE",
         "LD_PRELOAD")


def iotame_vars(preload=False, config=None, stats=None, extra=None, lib=LIBIOTAME):
    """The variables of ours a job gets: the preloaded runtime (lib), the configuration and statistics files, extra."""
    out = {}
    if preload:
        out["LD_PRELOAD"] = str(lib)
    if config is not None:
        out["IOTAME_CONFIG"] = str(config)
    if stats is not None:
        out["IOTAME_STATS"] = str(stats)
    out.update(extra or {})
    return out


class Job:
    """Runs `mpiexec -n N program args` with or without the runtime preloaded."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        # the jobs' XDG_CONFIG_HOME: no machine profile of the caller's (docs/calibrate.md); beside tmp, since
        # programs keep their own configuration there too (matplotlib) and tests check what tmp holds
        self.xdg = tmp_path.parent / f"{tmp_path.name}.xdg"

    def env(self, preload=False, config=None, stats=None, extra=None):
        env = {k: v for k, v in os.environ.items() if k not in _OURS}
        env["XDG_CONFIG_HOME"] = str(self.xdg)
        env.update(iotame_vars(preload, config, stats, extra))
        return env

    def run(self, n, argv, preload=False, config=None, stats=None, extra_env=None, check=True, timeout=120):
        cmd = ["mpiexec", "-n", str(n)] + [str(a) for a in argv]
        p = subprocess.run(cmd, env=self.env(preload, config, stats, extra_env), cwd=self.tmp,
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def kernel(self, n, name, *args, **kw):
        """Runs one kernel and returns (parsed JSON result, completed process)."""
        p = self.run(n, [KERNEL, name, *args], **kw)
        result = json.loads(p.stdout) if p.stdout.strip().startswith("{") else None
        return result, p


@pytest.fixture
def job(tmp_path):
    return Job(tmp_path)


def write_json(path, obj):
    Path(path).write_text(json.dumps(obj, indent=1))
    return Path(path)


def flip_byte(path, offset):
    """Corrupts one byte of a file in place (between a kernel's write and read runs)."""
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


def collective_config(path, match="*", **collective):
    """A configuration whose rule for `match` sets the collective section (virtual nodes of one rank by default,
    so that node_local has several nodes on this one machine; no readahead by default, so that a read candidate's
    transition is one call, as a write's, and the tests' small files are examined: test_read_transitions_* test it)."""
    collective.setdefault("virtual_node_size", 1)
    collective.setdefault("readahead", 0)
    collective = {k: v for k, v in collective.items() if v is not None}  # None: the key left out
    return write_json(path, {"version": 1, "files": [{"match": match, "collective": collective}]})


def file_stats(stats_path, name):
    """The statistics of the one file whose path ends with name."""
    (f,) = [f for f in json.loads(stats_path.read_text())["files"] if f["path"].endswith(name)]
    return f


def served(f):
    """Calls per strategy that served the file's collective calls."""
    return {k: v["calls"] for k, v in f.get("strategies", {}).items()}
