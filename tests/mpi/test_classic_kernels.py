"""The classic benchmark kernels madbench, iobench, spio, beffio and phases (real mpiexec, 1 to 4 ranks): phases and byte
counts, file layouts checked against the data pattern, corruption found at its exact offset, bad options."""
import math

import pytest

from conftest import KERNEL
from kernel_helpers import check_phases, mismatch, pattern, rank_file, reread_corrupted, usage_error

KiB = 1024


def corrupt_and_reread(job, n, kernel, args, name, offset, finder):
    """--keep run, one flipped byte, --skip-write run: exit 1 and exactly that byte reported by `finder`."""
    job.kernel(n, kernel, *args, "--keep")
    res, p, original = reread_corrupted(job, n, kernel, args, job.tmp / name, offset, ("--skip-write", "--keep"))
    assert res["errors"] == mismatch([finder], name, offset, original)
    assert f"offset {offset}" in p.stderr
    return res


def check_bad_option(job, kernel, args, option, n=1):
    line, _ = usage_error(job, n, kernel, args)
    assert f"option --{option}" in line


# ---- madbench ----

MAD = "iotame-madbench.dat"


def numroc(n, nb, p, np_):
    blocks = n // nb
    count = blocks // np_ * nb
    extra = blocks % np_
    return count + (nb if p < extra else n % nb if p == extra else 0)


