"""The replay kernel within what the user allows (issue 49): several MPI-IO files over the same and over different
communicators; the preload scaled with --scale; --replay-bytes lowers the scale until what the replay writes
(preload included) fits, and refuses to start when nothing fits; the bytes on disk never exceed the limit. Real
mpiexec, 2 ranks."""
import os
import subprocess

import pytest

from conftest import write_json
from kernel_helpers import usage_error

MIB = 1 << 20


def spec(nprocs, *files):
    return {"replay": 1, "nprocs": nprocs, "files": list(files)}


def shared_file(name, n=2, piece=4096, calls=4, op="W"):
    """n procs, `calls` collective calls of one piece each, rank r's piece after rank r-1's."""
    return {"name": name, "api": "MPIIO", "procs": list(range(n)),
            "calls": [[{"op": op, "at": [[r * piece, piece, 1, 0]], "repeat": calls, "advance": n * piece}]
                      for r in range(n)]}


def read_file(name, n=2, piece=MIB, calls=8):
    """A shared input every proc reads collectively, preloaded whole (what `iotame replay spec` writes for it)."""
    f = shared_file(name, n, piece, calls, op="R")
    f["preload"] = [[0, n * piece * calls]]
    return f


def run(job, s, *args, check=True):
    path = write_json(job.tmp / "spec.json", s)
    return job.kernel(2, "replay", "--from", path.name, "--keep", *args, check=check)


def disk_bytes(job, names):
    return sum((job.tmp / n).stat().st_size for n in names if (job.tmp / n).exists())


def test_files_sharing_a_communicator_and_files_with_their_own(job):
    """Three MPI-IO files of procs {0,1} share one communicator, a file of proc 1 alone uses MPI_COMM_SELF: each
    communicator is freed once (the E3SM log's replay ended in MPI_Comm_free: Invalid communicator, exit 5)."""
    solo = {"name": "solo.dat", "api": "MPIIO", "procs": [1], "calls": [[{"op": "w", "at": [[0, 512, 1, 0]]}]]}
    s = spec(2, shared_file("a.nc"), shared_file("b.nc"), solo, shared_file("c.nc"))
    res, _ = run(job, s)
    assert res["verified"] is True and res["params"]["files"] == 4
    assert res["params"]["write_bytes"] == 3 * 2 * 4 * 4096 + 512


def test_the_preload_scales_with_scale(job):
    """A quarter of the reads preloads a quarter of the input: what the kept reads need, not the whole file."""
    s = spec(2, read_file("in.dat"))
    res, _ = run(job, s, "--scale", "0.25")
    assert res["verified"] is True and res["params"]["read_bytes"] == 2 * 2 * MIB
    assert res["params"]["created_bytes"] == 2 * 2 * MIB
    whole, _ = run(job, s)
    assert whole["params"]["created_bytes"] == 16 * MIB and whole["params"]["read_bytes"] == 16 * MIB


def test_replay_bytes_lowers_the_scale_until_everything_fits(job):
    """16 MiB of input and 16 MiB of output, a limit of 5 MiB: the replay picks the largest scale that fits, writes
    no more than the limit (preload included), and verifies what it read and wrote."""
    s = spec(2, read_file("in.dat"), shared_file("out.dat", piece=MIB, calls=8))
    res, _ = run(job, s, "--replay-bytes", "5m")
    prm = res["params"]
    assert res["verified"] is True
    assert 0 < prm["scale_applied"] < 1
    assert prm["created_bytes"] <= 5 * MIB
    assert prm["write_bytes"] + prm["read_bytes"] <= 5 * MIB
    assert disk_bytes(job, ["in.dat", "out.dat"]) <= 5 * MIB
    unlimited, _ = run(job, s, "--replay-bytes", "64m")
    assert unlimited["params"]["scale_applied"] == 1 and unlimited["params"]["created_bytes"] == 32 * MIB


def test_replay_bytes_smaller_than_one_call_refuses_to_start(job):
    s = spec(2, read_file("in.dat"))
    line, _ = usage_error(job, 2, "replay", ["--from", str(write_json(job.tmp / "spec.json", s)),
                                             "--replay-bytes", "1m"])
    assert "more than --replay-bytes 1048576" in line and "even with one call per file" in line
    assert "(in.dat alone needs 2097152); raise --replay-bytes to at least 2097152" in line   # 2 procs x 1 MiB
    assert not (job.tmp / "in.dat").exists()


@pytest.fixture
def small_fs(job):
    """A 1 MiB tmpfs mounted for the test (the tests run as root), unmounted after it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = job.tmp / "small"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.parametrize("limit", [[], ["--replay-bytes", "64m"]], ids=["no-limit", "limit-above-need"])
def test_more_than_the_free_space_of_dir_refuses_to_start(job, small_fs, limit):
    """16 MiB of preload into a 1 MiB file system: refused before any file is made, naming the bytes needed, the
    directory and its free bytes."""
    st = os.statvfs(small_fs)
    path = write_json(job.tmp / "spec.json", spec(2, read_file("in.dat")))
    line, _ = usage_error(job, 2, "replay", ["--from", str(path), "--dir", str(small_fs), *limit])
    assert f"would write {16 * MIB} bytes in {small_fs}" in line
    assert f"more than the {st.f_bavail * st.f_frsize} bytes free there" in line
    assert list(small_fs.iterdir()) == []


@pytest.mark.parametrize("limit", ["64m"])
def test_a_job_of_terabytes_never_writes_more_than_the_limit(job, limit):
    """A 1.6 TB collective read (pytokio's sample-2 shape: 2048 ranks' reads of 100 MB and more, folded onto 2
    processes, as a spec) with --replay-bytes 64m: refused (one call is larger than the limit), nothing written."""
    piece = 800 * 1000 * 1000
    f = shared_file("vpic.h5", piece=piece, calls=1000, op="R")
    f["preload"] = [[0, 2 * piece * 1000]]
    s = spec(2, f)
    line, _ = usage_error(job, 2, "replay", ["--from", str(write_json(job.tmp / "spec.json", s)),
                                             "--replay-bytes", limit])
    assert "--replay-bytes 67108864" in line
    assert disk_bytes(job, ["vpic.h5"]) == 0
