"""Aggregator caching (staging.collective "aggregators", docs/design/aggregator-caching.md): collective writes that
view_based serves are cached in the aggregators' staging rings and written behind. On one machine each rank is a
virtual node of its own (virtual_node_size 1), so every rank is an aggregator and caches other ranks' data. Asserted:
files, buffers and statuses identical to the library's under the randomized differential test (blocks of 7 bytes to
1 MiB); MPI-IO's consistency rules around cached data (a rank reads its own data at once, collectively and
independently, overwrites it independently, sees its size; the others see it after sync-barrier-sync; set_size,
atomic mode, split collectives and close drain it); a failed background write of cached blocks is returned at the
next sync or close to exactly the ranks whose data it was, not to the aggregator that cached it; a killed aggregator
ends the job. The same differential and sequences run across two testbed hosts in tests/testbed/. No timing is
asserted."""
import json
import os
import subprocess
import time

import pytest

from conftest import LIBIOTAME, TEST_PROGRAMS, write_json
from test_profile_runtime import profile_for

RANDOM = TEST_PROGRAMS / "random_collective"
SEQUENCES = TEST_PROGRAMS / "agg_sequences"
FAULT = TEST_PROGRAMS / "agg_fault"
FAULTS = TEST_PROGRAMS / "libiotame_faults.so"
SEED = 20261128
BLOCK = 65536  # agg_fault's: rank r writes file block 3r + 1, cached by aggregator (3r + 1) mod 2


def cached(match, block_size, cache_mb=1, strategy="view_based"):
    """A configuration caching the collective writes of the files matching `match` at the aggregators."""
    return {"version": 1, "defaults": {"staging": {"cache_mb": cache_mb}}, "files": [
        {"match": match, "staging": {"enabled": True, "collective": "aggregators"},
         "collective": {"strategy": strategy, "virtual_node_size": 1, "block_size": block_size, "readahead": 0}}]}


def stage_stats(stats):
    s = json.loads(stats.read_text())
    return s["modules"]["stage"], s


@pytest.mark.parametrize("block", [7, 64, 1000, 1 << 20])
@pytest.mark.parametrize("synced", [False, True], ids=["unsynced", "synced"])
def test_files_match_the_library(job, block, synced):
    """The randomized differential test with test.dat's collective writes cached at the aggregators: files, buffers,
    statuses and pointers identical to the library's on ref.dat. Unsynced, every read-back is a collective read
    through the same blocks (each aggregator writes its cached blocks before reading them); synced, sync-barrier-sync
    drains every aggregator before another rank reads."""
    stats, cases = job.tmp / "s.json", 30
    config = write_json(job.tmp / "c.json", cached("*/test.dat", block))
    env = {"RANDOM_COLLECTIVE_BYTES": "1", **({"RANDOM_COLLECTIVE_SYNC": "1"} if synced else {})}
    p = job.run(2, [RANDOM, job.tmp, SEED + block, cases, 0], preload=True, config=config, stats=stats, timeout=300,
                extra_env=env)
    assert json.loads(p.stdout) == {"cases": cases, "calls": 4 * 2 * cases, "mismatches": 0}
    s, _ = stage_stats(stats)
    assert s["aggregated_calls"] > 0 and s["aggregated_records"] > 0 and s["aggregated_bytes"] > 0
    assert s["flusher"]["bytes_written"] >= s["aggregated_bytes"]
    assert s["agg_drains"] >= (s["aggregated_calls"] if synced else 2)  # every sync (both ranks), or the closes


def test_consistency_sequences(job):
    """agg_sequences: reads of cached data (own, collective and independent), an independent overwrite of cached
    data, get_size, the other ranks' data after sync-barrier-sync, set_size, atomic mode, a split collective, close
    and reopen: every read and the final file as the program's own image says."""
    stats = job.tmp / "s.json"
    config = write_json(job.tmp / "c.json", cached("*/seq.dat", 4096))
    p = job.run(2, [SEQUENCES, job.tmp / "seq.dat"], preload=True, config=config, stats=stats)
    assert json.loads(p.stdout) == {"checked": 2 * 14, "mismatches": 0}
    s, whole = stage_stats(stats)
    assert s["aggregated_calls"] == 2 * 6  # the six plain collective writes; the atomic and split ones are not cached
    assert s["agg_drains"] >= 2 * 6 and s["agg_waits"] > 0