def mad_shares(n, npix, bs):
    """Bytes of each rank's share of one matrix on the near-square column-major grid."""
    prow = int(math.isqrt(n))
    while n % prow:
        prow -= 1
    pcol = n // prow
    return [numroc(npix, bs, r % prow, prow) * numroc(npix, bs, r // prow, pcol) * 8 for r in range(n)]


MAD_CASES = [
    (1, ["--api", "posix"], 64),
    (2, ["--api", "mpiio", "--filetype", "shared"], 64),
    (4, ["--api", "posix", "--filetype", "shared", "--rmod", "2", "--wmod", "4"], 60),  # uneven shares: slots
    (4, ["--api", "mpiio", "--filetype", "unique", "--rmod", "2", "--compute-scale", "0.01",
         "--compute-mode", "sleep"], 64),
]


@pytest.mark.parametrize("n,args,npix", MAD_CASES, ids=["1-posix", "2-mpiio-shared", "4-posix-shared-rmod",
                                                        "4-mpiio-rmod-compute"])
def test_madbench(job, n, args, npix):
    nbin = 3
    res, _ = job.kernel(n, "madbench", "--no-pix", str(npix), "--blocksize", "8", "--no-bin", str(nbin), *args,
                        "--keep")
    assert res["verified"] is True and res["errors"] == []
    check_phases(res, ["dSdC", "invD", "W"], nbin * npix * npix * 8)
    prm = res["params"]
    assert (prm["no-pix"], prm["no-bin"], prm["no-gang"], prm["blocksize"]) == (npix, nbin, 1, 8)
    rmod = int(args[args.index("--rmod") + 1]) if "--rmod" in args else 1
    wmod = int(args[args.index("--wmod") + 1]) if "--wmod" in args else 1
    mad = res["madbench"]
    assert mad["readers"] == -(-n // rmod) and mad["writers"] == -(-n // wmod)
    for phase in ("dSdC", "invD", "W"):
        assert mad[phase]["tio"] > 0 and mad[phase]["lbstio"] >= 0
    if "--compute-scale" in args:  # invD: npix^3 / n flops per bin at 0.01 s per Gflop
        assert mad["invD"]["compute"] >= 0.9 * nbin * 0.01 * npix ** 3 / n * 1e-9

    shares = mad_shares(n, npix, 8)
    shared = "shared" in args
    if shared:
        slot = max(shares)
        data = (job.tmp / MAD).read_bytes()
        assert len(data) == ((n - 1) * nbin + nbin - 1) * slot + shares[-1]
    for rank in range(n):
        if not shared:
            data = (job.tmp / rank_file(MAD, rank)).read_bytes()
            assert len(data) == nbin * shares[rank]
        for b in range(nbin):
            off = ((rank * nbin + b) * slot) if shared else b * shares[rank]
            size = shares[rank]
            for o, length in ((off, 40), (off + size - 24, 24)):
                assert data[o:o + length] == pattern(o, length, rank=rank), (rank, b)


def test_madbench_defaults_remove_files(job):
    res, _ = job.kernel(2, "madbench", "--no-bin", "2")
    assert (res["params"]["no-pix"], res["params"]["filetype"], res["params"]["api"]) == (256, "unique", "posix")
    assert res["verified"] is True
    assert list(job.tmp.iterdir()) == []


def test_madbench_corruption(job):
    args = ["--no-pix", "64", "--blocksize", "8", "--no-bin", "3"]
    offset = 16 * KiB + 4321  # bin 1 of rank 1's 16 KiB shares
    res = corrupt_and_reread(job, 2, "madbench", args, rank_file(MAD, 1), offset, 1)
    assert [ph["name"] for ph in res["phases"]] == ["invD", "W"]


def test_madbench_shared_corruption(job):
    args = ["--no-pix", "64", "--blocksize", "8", "--no-bin", "2", "--filetype", "shared", "--api", "mpiio"]
    offset = (1 * 2 + 1) * 16 * KiB + 8  # rank 1, bin 1
    corrupt_and_reread(job, 2, "madbench", args, MAD, offset, 1)


@pytest.mark.parametrize("args,option", [
    (["--no-gang", "2"], "no-gang"),
    (["--no-pix", "64", "--blocksize", "64"], "blocksize"),  # one block column for a 1 x 2 grid
    (["--rmod", "0"], "rmod"),
    (["--filetype", "split"], "filetype"),
    (["--compute-scale", "-1"], "compute-scale"),
], ids=["no-gang", "blocksize", "rmod", "filetype", "compute-scale"])
def test_madbench_bad_options(job, args, option):
    check_bad_option(job, "madbench", args, option, n=2)


# ---- iobench ----

IOB = "iotame-iobench.dat"
IOB_PHASES = ["seq_write", "seq_read", "back_write", "back_read", "rand_write", "rand_read"]


@pytest.mark.parametrize("n,api", [(1, "posix"), (2, "mpiio"), (4, "posix")])
def test_iobench(job, n, api):
    size = 256 * KiB
    res, _ = job.kernel(n, "iobench", "--api", api, "--file-size", "256k", "--block-size", "16k", "--keep")
    assert res["verified"] is True and res["errors"] == []
    check_phases(res, IOB_PHASES, n * size)
    assert (res["params"]["file-size"], res["params"]["block-size"], res["params"]["api"]) == (size, 16 * KiB, api)
    assert sorted(f.name for f in job.tmp.iterdir()) == [rank_file(IOB, r) for r in range(n)]
    for rank in range(n):
        data = (job.tmp / rank_file(IOB, rank)).read_bytes()
        assert len(data) == size and data == pattern(0, size, rank=rank)


def test_iobench_corruption(job):
    res = corrupt_and_reread(job, 2, "iobench", ["--file-size", "128k", "--block-size", "8k"],
                             rank_file(IOB, 0), 5000, 0)
    assert [ph["name"] for ph in res["phases"]] == ["seq_read", "back_read", "rand_read"]


@pytest.mark.parametrize("args,option", [
    (["--file-size", "100k", "--block-size", "16k"], "file-size"),
    (["--block-size", "0"], "block-size"),
    (["--api", "hdf5"], "api"),
], ids=["file-size", "block-size", "api"])
def test_iobench_bad_options(job, args, option):
    check_bad_option(job, "iobench", args, option)


# ---- spio ----

SPIO = "iotame-spio.dat"
SPIO_PHASES = ["write0", "read1", "rewrite1", "read2", "rewrite2", "read3", "rewrite3"]


@pytest.mark.parametrize("n,api", [(1, "posix"), (2, "mpiio"), (4, "posix")])
def test_spio(job, n, api):
    total = 384 * KiB
    res, _ = job.kernel(n, "spio", "--api", api, "--total-size", "384k", "--block-size", "32k", "--keep")
    assert res["verified"] is True and res["errors"] == []
    check_phases(res, SPIO_PHASES, total)  # the aggregate stays fixed whatever n
    for rank in range(n):
        data = (job.tmp / rank_file(SPIO, rank)).read_bytes()
        assert len(data) == total // n and data == pattern(0, total // n, rank=rank)


def test_spio_corruption(job):
    res = corrupt_and_reread(job, 2, "spio", ["--total-size", "256k", "--block-size", "16k", "--api", "mpiio"],
                             rank_file(SPIO, 1), 100 * KiB + 1, 1)
    assert [ph["name"] for ph in res["phases"]] == ["read1", "read2", "read3"]


@pytest.mark.parametrize("args,option,n", [
    (["--total-size", "100k", "--block-size", "16k"], "total-size", 1),
    (["--total-size", "192k", "--block-size", "64k"], "total-size", 2),  # 3 blocks over 2 processes
    (["--api", "stdio"], "api", 1),
], ids=["not-blocks", "not-per-process", "api"])
def test_spio_bad_options(job, args, option, n):
    check_bad_option(job, "spio", args, option, n=n)


# ---- beffio ----

BEFF = "iotame-beffio"
TYPES = range(5)
ACCESSES = ["write", "rewrite", "read"]
CHUNKS = [(1024, 0), (1024, 8), (4096, 0)]  # (size, +N)
SCATTER = 8 * KiB
BEFF_ARGS = ["--chunks", "1k,1k+8,4k", "--scatter-size", "8k"]


def beff_expected_files(n, reps, per_rank_type2=True):
    """{file name: expected bytes} of the b_eff_io layouts, every chunk size repeated reps[type][c] times."""
    lens = [b + e for b, e in CHUNKS]
    per_call = [max(1, SCATTER // b) for b, _ in CHUNKS]
    files = {}
    for t in (0, 1):  # strided: chunk g of rank r at base + (g * n + r) * l
        out, base = bytearray(), 0
        for c, l in enumerate(lens):
            count = reps[t][c] * (per_call[c] if t == 0 else 1)
            region = bytearray(n * count * l)
            for g in range(count):
                for r in range(n):
                    off = base + (g * n + r) * l
                    region[(g * n + r) * l:(g * n + r + 1) * l] = pattern(off, l, rank=r)
            out += region
            base += len(region)
        files[f"{BEFF}.type{t}"] = bytes(out)
    for r in range(n):
        size = sum(reps[2][c] * l for c, l in enumerate(lens))
        files[rank_file(f"{BEFF}.type2", r)] = pattern(0, size, rank=r)
    segment = sum(reps[3][c] * l for c, l in enumerate(lens))
    for t in (3, 4):
        files[f"{BEFF}.type{t}"] = b"".join(pattern(r * segment, segment, rank=r) for r in range(n))
    return files


def check_b_eff_io(res):
    mbs = {ph["name"]: ph["mbs"] for ph in res["phases"]}
    avg = {a: (2 * mbs[f"type0_{a}"] + sum(mbs[f"type{t}_{a}"] for t in range(1, 5))) / 6 for a in ACCESSES}
    assert res["b_eff_io"]["access_mbs"] == pytest.approx(avg, rel=1e-6)
    write_side = (mbs["type0_write"] + mbs["type0_rewrite"] + sum(mbs[f"type{t}_write"] for t in range(1, 5))) / 6
    assert res["b_eff_io_mbs"] == pytest.approx(math.sqrt(write_side * avg["read"]), rel=1e-6)


@pytest.mark.parametrize("n,api,reps", [(1, "mpiio", 2), (2, "posix", 2), (4, "mpiio", 1)])
def test_beffio_fixed_repetitions(job, n, api, reps):
    res, _ = job.kernel(n, "beffio", *BEFF_ARGS, "--reps", str(reps), "--api", api, "--keep")
    assert res["verified"] is True and res["errors"] == []
    per_call = [8, 8, 2]
    type_bytes = [reps * sum(k * (b + e) for k, (b, e) in zip(per_call, CHUNKS))] + \
        [reps * sum(b + e for b, e in CHUNKS)] * 4
    names = [f"type{t}_{a}" for a in ACCESSES for t in TYPES]
    check_phases(res, names, {f"type{t}_{a}": n * type_bytes[t] for a in ACCESSES for t in TYPES})
    detail = res["b_eff_io"]
    assert detail["chunks"] == [1024, 1032, 4096] and detail["type0_chunks_per_call"] == per_call
    assert all(detail["repetitions"][f"type{t}"] == [reps] * 3 for t in TYPES)
    check_b_eff_io(res)
    expected = beff_expected_files(n, [[reps] * 3] * 5)
    assert sorted(f.name for f in job.tmp.iterdir()) == sorted(expected)
    for name, content in expected.items():
        assert (job.tmp / name).read_bytes() == content, name


def test_beffio_time_bounded(job):
    res, _ = job.kernel(2, "beffio", *BEFF_ARGS, "--seconds-per-pattern", "0.01", "--keep")
    assert res["verified"] is True
    reps = [res["b_eff_io"]["repetitions"][f"type{t}"] for t in TYPES]
    assert all(r >= 1 for row in reps for r in row)
    # Types 3 and 4 repeat the fewest chunks of types 0-2 (type 0 counted in chunks, 8, 8 and 2 per call).
    for c, k in enumerate([8, 8, 2]):
        assert reps[3][c] == reps[4][c] == min(reps[0][c] * k, reps[1][c], reps[2][c])
    assert res["params"]["reps"] == 0 and res["params"]["seconds-per-pattern"] == 0.01
    check_b_eff_io(res)
    expected = beff_expected_files(2, reps)
    for name, content in expected.items():
        assert (job.tmp / name).read_bytes() == content, name


def test_beffio_defaults(job):
    res, _ = job.kernel(1, "beffio", "--seconds-per-pattern", "0")
    prm = res["params"]
    assert (prm["api"], prm["chunks"], prm["scatter-size"]) == ("mpiio", "1k,1k+8,32k,32k+8,1m,1m+8", 1 << 20)
    assert res["b_eff_io"]["type0_chunks_per_call"] == [1024, 1024, 32, 32, 1, 1]
    assert all(res["b_eff_io"]["repetitions"][f"type{t}"] == [1] * 6 for t in TYPES)  # 0 s: one of each
    assert res["verified"] is True and res["b_eff_io_mbs"] > 0
    assert list(job.tmp.iterdir()) == []


@pytest.mark.parametrize("name,offset,finder", [
    (f"{BEFF}.type0", (3 * 2 + 1) * 1024 + 10, 1),  # 1 KiB chunk 3 of rank 1
    (rank_file(f"{BEFF}.type2", 0), 1024 + 1032 + 1101, 0),  # the 4k chunk in rank 0's own file
    (f"{BEFF}.type4", (1024 + 1032 + 4096) + 1024 + 5, 1),  # rank 1's segment, its 1k+8 chunk
], ids=["type0", "type2", "type4"])
def test_beffio_corruption(job, name, offset, finder):
    res = corrupt_and_reread(job, 2, "beffio", [*BEFF_ARGS, "--reps", "1"], name, offset, finder)
    assert [ph["name"] for ph in res["phases"]] == [f"type{t}_read" for t in TYPES]
    assert res["b_eff_io_mbs"] is None and res["b_eff_io"]["access_mbs"]["write"] is None


@pytest.mark.parametrize("args,option", [
    (["--chunks", "1k,,4k"], "chunks"),
    (["--chunks", "1k+2k"], "chunks"),
    (["--chunks", "1x"], "chunks"),
    (["--skip-write"], "skip-write"),
    (["--seconds-per-pattern", "-1"], "seconds-per-pattern"),
], ids=["empty", "plus-too-large", "not-a-size", "skip-write-needs-reps", "seconds"])
def test_beffio_bad_options(job, args, option):
    check_bad_option(job, "beffio", args, option)


# ---- phases ----

PHASES = "iotame-phases.dat"


def phases_offset(layout, n, records, size, rank, phase, record):
    """File offset of a record of the phases kernel (kernels/phases.c)."""
    if layout == "contiguous":
        return ((phase * n + rank) * records + record) * size
    return ((phase * records + record) * n + rank) * size


@pytest.mark.parametrize("collective", [False, True], ids=["independent", "collective"])
@pytest.mark.parametrize("layout", ["contiguous", "interleaved"])
def test_phases(job, layout, collective):
    n, nphases, records, size = 2, 3, 4, 4 * KiB
    args = ["--phases", str(nphases), "--records", str(records), "--record-size", "4k", "--layout", layout,
            "--compute", "0.05", "--compute-mode", "sleep"] + (["--collective"] if collective else [])
    res, _ = job.kernel(n, "phases", *args, "--keep")
    assert res["verified"] is True and res["errors"] == []
    total = n * nphases * records * size
    check_phases(res, ["write", "write_close", "read"], total)
    prm = res["params"]
    assert (prm["phases"], prm["records"], prm["record-size"], prm["layout"], prm["collective"]) == \
        (nphases, records, size, layout, collective)
    assert (prm["compute"], prm["compute-mode"]) == (0.05, "sleep")

    app = res["application"]
    assert app["bytes"] == total and app["phase_bytes"] == n * records * size
    assert len(app["io_phase_seconds"]) == nphases and all(s >= 0 for s in app["io_phase_seconds"])
    assert app["io_seconds"] == pytest.approx(sum(app["io_phase_seconds"]), rel=1e-6)
    write, write_close, _ = res["phases"]
    assert write["seconds"] == pytest.approx(app["io_seconds"], rel=1e-6)
    assert write_close["seconds"] == pytest.approx(app["io_seconds"] + app["close_seconds"], rel=1e-6)
    assert app["mbs"] == pytest.approx(write["mbs"], rel=1e-6)
    assert app["mbs_with_close"] == pytest.approx(write_close["mbs"], rel=1e-6)
    assert app["compute_seconds"] >= 0.9 * nphases * 0.05  # every phase sleeps 0.05 s
    assert app["wall_seconds"] >= max(app["compute_seconds"], app["close_seconds"])

    expected = bytearray(total)
    for rank in range(n):
        for phase in range(nphases):
            for record in range(records):
                off = phases_offset(layout, n, records, size, rank, phase, record)
                expected[off:off + size] = pattern(off, size, rank=rank)
    assert (job.tmp / PHASES).read_bytes() == bytes(expected)


def test_phases_defaults_remove_files(job):
    res, _ = job.kernel(2, "phases", "--records", "2", "--record-size", "1k")
    prm = res["params"]
    assert (prm["phases"], prm["compute"], prm["compute-mode"], prm["layout"], prm["collective"]) == \
        (4, 0, "busy", "contiguous", False)
    assert res["verified"] is True and len(res["application"]["io_phase_seconds"]) == 4
    assert list(job.tmp.iterdir()) == []


def test_phases_corruption(job):
    args = ["--phases", "2", "--records", "4", "--record-size", "4k", "--layout", "interleaved"]
    offset = phases_offset("interleaved", 2, 4, 4 * KiB, 1, 1, 2) + 100  # rank 1, phase 1, record 2
    res = corrupt_and_reread(job, 2, "phases", args, PHASES, offset, 1)
    assert [ph["name"] for ph in res["phases"]] == ["read"] and res["application"] is None


@pytest.mark.parametrize("args,option", [
    (["--layout", "diagonal"], "layout"),
    (["--compute", "-1"], "compute"),
    (["--compute-mode", "idle"], "compute-mode"),
    (["--records", "0"], "records"),
    (["--record-size", "2g"], "record-size"),
    (["--records", "100", "--record-size", "1g"], "records"),  # over 16 GiB per process and phase
], ids=["layout", "compute", "compute-mode", "records", "record-size", "phase-too-large"])
def test_phases_bad_options(job, args, option):
    line, _ = usage_error(job, 2, "phases", args)
    assert f"option --{option}" in line or f"options --{option}" in line


def test_kernels_are_listed(job):
    p = job.run(1, [KERNEL, "--list"])
    assert {"madbench", "iobench", "spio", "beffio", "phases"} <= set(p.stdout.split())
    p = job.run(1, [KERNEL, "beffio", "--help"])
    assert "--seconds-per-pattern" in p.stdout and "--chunks" in p.stdout
