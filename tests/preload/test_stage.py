"""Asynchronous staging (runtime/src/stage) end to end: files byte-identical with and without it under every
collective strategy and for every kernel that writes, a process reads what it wrote, a background write's failure is
returned at sync and close to the ranks whose data it was and reported, the cache's size holds against a writer far
faster than the device, and a killed job keeps what it synced. Real mpiexec jobs with libiotame.so preloaded; no test
asserts a timing."""
import ctypes
import json
import subprocess

import pytest

from conftest import LIBIOTAME, TEST_PROGRAMS, sample, write_json

RANDOM = TEST_PROGRAMS / "random_collective"
CHECK = TEST_PROGRAMS / "stage_check"
SEED = 20261125
# test.dat's reads go to the library: memory types as packed bytes (MPICH's ROMIO mishandles some on its own); and
# sync-barrier-sync after each write, as MPI-IO requires for reading what other processes wrote
SYNCED = {"RANDOM_COLLECTIVE_BYTES": "1", "RANDOM_COLLECTIVE_SYNC": "1"}


def strategies():
    lib = ctypes.CDLL(str(LIBIOTAME))
    lib.iotame_registry.restype = ctypes.c_char_p
    modules = json.loads(lib.iotame_registry().decode())["modules"]
    return [s["name"] for m in modules if m["name"] == "collective" for s in m["strategies"]] + ["auto"]


def staging(path, match=None, process=None, **settings):
    rule = {"staging": dict({"enabled": True}, **settings)}
    body = {"version": 1, "defaults": {"staging": dict(process or {})}}
    if match:
        body["files"] = [dict(match=match, **rule)]
    else:
        body["defaults"]["staging"].update(rule["staging"])
    return write_json(path, body)


def section(stats):
    return json.loads(stats.read_text())["modules"]["stage"]


@pytest.mark.parametrize("strategy", sample(strategies(), 4, "staged_strategies"))
def test_files_match_the_library_under_every_strategy(job, strategy):
    """The randomized differential test (views and datatypes redrawn every case) with test.dat staged in a small
    cache: files, buffers and statuses identical to the library's on ref.dat. make test: 4 strategies drawn
    (conftest.sample); make test-all: every one."""
    stats, cases = job.tmp / "s.json", 40
    config = json.loads(staging(job.tmp / "c.json", match="*/test.dat", process={"cache_mb": 1}).read_text())
    config["files"][0]["collective"] = {"strategy": strategy, "virtual_node_size": 1, "readahead": 0}
    p = job.run(2, [RANDOM, job.tmp, SEED, cases, 0], preload=True, config=write_json(job.tmp / "c.json", config),
                stats=stats, timeout=300, extra_env=SYNCED)
    assert json.loads(p.stdout) == {"cases": cases, "calls": 4 * 2 * cases, "mismatches": 0}
    s = section(stats)
    assert s["calls"] > 0 and s["bytes"] > 0 and s["flusher"]["bytes_written"] > 0
    assert s["flusher"]["max_dirty_bytes"] <= s["flusher"]["cache_bytes"]


def test_prefetch_keeps_the_files_and_buffers_identical(job):
    stats, cases = job.tmp / "s.json", 30
    config = staging(job.tmp / "c.json", match="*/test.dat", prefetch=True, process={"prefetch_kb": 64})
    p = job.run(2, [RANDOM, job.tmp, SEED + 1, cases, 0], preload=True, config=config, stats=stats, timeout=300,
                extra_env=SYNCED)
    assert json.loads(p.stdout)["mismatches"] == 0


def test_prefetch_serves_sequential_reads_and_the_data_verifies(job):
    """IO_Bench's sequential read phase hits the read-ahead; its backward and random phases miss and go to the
    library; every phase verifies."""
    stats = job.tmp / "s.json"
    res, _ = job.kernel(2, "iobench", "--api", "mpiio", "--file-size", "2m", "--block-size", "16k", preload=True,
                        stats=stats, config=staging(job.tmp / "c.json", enabled=False, prefetch=True,
                                                    process={"prefetch_kb": 128}))
    assert res["verified"] is True
    s = section(stats)
    assert s["calls"] == 0 and s["prefetch_hits"] > 0 and s["prefetch_misses"] > 0
    assert s["prefetch_bytes"] == 16384 * s["prefetch_hits"] and s["flusher"]["prefetch_reads"] > 0