def test_the_library_alone_agrees_with_the_sequences(job):
    """The oracle of the sequences program: the library alone gives the same reads."""
    p = job.run(2, [SEQUENCES, job.tmp / "seq.dat"])
    assert json.loads(p.stdout) == {"checked": 2 * 14, "mismatches": 0}


def test_without_view_based_the_file_stays_with_node_staging(job):
    """Caching acts only where view_based serves the collective writes: under two_phase the file is staged per node
    and the statistics say why."""
    stats = job.tmp / "s.json"
    config = write_json(job.tmp / "c.json", cached("*/test.dat", 4096, strategy="two_phase"))
    p = job.run(2, [RANDOM, job.tmp, SEED, 5, 0], preload=True, config=config, stats=stats,
                extra_env={"RANDOM_COLLECTIVE_BYTES": "1", "RANDOM_COLLECTIVE_SYNC": "1"})
    assert json.loads(p.stdout)["mismatches"] == 0
    s, whole = stage_stats(stats)
    assert "aggregated_calls" not in s and s["calls"] > 0
    assert '"collective_reason": "collective.strategy is not view_based"' in json.dumps(whole)


def fault_job(job, spec):
    """agg_fault under the injector (spec: its rule on f.dat, in the flusher's thread of rank 0, the one flusher of
    the machine); returns the ranks' lines, the injections logged, and the process."""
    config = write_json(job.tmp / "c.json", cached("*/f.dat", BLOCK))
    log = job.tmp / "log"
    env = {"IOTAME_FAULT": f"op=write,file=f.dat,thread=other,rank=0,{spec},log={log}"}
    cmd = ["mpiexec", "-n", "2", "-genv", "LD_PRELOAD", f"{LIBIOTAME}:{FAULTS}", str(FAULT), str(job.tmp / "f.dat"),
           str(BLOCK)]
    p = subprocess.run(cmd, env=job.env(False, config, None, env), cwd=job.tmp, capture_output=True, text=True,
                       timeout=90)
    logged = [dict(kv.split("=") for kv in line.split()) for line in log.with_suffix(".0").read_text().splitlines()] \
        if log.with_suffix(".0").exists() else []
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return lines, logged, p


def owner_of(offset):
    """The rank whose data lies at `offset` (agg_fault: rank r at block 3r + 1)."""
    return (int(offset) // BLOCK - 1) // 3


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_failed_write_of_cached_blocks_reaches_the_ranks_whose_data_it_was(job, nth):
    """A full target (ENOSPC) at the nth write of the machine's flusher: the rank whose block that write held (found
    from the injector's log) gets MPI_ERR_NO_SPACE at its next sync (the first call's blocks) or close (the second
    call's), the other rank MPI_SUCCESS. Each rank's block is cached by the other rank's process, so blame by the
    caching process would give the error to the wrong rank."""
    lines, logged, p = fault_job(job, f"fail=ENOSPC,nth={nth},count=1")
    assert p.returncode == 0, p.stderr[-2000:]
    assert len(logged) == 1 and int(logged[0]["bytes"]) == BLOCK, logged
    victim, at = owner_of(logged[0]["offset"]), "sync" if nth <= 2 else "close"
    for x in lines:
        assert x["write"] == x["write2"] == "MPI_SUCCESS"  # the writes return once cached
        want = {"sync": "MPI_SUCCESS", "close": "MPI_SUCCESS"}
        if x["rank"] == victim:
            want[at] = "MPI_ERR_NO_SPACE"
        assert {k: x[k] for k in want} == want, (x, logged)


def test_a_target_that_stays_full_fails_every_rank_at_sync_and_close(job):
    lines, logged, p = fault_job(job, "fail=ENOSPC,nth=1,count=0")
    assert p.returncode == 0, p.stderr[-2000:]
    assert {owner_of(x["offset"]) for x in logged} == {0, 1}
    assert [(x["sync"], x["close"]) for x in lines] == [("MPI_ERR_NO_SPACE", "MPI_ERR_NO_SPACE")] * 2


@pytest.mark.parametrize("nth", [1, 2])
def test_a_killed_aggregator_ends_the_job(job, nth):
    """The process that holds an aggregator and the node's flusher is killed while it writes cached blocks behind:
    the launcher ends the job (no wait of the runtime outlives MPI), no process and no segment is left."""
    before = set(os.listdir("/dev/shm"))
    t0 = time.monotonic()
    lines, logged, p = fault_job(job, f"fail=kill,nth={nth}")
    assert p.returncode != 0 and time.monotonic() - t0 < 60
    assert logged and logged[0]["fail"] == "kill"
    assert subprocess.run(["pgrep", "-f", str(FAULT)], capture_output=True).returncode == 1
    assert not [n for n in set(os.listdir("/dev/shm")) - before if n.startswith("iotame-")]


def auto_noncontig(job, profile, *args):
    """The noncontig kernel (collective, 2 ranks, each a virtual node) with staging.collective "auto" under
    view_based: the kernel's verification, the file's stage record and the job's stage section."""
    collective = {"strategy": "view_based", "virtual_node_size": 1, "block_size": 65536}
    if profile:
        collective["profile"] = str(profile)
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {
        "staging": {"enabled": True, "collective": "auto", "cache_mb": 4}, "collective": collective}})
    stats = job.tmp / "s.json"
    res, p = job.kernel(2, "noncontig", "--collective", "--loops", "4", *args, preload=True, config=config,
                        stats=stats, extra_env={"IOTAME_PROFILE": str(job.tmp / "none.json")})
    assert res["verified"] is True, p.stderr
    st = json.loads(stats.read_text())
    (f,) = [f for f in st["files"] if f["path"].endswith("iotame-noncontig.dat")]
    return f["stage"], st["modules"]["stage"]


