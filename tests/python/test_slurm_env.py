"""Slurm without a cluster: the allocation read from SLURM_* variables, the srun template and its --mpi plugin,
`iotame tune` choosing srun by itself inside an allocation, and SLURM_EXPORT_ENV keeping our variables."""
import pytest

from iotame.cli import main
from iotame.errors import UsageError
from iotame.runner import runtime_env
from iotame.runner.env import slurm_export
from iotame.tune.job import SRUN_MPI, hostlist_count, resolve_job, slurm_allocation, srun_mpi

ALLOC = {"SLURM_JOB_ID": "42", "SLURM_NTASKS": "4", "SLURM_JOB_NODELIST": "n[01-02]", "SLURM_JOB_NUM_NODES": "2"}


@pytest.fixture(autouse=True)
def no_slurm(monkeypatch):
    """The tests' own environment must not be an allocation (the suite may itself run inside one)."""
    for name in ("SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_EXPORT_ENV",
                 "IOTAME_SRUN_MPI"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("nodelist, n", [
    ("vm", 1), ("n01,n02", 2), ("n[01-04]", 4), ("n[01-04,07],gpu1", 6), ("a[1-2],b[3],c", 4), ("x[0-9]", 10),
])
def test_hostlist_count(nodelist, n):
    assert hostlist_count(nodelist) == n


def test_allocation_from_the_environment():
    a = slurm_allocation(ALLOC)
    assert (a.job_id, a.ntasks, a.nodes, a.nodelist) == ("42", 4, 2, "n[01-02]")
    assert a.describe() == "Slurm job 42 (4 tasks on 2 nodes: n[01-02])"
    # without SLURM_JOB_NUM_NODES the nodes are counted in the list
    a = slurm_allocation({"SLURM_JOB_ID": "7", "SLURM_NTASKS": "1", "SLURM_JOB_NODELIST": "c[1-3,5]"})
    assert a.nodes == 4 and a.describe() == "Slurm job 7 (1 task on 4 nodes: c[1-3,5])"
    # both the job and its task count are needed: sbatch -N 2 without -n has no SLURM_NTASKS
    assert slurm_allocation({"SLURM_JOB_ID": "7"}) is None
    assert slurm_allocation({"SLURM_NTASKS": "2"}) is None
    assert slurm_allocation({}) is None
    with pytest.raises(UsageError, match=r"SLURM_NTASKS='x' in Slurm job 7: expected a positive task count"):
        slurm_allocation({"SLURM_JOB_ID": "7", "SLURM_NTASKS": "x"})


def test_srun_mpi_choice_in_one_place():
    assert srun_mpi("pmix", {"IOTAME_SRUN_MPI": "pmi2"}) == "pmix"        # the option wins
    assert srun_mpi(None, {"IOTAME_SRUN_MPI": "pmi2"}) == "pmi2"         # then the environment
    assert srun_mpi("default", {}) is None                                # the cluster's MpiDefault
    assert SRUN_MPI == {"MPICH": "pmi2", "Open MPI": "pmix"}
    with pytest.raises(UsageError, match="expected a plugin name"):
        srun_mpi("pmi2 --x", {})


def test_srun_mpi_default_follows_the_detected_mpi(monkeypatch):
    import iotame.info
    monkeypatch.setattr(iotame.info, "mpi_info", lambda: {"implementation": "Open MPI"})
    assert srun_mpi(None, {}) == "pmix"
    monkeypatch.setattr(iotame.info, "mpi_info", lambda: {"implementation": "MPICH"})
    assert srun_mpi(None, {}) == "pmi2"
    monkeypatch.setattr(iotame.info, "mpi_info", lambda: {"implementation": None})
    assert srun_mpi(None, {}) is None


def test_inside_an_allocation_tune_uses_srun_with_the_tasks():
    job = resolve_job(["./app", "x"], env={**ALLOC, "IOTAME_SRUN_MPI": "pmi2"})
    assert job.argv == ("srun", "--mpi=pmi2", "-n", "4", "./app", "x") and job.nprocs == 4 and job.launched
    assert job.note == "inside Slurm job 42 (4 tasks on 2 nodes: n[01-02]): each run is an srun step of 4 tasks"
    # --launcher srun without --np takes the allocation's count too
    assert resolve_job(["./app"], launcher="srun", srun_plugin="pmix", env=ALLOC).argv == \
        ("srun", "--mpi=pmix", "-n", "4", "./app")


def test_launcher_flags_and_commands_win_over_the_allocation():
    assert resolve_job(["./app"], np=2, env=ALLOC).argv == ("mpiexec", "-n", "2", "./app")    # MPICH stays default
    assert resolve_job(["./app"], np=2, launcher="srun", srun_plugin="default", env=ALLOC).argv == \
        ("srun", "-n", "2", "./app")
    job = resolve_job(["srun", "--mpi=pmi2", "-n", "2", "./app"], env=ALLOC)
    assert job.argv == ("srun", "--mpi=pmi2", "-n", "2", "./app") and job.nprocs == 2 and not job.note
    job = resolve_job(["srun", "--mpi", "pmix", "-n", "3", "./app"], env=ALLOC)
    assert job.nprocs == 3                            # --mpi's value is not taken for the program
    # outside an allocation a command without a launcher runs as it is
    assert resolve_job(["./app"], env={}).argv == ("./app",)


def test_tune_dry_run_inside_an_allocation(monkeypatch, capsys):
    for k, v in {**ALLOC, "IOTAME_SRUN_MPI": "pmi2"}.items():
        monkeypatch.setenv(k, v)
    assert main(["tune", "--dry-run", "--fs", "local", "--", "./app"]) == 0
    out = capsys.readouterr().out
    assert "command: srun --mpi=pmi2 -n 4 ./app\nprocesses: 4\n" in out
    assert "note: inside Slurm job 42 (4 tasks on 2 nodes: n[01-02])" in out
    assert main(["tune", "--dry-run", "--fs", "local", "--srun-mpi", "none", "--launcher", "srun", "--np", "2",
                 "--", "./app"]) == 0
    assert "command: srun --mpi=none -n 2 ./app\n" in capsys.readouterr().out


@pytest.mark.parametrize("value, expected", [
    ("ALL", "ALL"),
    ("ALL,FOO=1", "ALL,FOO=1"),
    ("NONE", "LD_PRELOAD,IOTAME_STATS"),
    ("NIL", "LD_PRELOAD,IOTAME_STATS"),
    ("PATH,HOME", "PATH,HOME,LD_PRELOAD,IOTAME_STATS"),
    ("PATH,LD_PRELOAD", "PATH,LD_PRELOAD,IOTAME_STATS"),
])
def test_slurm_export_keeps_our_variables(value, expected):
    assert slurm_export(value, ["LD_PRELOAD", "IOTAME_STATS"]) == expected


def test_runtime_env_adds_our_variables_to_srun_exports(tmp_path):
    env = runtime_env("/lib/libiotame.so", None, tmp_path / "s.json",
                      base={"SLURM_EXPORT_ENV": "NONE", "IOTAME_ON_ERROR": "passthrough", "PATH": "/bin"})
    assert env["SLURM_EXPORT_ENV"] == "IOTAME_ON_ERROR,LD_PRELOAD,IOTAME_STATS"
    # not inside `sbatch --export=...`, or without the runtime: nothing is added
    assert "SLURM_EXPORT_ENV" not in runtime_env("/lib/libiotame.so", base={"PATH": "/bin"})
    assert runtime_env(None, base={"SLURM_EXPORT_ENV": "NONE"})["SLURM_EXPORT_ENV"] == "NONE"
