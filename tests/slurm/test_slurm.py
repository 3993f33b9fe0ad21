"""Jobs launched by Slurm's srun under the runtime (docs/slurm.md): `iotame run` inside an sbatch script, `iotame
tune` with the srun launcher and inside an allocation without launcher flags, a plain srun job with the variables
set by hand, Open MPI's build under srun, and scripts/slurm's own contract (idempotent up, status, the plugins)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import IOTAME_CLI, KERNEL, LIBIOTAME, ROOT, SCRIPT, run

# ior with tiny sizes: 2 ranks x 2 segments x 256 KiB, collective, written in 64 KiB transfers
IOR = ["ior", "-a", "MPIIO", "-c", "-w", "-b", "256k", "-t", "64k", "-s", "2"]
IOR_BYTES = 2 * 2 * 256 * 1024
CONFIG = {"version": 1, "defaults": {"mpiio_hints": {"cb_buffer_size": 1048576},
                                     "collective": {"strategy": "two_phase"}}}
OMPI_BUILD = ROOT / "build-openmpi"
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def kernel_result(stdout):
    """The kernel's JSON result line in a job's output (rank 0 prints one)."""
    lines = [line for line in stdout.splitlines() if line.startswith('{"kernel"')]
    assert len(lines) == 1, f"expected one kernel result (one job of 2 ranks, not 2 singletons):\n{stdout}"
    return json.loads(lines[0])


def written(result):
    return sum(p["bytes"] for p in result["phases"] if p["name"] == "write")


def check_stats(stats_path, data_path):
    """The statistics of a 2-rank ior job under CONFIG: every rank counted, the hint and strategy applied."""
    stats = json.loads(Path(stats_path).read_text())
    assert stats["nprocs"] == 2
    assert stats["summary"]["bytes_written"] == IOR_BYTES
    (f,) = [f for f in stats["files"] if f["path"] == str(data_path)]
    assert f["bytes_written"] == IOR_BYTES and f["ranks"] == 2 and f["opens"] == 2
    assert f["hints"]["cb_buffer_size"] == "1048576"
    assert f["strategies"]["two_phase"]["bytes"] == IOR_BYTES
    assert f["nodes"] == 1                              # the cluster's one node, as MPI tells the runtime
    return stats


def test_up_is_idempotent_and_status_shows_the_idle_node():
    p = run([SCRIPT, "up"])
    pids = [line for line in p.stdout.splitlines() if "running (pid" in line]
    assert len(pids) == 3
    p = run([SCRIPT, "status"])
    assert [line for line in p.stdout.splitlines() if "running (pid" in line] == pids   # nothing restarted
    node = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t %c"], capture_output=True, text=True).stdout.split()
    assert node[1] == "idle" and int(node[2]) == os.cpu_count()
    assert run([SCRIPT, "env"]).stdout.strip() == "export SLURM_CONF=/run/iotame-slurm/slurm.conf"
    plugins = run(["srun", "--mpi=list"]).stdout + run(["srun", "--mpi=list"]).stderr
    assert "pmi2" in plugins and "pmix" in plugins


def sbatch_iotame_run(tmp_path, *lines, quiet=True, options=()):
    """Writes CONFIG and a batch script that runs `iotame run` on the 2-rank ior job under srun after `lines`
    (#SBATCH lines and shell commands), submits it with `sbatch --wait` and `options`; returns sbatch's result and
    the paths of the statistics, the data file and the job's output."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIG))
    stats, data, out = tmp_path / "s.json", tmp_path / "ior.dat", tmp_path / "job.out"
    script = tmp_path / "job.sh"
    script.write_text("\n".join(["#!/bin/bash", f"#SBATCH --output={out}", *lines,
                                 f"{IOTAME_CLI} run {'-q ' if quiet else ''}--config {config} --stats {stats} -- "
                                 f"srun -n 2 {KERNEL} {' '.join(IOR)} -o {data}", ""]))
    p = run(["sbatch", "--wait", *options, script], cwd=tmp_path)
    return p, stats, data, out


def test_iotame_run_inside_sbatch(tmp_path):
    p, stats, data, out = sbatch_iotame_run(tmp_path, "#SBATCH --ntasks=2", "#SBATCH --time=2", "set -e",
                                            quiet=False, options=["--parsable"])
    job_id = p.stdout.strip().split(";")[0]
    text = out.read_text()
    assert job_id.isdigit(), p.stdout
    result = kernel_result(text)
    assert result["nprocs"] == 2 and written(result) == IOR_BYTES
    assert "iotame statistics: 2 ranks" in text           # iotame run's summary, printed inside the job
    check_stats(stats, data)


def test_iotame_run_inside_sbatch_export_none(tmp_path):
    """`sbatch --export=NONE` makes srun pass nothing to the ranks (SLURM_EXPORT_ENV=NONE): iotame run adds ours."""
    _, stats, data, _ = sbatch_iotame_run(tmp_path, "#SBATCH --ntasks=2", 'test "$SLURM_EXPORT_ENV" = NONE',
                                          options=["--export=NONE"])
    check_stats(stats, data)


def test_plain_srun_with_the_variables_set(tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIG))
    stats, data = tmp_path / "s.json", tmp_path / "ior.dat"
    env = {**os.environ, "LD_PRELOAD": str(LIBIOTAME), "IOTAME_CONFIG": str(config), "IOTAME_STATS": str(stats)}
    p = run(["srun", "--mpi=pmi2", "-n", "2", KERNEL, *IOR, "-o", data], env=env, cwd=tmp_path)
    assert written(kernel_result(p.stdout)) == IOR_BYTES
    check_stats(stats, data)