def test_a_process_reads_what_it_wrote_and_the_size_counts_staged_data(job):
    stats = job.tmp / "s.json"
    p = job.run(2, [CHECK, "raw", job.tmp / "raw.dat"], preload=True, stats=stats,
                config=staging(job.tmp / "c.json"))
    assert json.loads(p.stdout) == {"checked": 34, "mismatches": 0, "size_ok": True}
    s = section(stats)
    assert s["calls"] == 2 * 9 and s["reads_waited"] > 0 and s["bypassed"] == 0


def test_writes_through_and_staged_writes_reach_the_file_in_program_order(job):
    """A 1 MiB cache: large writes that do not fit are written through within the call, except where they meet the
    rank's staged data (then they are staged after it); overlaps in both orders, a collective strided write of
    large pieces, reads after each: every read sees the rank's writes in program order, and reads that meet no
    staged data do not wait for it."""
    stats = job.tmp / "s.json"
    # the flusher writes only for a drain or a nearly full cache (not after a quiet time, not at half of the cache,
    # which both ranks' small writes pass together): the reads of other bytes then find the rank's staged data still
    # pending whatever the machine's speed
    config = staging(job.tmp / "c.json", process={"cache_mb": 1, "flush_delay_ms": 60000, "flush_threshold": 0.9})
    p = job.run(2, [CHECK, "through", job.tmp / "t.dat"], preload=True, stats=stats, config=config)
    assert json.loads(p.stdout) == {"checked": 12, "mismatches": 0}
    s = section(stats)
    assert s["written_through"] >= 2 and s["calls"] > 2 * 256 and s["bypassed"] == 0
    assert s["reads_waited"] > 0 and s["reads_not_waited"] > 0
    assert s["bytes"] + s["written_through_bytes"] == 2 * (256 + 768 + 768 + 64 + 640 + 2 * 768) * 1024


def test_a_call_of_many_small_pieces_is_one_record_and_the_ranks_pieces_merge(job):
    """A collective call of 64 Ki pieces of 4 bytes per rank, as 4096 instances of a 16-piece vector in noncontiguous
    memory, interleaved with the other rank's in the file: each call is one record of one run (its description does
    not grow with its pieces), and the flusher writes the two ranks' pieces together, not one request per piece."""
    stats = job.tmp / "s.json"
    res, _ = job.kernel(2, "noncontig", "--collective", "--mem-noncontig", "--elmtcount", "1", "--veclen", "65536",
                        "--count", "4096", "--loops", "2", preload=True, stats=stats,
                        config=staging(job.tmp / "c.json"))
    assert res["verified"] is True
    s = section(stats)
    f = s["flusher"]
    assert s["calls"] == 2 * 2 and f["records"] == s["calls"] and f["runs_in"] == f["records"]
    assert f["extents_in"] == 2 * 2 * 65536 and f["bytes_written"] == 4 * f["extents_in"]
    assert f["writes_out"] < f["extents_in"] // 100, f


def test_threads_of_a_process_stage_under_thread_multiple(job):
    """Two threads per rank write at once (MPI_THREAD_MULTIPLE): every write is staged and reaches the file."""
    stats = job.tmp / "s.json"
    job.run(2, [TEST_PROGRAMS / "threaded_writes", job.tmp / "t.dat", 500], preload=True, stats=stats,
            config=staging(job.tmp / "c.json", process={"cache_mb": 1}))
    writes = 2 * 2 * 500
    assert section(stats)["calls"] == writes and (job.tmp / "t.dat").stat().st_size == writes * 512


# ---- every kernel that writes: the same bytes, or verified where the file holds times (HDF5) ----

