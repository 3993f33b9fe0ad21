"""Helpers of the kernel tests (tests/mpi/test_*.py): the data pattern re-implemented, file-per-process names, the
checks of phases and of usage errors, and corrupting a byte for a --skip-write run to find."""
import pytest

from conftest import KERNEL, flip_byte

SEED = 42  # the kernels' default --seed

# The data pattern contract of kernels/common/pattern.h, re-implemented so that the files are checked independently
# of the kernels' own verification (a fill and a check that were wrong the same way would pass each other).
_M = (1 << 64) - 1
_G = 0x9E3779B97F4A7C15


def _mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M
    return z ^ (z >> 31)


def pattern(offset, length, *, rank=0, seed=SEED):
    """The `length` bytes writer `rank` puts at file offset `offset` (for the HDF5 kernels: the logical offset)."""
    base = _mix(seed) ^ _mix(((rank + 1) * _G) & _M)
    first, last = offset // 8, (offset + length + 7) // 8
    words = b"".join(_mix((base + (i + 1) * _G) & _M).to_bytes(8, "little") for i in range(first, last))
    start = offset - first * 8
    return words[start:start + length]


def rank_file(name, rank):
    """The file of one rank in file-per-process mode."""
    return f"{name}.{rank:08d}"


def check_phases(res, names, nbytes):
    """The phases are `names` in that order, each moving nbytes (one number, or a dict by phase name), with MB/s
    = bytes / seconds / 10^6."""
    assert [ph["name"] for ph in res["phases"]] == list(names)
    for ph in res["phases"]:
        assert ph["bytes"] == (nbytes[ph["name"]] if isinstance(nbytes, dict) else nbytes), ph
        assert ph["seconds"] >= 0
        if ph["seconds"] > 0:
            assert ph["mbs"] == pytest.approx(ph["bytes"] / ph["seconds"] / 1e6, rel=1e-6)
            assert ph["mibs"] == pytest.approx(ph["bytes"] / ph["seconds"] / 2**20, rel=1e-6)   # MiB/s beside


def usage_error(job, n, kernel, args):
    """Runs the kernel with bad arguments on n ranks: exit 2, no result, one message on stderr (rank 0's only).
    Returns (that message line, the completed process)."""
    p = job.run(n, [KERNEL, kernel, *args], check=False)
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    lines = [line for line in p.stderr.splitlines() if line.startswith(f"iotame-kernel {kernel}:")]
    assert len(lines) == 1, p.stderr  # rank 0 only
    return lines[0], p


def reread_corrupted(job, n, kernel, args, path, offset, reread=("--skip-write",)):
    """Flips the byte at `offset` of `path` (left by an earlier --keep run) and runs the kernel again with args and
    `reread`: it must exit 1 with "verified" false. Returns (result, completed process, the byte before the flip)."""
    original = path.read_bytes()[offset]
    flip_byte(path, offset)
    res, p = job.kernel(n, kernel, *args, *reread, check=False)
    assert p.returncode == 1, p.stderr
    assert res["verified"] is False
    return res, p, original


def mismatch(ranks, file, offset, original):
    """The "errors" of a result where each of `ranks` found the flipped byte `original` at offset of file."""
    return [{"rank": r, "file": file, "offset": offset, "expected": original, "got": original ^ 0xFF} for r in ranks]