@pytest.mark.parametrize("plugin", ["none", "pmix"])
def test_mpich_ranks_start_alone_under_other_plugins(tmp_path, plugin):
    """Why MPICH needs --mpi=pmi2: under none and pmix each rank is a job of 1 (docs/slurm.md)."""
    # -k: the two jobs of one rank share the file, and one removing it races the other creating it
    p = run(["srun", f"--mpi={plugin}", "-n", "2", KERNEL, *IOR, "-k", "-o", tmp_path / "x.dat"], cwd=tmp_path)
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith('{"kernel"')]
    assert [r["nprocs"] for r in results] == [1, 1]


def test_open_mpi_under_srun_pmix(tmp_path):
    kernel, lib = OMPI_BUILD / "kernels" / "iotame-kernel", OMPI_BUILD / "runtime" / "libiotame.so"
    if not (kernel.exists() and lib.exists()):
        pytest.skip("build-openmpi/ not built (scripts/build_openmpi.sh; the openmpi layer builds it)")
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIG))
    stats, data = tmp_path / "s.json", tmp_path / "ior.dat"
    env = {**os.environ, **OMPI_ENV, "LD_PRELOAD": str(lib), "IOTAME_CONFIG": str(config),
           "IOTAME_STATS": str(stats)}
    p = run(["srun", "--mpi=pmix", "-n", "2", kernel, *IOR, "-o", data], env=env, cwd=tmp_path)
    assert written(kernel_result(p.stdout)) == IOR_BYTES
    check_stats(stats, data)
    # under pmi2 Open MPI stops with its own message
    p = subprocess.run(["srun", "--mpi=pmi2", "-n", "2", kernel, *IOR, "-o", data], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "OMPI was not built with SLURM's PMI support" in p.stdout + p.stderr


def _check_tune(out_dir, argv_start):
    summary = json.loads((out_dir / "summary.json").read_text())
    best = json.loads((out_dir / "best.json").read_text())
    assert summary["command"][:len(argv_start)] == argv_start
    assert best["meta"]["command"] == summary["command"] and best["version"] == 1
    assert summary["trials"]["complete"] == 3 and summary["trials"]["failed"] == 0
    runs = sorted(out_dir.glob("trials/*/run-*/stats.json"))
    assert runs and all(json.loads(r.read_text())["nprocs"] == 2 for r in runs)
    return summary


TUNE = ["tune", "--max-noise", "1000", "--trials", "3", "--final-repeat", "1", "--ablation-rounds", "0",
        "--no-knowledge", "--seed", "1", "--quiet"]


def test_tune_with_the_srun_launcher(tmp_path):
    out = tmp_path / "t"
    run([IOTAME_CLI, *TUNE, "--launcher", "srun", "--np", "2", "--out", out, "--", KERNEL, *IOR,
         "-o", tmp_path / "ior.dat"], cwd=tmp_path, timeout=300)
    _check_tune(out, ["srun", "--mpi=pmi2", "-n", "2", str(KERNEL)])


def test_tune_inside_an_allocation_needs_no_launcher_flags(tmp_path):
    out = tmp_path / "t"
    p = run(["salloc", "--ntasks=2", IOTAME_CLI, *TUNE[:-1], "--out", out, "--", KERNEL, *IOR,
             "-o", tmp_path / "ior.dat"], cwd=tmp_path, timeout=300)
    assert "each run is an srun step of 2 tasks" in " ".join(p.stderr.split())    # the note, wrapped by rich
    _check_tune(out, ["srun", "--mpi=pmi2", "-n", "2", str(KERNEL)])


def _ours():
    """Processes of the test cluster: its daemons (named by their state directory) and the jobs' `sleep 317`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if "/run/iotame-slurm" in cmdline or "sleep 317" in cmdline or b"SLURM_CONF=/run/iotame-slurm/" in environ:
            found.append(f"{proc.name}: {cmdline}")
    return [p for p in found if str(os.getpid()) != p.split(":")[0]]


def test_down_ends_running_jobs_and_leaves_nothing(tmp_path):
    run(["sbatch", "--ntasks=1", f"--output={tmp_path / 'out'}", "--wrap", "sleep 317"])
    step = subprocess.Popen(["srun", "-n", "1", "sleep", "317"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if len(run(["squeue", "-h", "-t", "R", "-o", "%i"]).stdout.split()) == 2:
                break
            subprocess.run(["sleep", "0.1"])
        assert len(run(["squeue", "-h", "-t", "R", "-o", "%i"]).stdout.split()) == 2
        run([SCRIPT, "down"])
        assert step.wait(timeout=30) != 0                  # its step was cancelled
        assert _ours() == [] and not Path("/run/iotame-slurm").exists()
        assert run([SCRIPT, "down"]).returncode == 0       # safe when nothing is up
        assert subprocess.run([SCRIPT, "status"], capture_output=True).returncode == 1
    finally:
        step.kill()
        run([SCRIPT, "up"])                                # the session's cluster again for the tests after this