def synchronous_profile(job):
    """The sample machine profile keyed to the job's file system, its writes synchronous (no write-back): small
    scattered writes cost a positioning each."""
    path = profile_for(job.tmp, job.tmp / "p.json")
    prof = json.loads(path.read_text())
    prof["storage"]["write_back"].update(absorbed_bytes=0, absorbed_mbs=0)
    return write_json(path, prof)


def test_auto_caches_small_interleaved_pieces_where_the_model_says_it_pays(job):
    """64-byte pieces of the two ranks interleaved through the file, on storage that positions for each small write:
    the model predicts that whole blocks written by the aggregators take far less than each node's pieces, and
    the file's collective writes are cached from the first call on."""
    stage, section = auto_noncontig(job, synchronous_profile(job), "--elmtcount", "16", "--veclen", "4096")
    assert stage["collective"] == "aggregators" and stage["collective_reason"].startswith("the model: ")
    assert section["aggregated_calls"] == 2 * 4


def test_auto_stages_large_pieces_per_node(job):
    """1 MiB pieces: nothing to merge, and the exchange would cost more than it saves: node staging after the first
    call (which ran uncached)."""
    stage, section = auto_noncontig(job, synchronous_profile(job), "--elmtcount", "262144", "--veclen", "2")
    assert stage["collective"] == "node" and stage["collective_reason"].startswith("the model: ")
    assert "aggregated_calls" not in section


def test_auto_without_a_profile_stages_per_node(job):
    stage, section = auto_noncontig(job, None, "--elmtcount", "16", "--veclen", "4096")
    assert (stage["collective"], stage["collective_reason"]) == ("node", "no machine profile")
    assert "aggregated_calls" not in section and section["calls"] == 2 * 3


def test_auto_deciding_for_node_staging_lets_another_open_of_the_file_cache(job):
    """staging.collective auto without a profile: the first handle's first write decides for node staging, and the
    node stops counting it as caching the file, so a second handle of the file opened while the first is still open
    is bound as caching (the file's last note), not refused as if the first still cached."""
    stats = job.tmp / "s.json"
    config = cached("*/two.dat", 4096)
    config["files"][0]["staging"]["collective"] = "auto"
    config = write_json(job.tmp / "c.json", config)
    p = job.run(2, [TEST_PROGRAMS / "agg_two_opens", job.tmp / "two.dat"], preload=True, config=config, stats=stats,
                extra_env={"IOTAME_PROFILE": str(job.tmp / "none.json")})
    assert json.loads(p.stdout) == {"mismatches": 0}
    _, whole = stage_stats(stats)
    (f,) = [f for f in whole["files"] if f["path"].endswith("two.dat")]
    assert f["stage"]["collective"] == "aggregators", f["stage"].get("collective_reason")
