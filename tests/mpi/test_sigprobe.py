"""sigprobe, the strategies part of `iotame calibrate`: its JSON on 2 ranks of one node (MPICH) for a tiny design:
one row per distinct signature and operation, the signature as the runtime sees it (touching pieces merged), every
byte read back checked, no file left behind. Structure and signs only, never values."""
from conftest import KERNEL
from kernel_helpers import usage_error

ROW_KEYS = {"op", "nprocs", "nodes", "ppn", "piece", "pieces", "interleaved", "calls", "bytes", "gap", "targets",
            "unit", "sieves", "open_seconds", "seconds", "layout", "size"}


def _positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def test_a_tiny_design_on_two_ranks(job, tmp_path):
    res, p = job.kernel(2, "sigprobe", "--dir", tmp_path, "--sizes", "64,4096", "--calls", "1", "--repeats", "1",
                        "--pieces-bytes", "64k")
    assert p.returncode == 0, p.stderr
    assert res["kernel"] == "sigprobe" and res["nprocs"] == 2 and res["phases"] == []
    assert res["verified"] is True and res["errors"] == [] and res["mismatches"] == 0
    assert res["nodes"] == 1 and res["ppn"] == 2
    assert res["mpi_library"].startswith("MPICH") and res["sieves"] == 1
    # interleaved 64 B and 4 KiB: 1024 and 16 pieces apart; contiguous: one 64 KiB piece per process, whatever the
    # size (measured once)
    shapes = [(r["op"], r["piece"], r["pieces"], r["interleaved"]) for r in res["rows"]]
    assert shapes == [("write", 64, 1024, True), ("read", 64, 1024, True),
                      ("write", 65536, 1, False), ("read", 65536, 1, False),
                      ("write", 4096, 16, True), ("read", 4096, 16, True)]
    for r in res["rows"]:
        assert set(r) == ROW_KEYS
        assert (r["nprocs"], r["nodes"], r["ppn"], r["calls"], r["bytes"]) == (2, 1, 2, 1, 2 * 65536)
        assert (r["gap"], r["targets"], r["unit"], r["sieves"]) == (0, 1, 0, 1)
        assert _positive(r["open_seconds"]) and len(r["seconds"]) == 1 and all(map(_positive, r["seconds"]))
    assert list(tmp_path.glob("iotame-sigprobe-*")) == []


def test_calls_and_repeats_and_one_operation(job, tmp_path):
    res, p = job.kernel(2, "sigprobe", "--dir", tmp_path, "--sizes", "1k", "--calls", "1,3", "--repeats", "2",
                        "--pieces-bytes", "8k", "--layouts", "interleaved", "--ops", "read")
    assert res["verified"] is True
    assert [(r["op"], r["calls"], r["pieces"], r["piece"]) for r in res["rows"]] == [("read", 1, 8, 1024),
                                                                                     ("read", 3, 8, 1024)]
    assert all(len(r["seconds"]) == 2 for r in res["rows"])


def test_a_size_with_its_own_bytes_per_call(job, tmp_path):
    res, p = job.kernel(2, "sigprobe", "--dir", tmp_path, "--sizes", "1k,1k@4k,8k@32k", "--calls", "2", "--repeats",
                        "1", "--pieces-bytes", "16k", "--layouts", "interleaved", "--ops", "write,read")
    assert p.returncode == 0 and res["verified"] is True, p.stderr
    # (piece, pieces per process, bytes of a call of both ranks): 16 KiB, 4 KiB and 32 KiB per process
    assert sorted({(r["piece"], r["pieces"], r["bytes"]) for r in res["rows"]}) == \
        [(1024, 4, 8192), (1024, 16, 32768), (8192, 4, 65536)]


def test_a_budget_keeps_every_signatures_first_repeat(job, tmp_path):
    # a budget no repeat fits: each signature's first repeat runs, no further one; without one, every repeat
    design = ["--dir", tmp_path, "--sizes", "64,4096", "--calls", "1,2", "--repeats", "3", "--pieces-bytes", "16k"]
    res, p = job.kernel(2, "sigprobe", *design, "--seconds", "0.001")
    assert p.returncode == 0 and res["verified"] is True and res["mismatches"] == 0, p.stderr
    rows = res["rows"]
    assert len(rows) == 12 and all(1 <= len(r["seconds"]) < 3 for r in rows)
    assert all(all(map(_positive, r["seconds"])) and _positive(r["open_seconds"]) for r in rows)
    assert (res["repeats"], res["seconds_budget"], res["rows_cut"]) == (3, 0.001, 12)
    assert res["repeats_cut"] == sum(3 - len(r["seconds"]) for r in rows) // 2     # write and read: one signature
    assert list(tmp_path.glob("iotame-sigprobe-*")) == []
    res, p = job.kernel(2, "sigprobe", *design, "--seconds", "0")
    assert p.returncode == 0 and res["verified"] is True, p.stderr
    assert [len(r["seconds"]) for r in res["rows"]] == [3] * 12
    assert (res["seconds_budget"], res["rows_cut"], res["repeats_cut"]) == (0, 0, 0)


def test_one_rank_pieces_merge(job, tmp_path):
    res, _ = job.kernel(1, "sigprobe", "--dir", tmp_path, "--sizes", "64", "--calls", "1", "--repeats", "1",
                        "--pieces-bytes", "4k")
    assert res["verified"] is True
    assert {(r["piece"], r["pieces"], r["interleaved"]) for r in res["rows"]} == {(4096, 1, False)}


def test_listed_and_bad_options(job):
    p = job.run(1, [KERNEL, "--list"])
    assert "sigprobe" in p.stdout.split()
    for args, word in ((["--sizes", "64,x"], "--sizes"), (["--sizes", "64@"], "--sizes"),
                       (["--sizes", "64@2g"], "--sizes"), (["--calls", "0"], "--calls"),
                       (["--layouts", "diagonal"], "--layouts"), (["--ops", "write,append"], "--ops"),
                       (["--seconds", "-1"], "--seconds")):
        line, _ = usage_error(job, 2, "sigprobe", args)
        assert word in line
