"""The ior kernel: IOR's layout and options, data verification, error reporting (real mpiexec, 1 to 4 ranks)."""
import pytest

from conftest import KERNEL
from kernel_helpers import check_phases, mismatch, pattern, rank_file, reread_corrupted, usage_error

KiB = 1024
BLOCK, TRANSFER, SEGMENTS = 256 * KiB, 64 * KiB, 2
SIZES = ["-b", "256k", "-t", "64k", "-s", str(SEGMENTS)]
NAME = "iotame-ior.dat"


def check_layout(tmp, n, fpp, seed=42):
    """Files have IOR's sizes, and each rank's blocks hold its pattern where IOR puts them."""
    for rank in range(n):
        path = tmp / (rank_file(NAME, rank) if fpp else NAME)
        data = path.read_bytes()
        assert len(data) == (BLOCK * SEGMENTS if fpp else n * BLOCK * SEGMENTS)
        for seg in range(SEGMENTS):
            start = seg * BLOCK if fpp else seg * n * BLOCK + rank * BLOCK
            for off, length in ((start, 64), (start + BLOCK // 2 + 3, 29), (start + BLOCK - 13, 13)):
                assert data[off:off + length] == pattern(off, length, rank=rank, seed=seed), (path.name, rank, seg, off)
    if fpp:
        assert not (tmp / NAME).exists()


CASES = [
    (1, ["-a", "POSIX"]),
    (2, ["-a", "POSIX", "-F"]),
    (2, ["-a", "POSIX", "-z", "-C", "-e"]),
    (2, ["-a", "MPIIO"]),
    (2, ["-a", "MPIIO", "-c"]),
    (2, ["-a", "MPIIO", "-F", "-z", "-C"]),
    (4, ["-a", "MPIIO", "-c", "-z", "-C", "-e"]),
    (4, ["-a", "POSIX", "-F", "-C"]),
]


@pytest.mark.parametrize("n,args", CASES, ids=[f"{n}-{''.join(a)}" for n, a in CASES])
def test_write_read_verified(job, n, args):
    res, p = job.kernel(n, "ior", *args, *SIZES, "-W", "-R", "-k")
    assert res["kernel"] == "ior" and res["nprocs"] == n
    assert res["verified"] is True and res["errors"] == []
    check_phases(res, ["write", "read"], n * BLOCK * SEGMENTS)
    prm = res["params"]
    assert prm["api"] == args[1]
    assert (prm["block"], prm["transfer"], prm["segments"]) == (BLOCK, TRANSFER, SEGMENTS)
    assert prm["file_per_proc"] == ("-F" in args)
    assert prm["collective"] == ("-c" in args)
    assert prm["random"] == ("-z" in args)
    assert prm["reorder"] == ("-C" in args)
    assert prm["fsync"] == ("-e" in args)
    assert (prm["repetitions"], prm["file"], prm["seed"]) == (1, NAME, 42)
    check_layout(job.tmp, n, "-F" in args)


def test_defaults_remove_the_file(job):
    res, _ = job.kernel(2, "ior", *SIZES)
    prm = res["params"]
    assert (prm["api"], prm["file"], prm["write"], prm["read"]) == ("MPIIO", NAME, True, True)
    assert [ph["name"] for ph in res["phases"]] == ["write", "read"]
    assert res["verified"] is None  # nothing was checked without -W / -R
    assert list(job.tmp.iterdir()) == []


def test_default_sizes(job):
    res, _ = job.kernel(1, "ior", "-w", "-k")
    assert (res["params"]["block"], res["params"]["transfer"], res["params"]["segments"]) == (1 << 20, 256 * KiB, 1)
    assert (job.tmp / NAME).stat().st_size == 1 << 20


def test_name_repetitions_and_file_per_process_names(job):
    res, _ = job.kernel(2, "ior", *SIZES, "-F", "-o", "out.bin", "-i", "3", "-W", "-R", "-k")
    assert [ph["name"] for ph in res["phases"]] == ["write", "read"] * 3
    assert res["verified"] is True
    assert sorted(f.name for f in job.tmp.iterdir()) == ["out.bin.00000000", "out.bin.00000001"]


def test_write_with_one_api_read_with_the_other(job):
    job.kernel(2, "ior", "-a", "POSIX", *SIZES, "-w", "-k")
    res, _ = job.kernel(2, "ior", "-a", "MPIIO", "-c", *SIZES, "-r", "-R", "-k")
    assert res["verified"] is True
    assert [ph["name"] for ph in res["phases"]] == ["read"]
    check_layout(job.tmp, 2, fpp=False)


def test_seed_changes_the_data(job):
    job.kernel(2, "ior", *SIZES, "-w", "-k", "-G", "7")
    check_layout(job.tmp, 2, fpp=False, seed=7)
    res, _ = job.kernel(2, "ior", *SIZES, "-r", "-R", "-k", "-G", "7")
    assert res["verified"] is True and res["params"]["seed"] == 7
    res, p = job.kernel(2, "ior", *SIZES, "-r", "-R", "-k", check=False)
    assert p.returncode == 1 and res["verified"] is False
    assert sorted(e["rank"] for e in res["errors"]) == [0, 1]


CORRUPT = [
    # (extra args, file flipped, offset flipped, rank expected to find it)
    ([], NAME, 1 * 2 * BLOCK + 1 * BLOCK + 12345, 1),  # segment 1 of rank 1
    (["-C"], NAME, 1 * 2 * BLOCK + 1 * BLOCK + 12345, 0),  # rank 0 reads rank 1's data
    (["-F", "-z"], rank_file(NAME, 1), BLOCK + 7, 1),
    (["-a", "POSIX", "-F", "-C"], rank_file(NAME, 0), 3, 1),  # rank 1 reads rank 0's file
]


@pytest.mark.parametrize("extra,name,offset,finder", CORRUPT,
                         ids=["shared", "reorder", "fpp-random", "posix-fpp-reorder"])
def test_corruption_is_reported(job, extra, name, offset, finder):
    job.kernel(2, "ior", *extra, *SIZES, "-w", "-k")
    res, p, original = reread_corrupted(job, 2, "ior", [*extra, *SIZES], job.tmp / name, offset, ("-r", "-R", "-k"))
    assert res["errors"] == mismatch([finder], name, offset, original)
    assert f"offset {offset}" in p.stderr


@pytest.mark.parametrize("args,option", [
    (["-b", "1000", "-t", "256"], "-b"),
    (["-b", "1m", "-t", "3m"], "-b"),
    (["-a", "FOO"], "-a"),
    (["-a", "POSIX", "-c"], "-c"),
    (["-b", "1x"], "-b"),
    (["-t", "0"], "-t"),
    (["-s", "-1"], "-s"),
    (["-t"], "-t"),
    (["-Q"], "-Q"),
    (["-w", "-R"], "-R"),
    (["-r", "-W"], "-W"),
], ids=lambda v: "".join(v) if isinstance(v, list) else None)
def test_bad_options(job, args, option):
    line, _ = usage_error(job, 2, "ior", args)
    assert f"option {option}" in line


@pytest.mark.parametrize("args", [["-a", "POSIX"], ["-a", "MPIIO"], ["-a", "POSIX", "-F"], ["-a", "MPIIO", "-F"]],
                         ids=lambda a: "".join(a))
def test_reading_a_missing_file_fails(job, args):
    p = job.run(2, [KERNEL, "ior", *args, "-r"], check=False)
    assert p.returncode not in (0, 1, 2)
    assert p.stdout == ""
    assert "cannot open" in p.stderr and NAME in p.stderr


def test_truncated_file_fails(job):
    job.kernel(2, "ior", "-a", "POSIX", *SIZES, "-w", "-k")
    path = job.tmp / NAME
    path.write_bytes(path.read_bytes()[:BLOCK])
    p = job.run(2, [KERNEL, "ior", "-a", "POSIX", *SIZES, "-r", "-k"], check=False)
    assert p.returncode != 0 and "shorter than expected" in p.stderr


def test_command_line(job):
    p = job.run(1, [KERNEL, "--list"])
    assert "ior" in p.stdout.split()
    p = job.run(1, [KERNEL], check=False)
    assert p.returncode == 2 and "usage" in p.stderr and p.stdout == ""
    p = job.run(1, [KERNEL, "nosuchkernel"], check=False)
    assert p.returncode == 2 and "nosuchkernel" in p.stderr
    p = job.run(2, [KERNEL, "ior", "-h"])
    assert p.stdout.count("usage: iotame-kernel ior") == 1
