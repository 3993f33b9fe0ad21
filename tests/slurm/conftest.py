"""The Slurm layer: a one-node Slurm started by scripts/slurm for the session (docs/slurm.md), jobs launched by
srun with the runtime. Skipped, with the reason, only where Slurm is not installed or cannot be started (not root).
This folder is a package (__init__.py) so that this file does not shadow tests/conftest.py."""
import os
import shutil
import subprocess

import pytest

from conftest import IOTAME_CLI, KERNEL, LIBIOTAME, ROOT   # tests/conftest.py: the build's paths

SCRIPT = ROOT / "scripts" / "slurm"
SLURM_DIR = "/run/iotame-slurm"
# Variables of ours, and of an allocation the suite may itself run in, kept out of the tests' jobs.
_KEEP_OUT = ("IOTAME_CONFIG", "IOTAME_STATS", "IOTAME_DISABLE", "IOTAME_ON_ERROR", "IOTAME_SRUN_MPI", "LD_PRELOAD")


def _programs_missing():
    return [p for p in ("munged", "slurmctld", "slurmd", "srun", "sbatch", "salloc", "sinfo") if not shutil.which(p)]


@pytest.fixture(scope="session", autouse=True)
def slurm():
    """Slurm up for the session, down after it; SLURM_CONF in the environment of every job the tests start."""
    missing = _programs_missing()
    if missing:
        pytest.skip(f"slurm-wlm not installed: {', '.join(missing)} missing (make setup, or apt-get install "
                    "slurm-wlm munge)", allow_module_level=True)
    if os.geteuid() != 0:
        pytest.skip("slurm-wlm not startable: scripts/slurm runs the daemons as root", allow_module_level=True)
    for k in list(os.environ):
        if k in _KEEP_OUT or k.startswith("SLURM_"):
            del os.environ[k]
    os.environ["SLURM_CONF"] = f"{SLURM_DIR}/slurm.conf"
    p = subprocess.run([SCRIPT, "up"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        subprocess.run([SCRIPT, "down"], capture_output=True, timeout=120)
        pytest.fail(f"scripts/slurm up exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    yield p.stdout
    p = subprocess.run([SCRIPT, "down"], capture_output=True, text=True, timeout=120)
    os.environ.pop("SLURM_CONF", None)
    assert p.returncode == 0, f"scripts/slurm down exited {p.returncode}: {p.stderr}"


def run(argv, timeout=120, **kw):
    """Runs argv (a list) and fails the test with its output when it exits non-zero."""
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kw)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, argv))} exited {p.returncode}\nstdout:\n{p.stdout}\n"
                             f"stderr:\n{p.stderr}")
    return p


__all__ = ["IOTAME_CLI", "KERNEL", "LIBIOTAME", "SCRIPT", "run"]