KERNELS = [
    ("ior", 2, ["-b", "256k", "-t", "64k", "-s", "2", "-W", "-R", "-k"], "iotame-ior.dat"),
    ("ior", 2, ["-b", "64k", "-t", "16k", "-s", "2", "-c", "-W", "-R", "-k"], "iotame-ior.dat"),
    ("matrix", 2, ["--rows", "16", "--cols", "512", "--depth", "4", "--keep"], "iotame-matrix.dat"),
    ("noncontig", 2, ["--elmtcount", "16", "--veclen", "32", "--loops", "2", "--collective", "--keep"], "iotame-noncontig.dat"),
    ("noncontig", 2, ["--elmtcount", "16", "--veclen", "32", "--loops", "2", "--mem-noncontig", "--keep"], "iotame-noncontig.dat"),
    ("noncontig", 2, ["--elmtcount", "16", "--veclen", "32", "--loops", "2", "--collective", "--count", "8", "--keep"], "iotame-noncontig.dat"),
    ("tileio", 2, ["--sz-tile-x", "32", "--sz-tile-y", "16", "--nr-tiles-x", "1", "--nr-tiles-y", "2", "--keep"], "iotame-tileio.dat"),
    ("btio", 1, ["--grid", "9", "--steps", "7", "--write-interval", "3", "--keep"], "iotame-btio.dat"),
    ("madbench", 2, ["--api", "mpiio", "--no-pix", "256", "--no-bin", "2", "--keep"], None),
    ("iobench", 2, ["--api", "mpiio", "--file-size", "256k", "--block-size", "16k", "--keep"], None),
    ("spio", 2, ["--api", "mpiio", "--total-size", "384k", "--block-size", "32k", "--keep"], None),
    ("beffio", 2, ["--chunks", "1k,1k+8,4k", "--scatter-size", "8k", "--reps", "1", "--api", "mpiio", "--keep"], None),
    ("phases", 2, ["--phases", "3", "--records", "4", "--record-size", "4k", "--layout", "interleaved", "--keep"], "iotame-phases.dat"),
    ("phases", 2, ["--phases", "2", "--records", "4", "--record-size", "4k", "--collective", "--keep"], "iotame-phases.dat"),
    ("vpicio", 2, ["--particles", "1000", "--steps", "2", "--collective"], None),
    ("flashio", 2, ["--maxblocks", "5", "--nxb", "4", "--nyb", "4", "--nzb", "4", "--nguard", "2"], None),
    ("vorpalio", 2, ["--block", "6x5x4", "--steps", "2", "--collective"], None),
    ("gcrmio", 2, ["--cells", "300", "--levels", "7"], None),
]


def take_files(d):
    """The files a kernel left in d (not the configuration and statistics), removed from d."""
    out = {}
    for p in sorted(d.iterdir()):
        if p.is_file() and p.suffix not in (".json", ".c"):
            out[p.name] = p.read_bytes()
            p.unlink()
    return out


# make test: one case of each kernel (the kernel's other cases drawn: conftest.sample); make test-all: every case
STAGED_KERNELS = [i for _, i in sample([(k[0], i) for i, k in enumerate(KERNELS)], 0, "staged_kernels", cover=(0,))]


@pytest.mark.parametrize("kernel,n,args,name", [KERNELS[i] for i in STAGED_KERNELS],
                         ids=[f"{KERNELS[i][0]}-{i}" for i in STAGED_KERNELS])
def test_every_kernel_verifies_and_writes_the_same_bytes(job, kernel, n, args, name):
    runs = {}
    for staged in (False, True):
        stats = job.tmp / "s.json"
        config = staging(job.tmp / "c.json", process={"cache_mb": 1}) if staged else None
        res, p = job.kernel(n, kernel, *args, preload=staged, config=config, stats=stats if staged else None,
                            timeout=300)
        assert res["verified"] is True and res["errors"] == [], p.stderr
        runs[staged] = take_files(job.tmp)
        if staged:
            s = section(stats)
            assert s["calls"] > 0 and s["flusher"]["failed"] == []
    if name:  # files without times in them (HDF5's hold modification times): byte for byte
        assert runs[True] == runs[False] and name in runs[True]


# ---- failures of the background writes ----

