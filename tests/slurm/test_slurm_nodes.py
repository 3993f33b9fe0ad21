"""Two Slurm nodes on this machine (`scripts/slurm up --nodes 2`: two slurmd daemons): a job across them under
`iotame run` in sbatch, whose ranks MPI places on two nodes as Slurm does, and `iotame tune` inside a two-node
allocation naming the nodes in its note."""
import json

import pytest

from .conftest import IOTAME_CLI, KERNEL, SCRIPT, run
from .test_slurm import IOR, IOR_BYTES, TUNE, _check_tune, sbatch_iotame_run


@pytest.fixture(scope="module", autouse=True)
def two_nodes():
    p = run([SCRIPT, "up", "--nodes", "2"])
    assert "n1 debug* idle" in p.stdout and "n2 debug idle" in p.stdout.replace("debug*", "debug")
    yield
    run([SCRIPT, "up"])                        # back to the one-node cluster of the session


def test_iotame_run_across_two_nodes(tmp_path):
    _, stats, _, out = sbatch_iotame_run(tmp_path, "#SBATCH --nodes=2 --ntasks=2",
                                         'echo "nodes: $SLURM_JOB_NODELIST"')
    assert "nodes: n[1-2]" in out.read_text()
    s = json.loads(stats.read_text())
    (f,) = s["files"]
    assert s["nprocs"] == 2 and f["bytes_written"] == IOR_BYTES and f["hints"]["cb_buffer_size"] == "1048576"
    assert f["nodes"] == 2                     # one rank per Slurm node, as MPI's node map from Slurm says


def test_tune_inside_a_two_node_allocation(tmp_path):
    out = tmp_path / "t"
    p = run(["salloc", "--nodes=2", "--ntasks=2", IOTAME_CLI, *TUNE[:-1], "--out", out, "--", KERNEL, *IOR,
             "-o", tmp_path / "ior.dat"], cwd=tmp_path, timeout=300)
    assert "(2 tasks on 2 nodes: n[1-2]): each run is an srun step of 2 tasks" in " ".join(p.stderr.split())
    _check_tune(out, ["srun", "--mpi=pmi2", "-n", "2", str(KERNEL)])
