"""netprobe, the network part of `iotame calibrate` (not an I/O benchmark): its JSON on 2 ranks of one node
(MPICH): the intra-node pair measured, no inter-node pair, the collectives at the job's layout, every message
checked. Structure and signs only, never values."""
import pytest

from conftest import KERNEL
from kernel_helpers import usage_error


def _positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def test_two_ranks_on_one_node(job):
    res, p = job.kernel(2, "netprobe", "--reps", "3", "--warmup", "1")
    assert p.returncode == 0, p.stderr
    assert res["kernel"] == "netprobe" and res["nprocs"] == 2
    assert res["verified"] is True and res["errors"] == []
    assert res["params"] == {"reps": 3, "warmup": 1}
    assert res["nodes"] == {"count": 1, "processes_per_node": 2, "sizes": [2]}
    intra = res["pingpong"]["intra"]
    assert res["pingpong"]["inter"] is None                      # one node: no pair across nodes
    assert intra["ranks"] == [0, 1]
    assert [pt[0] for pt in intra["points"]] == [8, 64 << 10, 4 << 20]
    for size, us, mbs in intra["points"]:
        assert _positive(us) and _positive(mbs)
        assert mbs == pytest.approx(size / us, rel=1e-6)          # MB/s = bytes per microsecond
    (row,) = res["allgather"]
    assert row[:2] == [2, 72] and _positive(row[2])               # 9 int64 per rank
    assert [r[:2] for r in res["alltoallv"]] == [[2, 64], [2, 4096], [2, 65536], [2, 1 << 20]]
    assert all(_positive(r[2]) for r in res["alltoallv"])
    assert res["phases"] == []


def test_one_rank_has_no_pair(job):
    res, p = job.kernel(1, "netprobe", "--reps", "2", "--warmup", "0")
    assert res["pingpong"] == {"intra": None, "inter": None}
    assert res["nodes"] == {"count": 1, "processes_per_node": 1, "sizes": [1]}
    assert res["allgather"][0][:2] == [1, 72] and res["verified"] is True


def test_listed_and_bad_option(job):
    p = job.run(1, [KERNEL, "--list"])
    assert "netprobe" in p.stdout.split()
    p = job.run(1, [KERNEL, "--help"])
    assert "not an I/O benchmark" in p.stdout
    line, _ = usage_error(job, 2, "netprobe", ["--reps", "0"])
    assert "--reps" in line