def test_a_failed_background_write_is_returned_at_sync_and_close_to_its_rank(job):
    """Each rank may write files up to 1 MiB (RLIMIT_FSIZE): rank 1's MiB at 1 MiB fails in the flusher, after its
    write returned. The sync returns the error to rank 1 only (rank 0's data was written, in the same merged
    request), the second write's failure comes back at close, and the statistics name the file."""
    stats = job.tmp / "s.json"
    p = job.run(2, [CHECK, "fail", job.tmp / "f.dat", 1 << 20], preload=True, stats=stats,
                config=staging(job.tmp / "c.json"))
    out = json.loads(p.stdout)
    assert out["write"] == ["ok", "ok"]           # staged: the writes returned at once
    assert out["sync"] == ["ok", "io"] and out["close"] == ["ok", "io"]
    assert out["handler_calls"] == [0, 2]         # through the file's error handler, once per failed call
    s = section(stats)
    assert s["errors_returned"] == 2
    (failure,) = s["flusher"]["failed"]
    assert failure["path"].endswith("f.dat") and failure["bytes"] == 2 << 20


@pytest.fixture
def tiny_fs(tmp_path):
    """A 1 MiB tmpfs, mounted for the test (root only)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_file_system_is_reported_as_no_space(job, tiny_fs):
    stats = job.tmp / "s.json"
    p = job.run(2, [CHECK, "fail", tiny_fs / "f.dat", 0], preload=True, stats=stats,
                config=staging(job.tmp / "c.json"))
    out = json.loads(p.stdout)
    assert out["write"] == ["ok", "ok"] and "no_space" in out["sync"] + out["close"]
    assert any(f["error"] == "No space left on device" for f in section(stats)["flusher"]["failed"])


# ---- the cache's size ----

def small_cache_job(job, records, record_size):
    """2 ranks write 2 phases of `records` records to a 1 MiB cache in front of an emulated 40 MB/s disk: the staging
    statistics."""
    stats = job.tmp / "s.json"
    config = {"version": 1, "defaults": {"staging": {"enabled": True, "cache_mb": 1},
                                         "emulate": {"device": "disk", "bandwidth_mbs": 40,
                                                     "state": str(job.tmp / "dev.state")}}}
    res, _ = job.kernel(2, "phases", "--phases", "2", "--records", str(records), "--record-size", record_size, preload=True,
                        stats=stats, config=write_json(job.tmp / "c.json", config), timeout=300)
    assert res["verified"] is True
    return section(stats)


def test_the_cache_is_never_exceeded_by_a_writer_faster_than_the_device(job):
    """1024 records of 1 KiB per phase (small pieces, worth merging): writers block for room, and the most ever dirty
    is within the cache."""
    s = small_cache_job(job, 1024, "1k")
    assert s["blocked_seconds"] > 0 and s["written_through"] == 0
    assert 0 < s["flusher"]["max_dirty_bytes"] <= s["flusher"]["cache_bytes"] <= 1 << 20


def test_large_writes_that_find_the_cache_full_are_written_through(job):
    """Records of 64 KiB: a write that finds no room goes to the file within the call instead of waiting for the
    flusher; every byte is either staged or written through, the cache is never exceeded, the data verifies."""
    s = small_cache_job(job, 32, "64k")
    assert s["written_through"] > 0
    assert s["bytes"] + s["written_through_bytes"] == 2 * 2 * 32 * 65536
    assert s["flusher"]["bytes_written"] == s["bytes"]
    assert 0 < s["flusher"]["max_dirty_bytes"] <= s["flusher"]["cache_bytes"] <= 1 << 20


# ---- a killed job ----

def test_a_killed_job_keeps_what_it_synced(job):
    """Every rank is killed with its second MiB staged and not synced: the synced MiB of each rank is in the file
    (docs/staging.md: what a kill loses is what was staged since the last sync or close)."""
    path = job.tmp / "k.dat"
    p = job.run(2, [CHECK, "kill", path], preload=True, config=staging(job.tmp / "c.json"), check=False)
    assert p.returncode != 0 and json.loads(p.stdout.splitlines()[0]) == {"synced": True}
    data = path.read_bytes()
    for rank in range(2):
        off = 2 * rank << 20
        assert data[off:off + (1 << 20)] == bytes((i * 7 + 3) % 251 for i in range(off, off + (1 << 20)))
