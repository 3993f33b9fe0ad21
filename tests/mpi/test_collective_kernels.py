"""The collective-I/O kernels (matrix, noncontig, tileio, btio): their layouts through file views, data verification,
files independent of the number of ranks, corruption reports and parameter errors (real mpiexec, 1 to 4 ranks)."""
import math

import pytest

from conftest import KERNEL
from kernel_helpers import SEED, check_phases, mismatch, pattern, reread_corrupted, usage_error

NAMES = {k: f"iotame-{k}.dat" for k in ("matrix", "noncontig", "tileio", "btio")}
# These kernels write the pattern of writer rank 0 everywhere (kernel_helpers.pattern's default).


# ---- each kernel's layout: file size, bytes per phase, and which rank reads a file offset ----

def opt(args, name, default=None):
    return int(args[args.index(name) + 1]) if name in args else default


def matrix_layout(n, args):
    rows, cols, elem = opt(args, "--rows"), opt(args, "--cols"), opt(args, "--element", 8)
    size = rows * cols * elem
    band = cols // n * elem

    def owners(off):
        return [off % (cols * elem) // band]
    return size, size, owners


def noncontig_layout(n, args):
    e, v, loops = opt(args, "--elmtcount"), opt(args, "--veclen"), opt(args, "--loops")
    size = loops * n * v * e * 4

    def owners(off):
        return [off // (e * 4) % n]
    return size, size, owners


def tileio_layout(n, args):
    nx, ny = opt(args, "--nr-tiles-x"), opt(args, "--nr-tiles-y")
    sx, sy, elem = opt(args, "--sz-tile-x"), opt(args, "--sz-tile-y"), opt(args, "--sz-element", 8)
    ox, oy, header = opt(args, "--overlap-x", 0), opt(args, "--overlap-y", 0), opt(args, "--header-bytes", 0)
    assert nx * ny == n
    width, height = nx * (sx - ox) + ox, ny * (sy - oy) + oy

    def owners(off):
        row, col = (off - header) // (width * elem), (off - header) % (width * elem) // elem
        return [ty * nx + tx for ty in range(ny) for tx in range(nx)
                if ty * (sy - oy) <= row < ty * (sy - oy) + sy and tx * (sx - ox) <= col < tx * (sx - ox) + sx]
    return header + width * height * elem, n * sx * sy * elem, owners


def btio_layout(n, args):
    grid, steps, interval = opt(args, "--grid"), opt(args, "--steps"), opt(args, "--write-interval", 5)
    q = math.isqrt(n)
    dumps = len([s for s in range(1, steps + 1) if s % interval == 0 or s == steps])
    solution = grid ** 3 * 40
    base, extra = divmod(grid, q)

    def cell(p):  # BT's split: the first grid % q cells have one point more
        return p // (base + 1) if p < extra * (base + 1) else extra + (p - extra * (base + 1)) // base

    def owners(off):
        point = off % solution // 40
        cx, cy, c = cell(point % grid), cell(point // grid % grid), cell(point // grid ** 2)
        i, j = (cy + c) % q, (cx - c) % q  # the diagonal: cell c of (i, j) is ((j + c) % q, (i - c) % q, c)
        return [i * q + j]
    return dumps * solution, dumps * solution, owners


LAYOUTS = {"matrix": matrix_layout, "noncontig": noncontig_layout, "tileio": tileio_layout, "btio": btio_layout}


def check_run(res, kernel, n, phase_bytes, phases=("write", "read")):
    assert res["kernel"] == kernel and res["nprocs"] == n
    assert res["verified"] is True and res["errors"] == []
    check_phases(res, phases, phase_bytes)


def check_file(path, size, header=0):
    """The whole file is writer rank 0's pattern at every offset (a hole of zeros before a tileio header)."""
    data = path.read_bytes()
    assert len(data) == size
    assert data[:header] == bytes(header)
    assert data[header:] == pattern(header, size - header)


# ---- write, read back, verify ----

MATRIX = ["--rows", "16", "--cols", "512", "--depth", "4"]
NONCONTIG = ["--elmtcount", "16", "--veclen", "32", "--loops", "2"]
TILE = ["--sz-tile-x", "32", "--sz-tile-y", "16"]
BTIO = ["--grid", "9", "--steps", "7", "--write-interval", "3"]  # dumps at steps 3, 6 and 7 (the last)

CASES = [
    ("matrix", 1, MATRIX),
    ("matrix", 2, MATRIX + ["--element", "16"]),
    ("matrix", 4, MATRIX),
    ("noncontig", 1, NONCONTIG + ["--mem-noncontig"]),
    ("noncontig", 2, NONCONTIG),
    ("noncontig", 2, NONCONTIG + ["--collective", "--mem-noncontig"]),
    ("noncontig", 4, NONCONTIG + ["--collective"]),
    ("noncontig", 2, NONCONTIG + ["--collective", "--mem-noncontig", "--count", "8"]),  # 8 small types a call
    ("tileio", 1, TILE + ["--nr-tiles-x", "1", "--nr-tiles-y", "1"]),
    ("tileio", 2, TILE + ["--nr-tiles-x", "1", "--nr-tiles-y", "2", "--independent", "--header-bytes", "100"]),
    ("tileio", 4, TILE + ["--nr-tiles-x", "2", "--nr-tiles-y", "2"]),
    ("tileio", 4, TILE + ["--nr-tiles-x", "2", "--nr-tiles-y", "2", "--overlap-x", "4", "--overlap-y", "3",
                          "--sz-element", "12"]),
    ("btio", 1, BTIO),
    ("btio", 4, BTIO),
]


@pytest.mark.parametrize("kernel,n,args", CASES, ids=[f"{k}-{n}-{''.join(a[6:])}" for k, n, a in CASES])
def test_write_read_verified(job, kernel, n, args):
    res, _ = job.kernel(n, kernel, *args, "--keep")
    size, phase_bytes, _ = LAYOUTS[kernel](n, args)
    check_run(res, kernel, n, phase_bytes)
    check_file(job.tmp / NAMES[kernel], size, opt(args, "--header-bytes", 0))
    prm = res["params"]
    assert (prm["file"], prm["seed"], prm["keep"], prm["skip-write"]) == (NAMES[kernel], SEED, True, False)
    if kernel == "noncontig":
        assert (prm["collective"], prm["mem-noncontig"]) == ("--collective" in args, "--mem-noncontig" in args)
    if kernel == "tileio":
        assert prm["independent"] == ("--independent" in args)


def test_derived_parameters(job):
    """Matrix derives (block-size, iterations) from (rows, cols) and the other way round; tileio its tile grid;
    btio its grid and steps from the class."""
    res, _ = job.kernel(2, "matrix", *MATRIX, "--keep")
    prm = res["params"]
    assert (prm["rows"], prm["cols"], prm["block-size"], prm["depth"], prm["iterations"]) == (16, 512, 2048, 4, 4)
    res, _ = job.kernel(2, "matrix", "--block-size", "2k", "--iterations", "4", "--depth", "4", "--skip-write")
    assert res["verified"] is True and (res["params"]["rows"], res["params"]["cols"]) == (16, 512)
    res, _ = job.kernel(2, "tileio", *TILE)
    assert (res["params"]["nr-tiles-x"], res["params"]["nr-tiles-y"]) == (2, 1)
    res, _ = job.kernel(1, "btio", "--class", "W", "--steps", "5")
    assert (res["params"]["class"], res["params"]["grid"], res["params"]["steps"]) == ("W", 24, 5)
    assert res["phases"][0]["bytes"] == 24 ** 3 * 40


@pytest.mark.parametrize("kernel", ["matrix", "noncontig", "tileio", "btio"])
def test_defaults_run_and_remove_the_file(job, kernel):
    res, _ = job.kernel(1, kernel)
    assert res["verified"] is True and [ph["name"] for ph in res["phases"]] == ["write", "read"]
    assert list(job.tmp.iterdir()) == []


# A file written by one number of ranks verifies when read by another: same file, other decomposition.
ACROSS = [
    ("matrix", 1, MATRIX, 4, MATRIX),
    ("noncontig", 2, ["--elmtcount", "16", "--veclen", "32", "--loops", "2"], 4,
     ["--elmtcount", "16", "--veclen", "16", "--loops", "2", "--collective", "--mem-noncontig"]),
    ("noncontig", 2, NONCONTIG, 2, NONCONTIG + ["--count", "32", "--collective"]),  # one chunk per type instance
    ("tileio", 1, ["--sz-tile-x", "64", "--sz-tile-y", "32"], 4,
     ["--sz-tile-x", "32", "--sz-tile-y", "16", "--nr-tiles-x", "2", "--nr-tiles-y", "2"]),
    ("btio", 4, BTIO, 1, BTIO),
]


@pytest.mark.parametrize("kernel,n1,args1,n2,args2", ACROSS, ids=[a[0] for a in ACROSS])
def test_file_does_not_depend_on_the_number_of_ranks(job, kernel, n1, args1, n2, args2):
    job.kernel(n1, kernel, *args1, "--keep")
    first = (job.tmp / NAMES[kernel]).read_bytes()
    res, _ = job.kernel(n2, kernel, *args2, "--skip-write")
    size, phase_bytes, _ = LAYOUTS[kernel](n2, args2)
    check_run(res, kernel, n2, phase_bytes, phases=("read",))
    assert len(first) == size
    assert (job.tmp / NAMES[kernel]).read_bytes() == first  # a --skip-write run leaves the file alone


# ---- corruption: the reader of a flipped byte reports its exact offset ----

CORRUPT = [
    # kernel, ranks, args, offset flipped (inside written data)
    ("matrix", 2, MATRIX, 5 * 512 * 8 + 300 * 8 + 3),  # row 5, column 300: rank 1's band
    ("matrix", 4, MATRIX, 15 * 512 * 8 + 7),  # last row, rank 0
    ("noncontig", 2, NONCONTIG + ["--collective"], 2 * 32 * 64 + 7 * 64 + 10),  # loop 1, chunk 7: rank 1
    ("noncontig", 2, NONCONTIG + ["--mem-noncontig"], 6 * 64 + 63),  # loop 0, rank 0's last byte of chunk 3
    ("tileio", 2, TILE + ["--nr-tiles-x", "2", "--nr-tiles-y", "1", "--overlap-x", "4"],
     (10 * 60 + 29) * 8 + 2),  # row 10, column 29 is in both tiles: both ranks report it
    ("tileio", 2, TILE + ["--nr-tiles-x", "2", "--nr-tiles-y", "1", "--overlap-x", "4"],
     (15 * 60 + 59) * 8 + 7),  # the very last byte: rank 1 only
    ("btio", 4, BTIO, 729 * 40 + ((6 * 9 + 1) * 9 + 7) * 40 + 21),  # dump 1, point (7, 1, 6)
]


@pytest.mark.parametrize("kernel,n,args,offset", CORRUPT,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CORRUPT)])
def test_corruption_is_reported(job, kernel, n, args, offset):
    job.kernel(n, kernel, *args, "--keep")
    _, _, owners = LAYOUTS[kernel](n, args)
    finders = owners(offset)
    assert finders  # the offset is inside written data

    res, p, original = reread_corrupted(job, n, kernel, args, job.tmp / NAMES[kernel], offset)
    assert res["errors"] == mismatch(finders, NAMES[kernel], offset, original)
    assert f"offset {offset}" in p.stderr
    assert [ph["name"] for ph in res["phases"]] == ["read"]


# ---- bad parameters: exit 2, one message (rank 0) naming the option ----

BAD = [
    ("matrix", 2, ["--cols", "101"], "--cols"),
    ("matrix", 2, ["--cols", "512", "--block-size", "1k"], "--block-size"),
    ("matrix", 1, ["--block-size", "100", "--element", "8"], "--block-size"),
    ("matrix", 1, ["--rows", "10", "--depth", "4"], "--rows"),
    ("matrix", 1, ["--rows", "16", "--depth", "4", "--iterations", "3"], "--iterations"),
    ("matrix", 1, ["--depth", "0"], "--depth"),
    ("matrix", 1, ["--element", "0"], "--element"),
    ("noncontig", 2, ["--elmtcount", "0"], "--elmtcount"),
    ("noncontig", 1, ["--veclen", "0"], "--veclen"),
    ("noncontig", 1, ["--loops", "x"], "--loops"),
    ("noncontig", 1, ["--veclen", "32", "--count", "5"], "--count"),
    ("tileio", 2, ["--nr-tiles-x", "2", "--nr-tiles-y", "2"], "--nr-tiles-x"),
    ("tileio", 2, ["--nr-tiles-x", "3"], "--nr-tiles-x"),
    ("tileio", 1, ["--sz-tile-y", "0"], "--sz-tile-y"),
    ("tileio", 1, ["--sz-tile-x", "8", "--overlap-x", "8"], "--overlap-x"),
    ("btio", 2, [], "square number of processes"),
    ("btio", 4, ["--grid", "1"], "--grid"),
    ("btio", 1, ["--class", "Q"], "--class"),
    ("btio", 1, ["--write-interval", "0"], "--write-interval"),
]


@pytest.mark.parametrize("kernel,n,args,words", BAD, ids=[f"{b[0]}{''.join(b[2])}-{b[1]}" for b in BAD])
def test_bad_parameters(job, kernel, n, args, words):
    line, p = usage_error(job, n, kernel, args)
    assert words in line
    assert p.stderr.splitlines() == [line]  # nothing else: no MPI error, no abort


def test_listed_with_help(job):
    p = job.run(1, [KERNEL, "--list"])
    assert {"matrix", "noncontig", "tileio", "btio"} <= set(p.stdout.split())
    for kernel in ("matrix", "noncontig", "tileio", "btio"):
        p = job.run(1, [KERNEL, kernel, "--help"])
        assert p.stdout.startswith(f"usage: iotame-kernel {kernel}") and "--skip-write" in p.stdout


def test_reading_a_missing_file_fails(job):
    p = job.run(2, [KERNEL, "matrix", "--skip-write"], check=False)
    assert p.returncode == 3 and p.stdout == ""
    assert "cannot open" in p.stderr and NAMES["matrix"] in p.stderr
