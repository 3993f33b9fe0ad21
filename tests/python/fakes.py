"""Stand-ins for the pure-Python tests, no MPI and no build needed (the fixtures are in conftest.py):
FakeProgram plays an MPI program or iotame-kernel (prints what its plan says, writes statistics when
IOTAME_STATS is set, logs its arguments and environment), Direct is a launcher that runs the program itself."""
import json
import sys
from pathlib import Path

from iotame.runner import Launcher


def make_stats(bytes_written=2097152, bytes_read=1048576, io_seconds=0.5, path="/tmp/x.dat"):
    """A small statistics object in the format of docs/formats.md."""
    total = bytes_read + bytes_written
    return {
        "version": 1, "iotame_version": "0.1.0", "mpi": "MPICH 4.0.2", "nprocs": 2,
        "config": None, "config_error": None, "wall_seconds": 1.0,
        "summary": {"bytes_read": bytes_read, "bytes_written": bytes_written, "read_seconds": 0.1,
                    "write_seconds": 0.3, "sync_seconds": 0.05, "meta_seconds": 0.05, "io_seconds": io_seconds,
                    "read_mbs": bytes_read / 0.1 / 1e6, "write_mbs": bytes_written / 0.3 / 1e6,
                    "io_mbs": total / io_seconds / 1e6},
        "files": [{"path": path, "ranks": 2, "opens": 2, "bytes_read": bytes_read, "bytes_written": bytes_written,
                   "rule": None, "hints": {},
                   "ops": {"open": {"count": 2}, "write_at_all": {"count": 4, "bytes": bytes_written},
                           "read_at": {"count": 3, "bytes": bytes_read}, "close": {"count": 2}},
                   "time": {"read": {"min": 0.05, "avg": 0.08, "max": 0.1},
                            "write": {"min": 0.2, "avg": 0.25, "max": 0.3},
                            "sync": {"min": 0, "avg": 0, "max": 0.05}, "meta": {"min": 0, "avg": 0, "max": 0.05}},
                   "histogram": {"read": {}, "write": {"524288": 4}}, "decisions": [], "passthrough_reasons": {}}],
        "passthrough_reasons": {},
    }


FAKE_PROGRAM = r'''#!{python}
"""A stand-in for an MPI program under the runtime: behaves as the plan file says, run after run."""
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
counter = os.path.join(here, "count")
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
plan = json.load(open(os.path.join(here, "plan.json")))
step = plan[min(n, len(plan) - 1)]
with open(os.path.join(here, "log.jsonl"), "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "env": {{k: os.environ.get(k) for k in
               ("LD_PRELOAD", "IOTAME_CONFIG", "IOTAME_STATS")}}}}) + "\n")
if os.environ.get("IOTAME_STATS") and step.get("stats"):
    json.dump(step["stats"], open(os.environ["IOTAME_STATS"], "w"))
for rank, partial in (step.get("partials") or {{}}).items():
    json.dump(partial, open(os.environ["IOTAME_STATS"] + ".partial." + rank, "w"))
sys.stdout.write(step.get("stdout", ""))
sys.stderr.write(step.get("stderr", ""))
sys.exit(step.get("exit", 0))
'''


class FakeProgram:
    """Writes the program and its plan: a list of steps {"exit", "stdout", "stderr", "stats", "partials"
    (rank -> partial statistics)}, one per run."""

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self.path = directory / "fake-program"
        self.path.write_text(FAKE_PROGRAM.format(python=sys.executable))
        self.path.chmod(0o755)
        self.plan([{}])

    def plan(self, steps):
        (self.dir / "plan.json").write_text(json.dumps(steps))

    def log(self):
        p = self.dir / "log.jsonl"
        return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def kernel_result(write_mbs=100.0, read_mbs=200.0, verified=True):
    return {"kernel": "ior", "nprocs": 2, "params": {},
            "phases": [{"name": "write", "bytes": 2097152, "seconds": 2097152 / write_mbs / 1e6, "mbs": write_mbs},
                       {"name": "read", "bytes": 2097152, "seconds": 2097152 / read_mbs / 1e6, "mbs": read_mbs}],
            "verified": verified, "errors": []}


class Direct(Launcher):
    """Runs the program itself, once, in place of `mpiexec -n N program`."""

    name = "direct"
    program = "env"

    def command(self, nprocs, argv, env_names=()):
        return [str(a) for a in argv]

