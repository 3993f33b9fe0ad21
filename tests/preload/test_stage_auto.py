"""staging.enabled "auto" (runtime/src/stage/module.c and settings.c, docs/staging.md): a file's writes are staged where the machine
profile of its file system says writes are synchronous or the device time the area hides beyond the write-back
outweighs the copy, and not where the write-back absorbs them or no profile is found; the file's statistics say
which and why, and the file is byte for byte what the library writes either way. Real mpiexec jobs; no timings."""
import json

import pytest

from conftest import write_json
from test_profile_runtime import profile_for
from test_stage import take_files

PHASES = ["--phases", "3", "--records", "8", "--record-size", "4k", "--layout", "interleaved", "--keep"]
NAME = "iotame-phases.dat"
MIB = 1 << 20


def auto_job(job, profile=None, cache_mb=1):
    """The phases kernel on 2 ranks with staging.enabled "auto" (and collective.profile naming `profile`): its
    files, the phases file's "stage" record and the job's stage section."""
    defaults = {"staging": {"enabled": "auto", "cache_mb": cache_mb}}
    if profile:
        defaults["collective"] = {"profile": str(profile)}
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": defaults})
    stats = job.tmp / "s.json"
    res, p = job.kernel(2, "phases", *PHASES, preload=True, config=config, stats=stats)
    assert res["verified"] is True, p.stderr
    st = json.loads(stats.read_text())
    (f,) = [f for f in st["files"] if f["path"].endswith(NAME)]
    return take_files(job.tmp), f["stage"], st["modules"].get("stage")


@pytest.fixture
def reference(job):
    """The phases file as the library writes it (no runtime)."""
    res, p = job.kernel(2, "phases", *PHASES)
    assert res["verified"] is True, p.stderr
    return take_files(job.tmp)[NAME]


def with_write_back(job, absorbed_bytes):
    """The sample profile keyed to the job's file system, with the write-back absorbing that many bytes."""
    path = profile_for(job.tmp, job.xdg / "p.json")
    prof = json.loads(path.read_text())
    prof["storage"]["write_back"].update(absorbed_bytes=absorbed_bytes, absorbed_mbs=3000.0 if absorbed_bytes else 0)
    return write_json(path, prof)


def test_a_profile_of_synchronous_writes_stages_them(job, reference):
    job.xdg.mkdir(parents=True)
    profile = with_write_back(job, 0)
    files, decided, s = auto_job(job, profile)
    assert decided == {"enabled": "auto", "writes": "staged", "reason": "synchronous", "profile": str(profile)}
    assert s["calls"] > 0 and s["flusher"]["bytes_written"] == 2 * 3 * 8 * 4096
    assert s["flusher"]["started"] == 1       # on the node, by the first process that staged (auto alone)
    assert files[NAME] == reference


def test_a_write_back_smaller_than_the_area_stages_what_it_cannot_absorb(job, reference):
    job.xdg.mkdir(parents=True)
    profile = with_write_back(job, MIB)  # 63 MiB of a 64 MiB area at the device's 1.2 GB/s: 55 ms, the copy 8 ms
    files, decided, s = auto_job(job, profile, cache_mb=64)
    assert decided["writes"] == "staged" and decided["reason"] == "overlap"
    assert s["calls"] > 0
    assert files[NAME] == reference


def test_a_write_back_that_absorbs_the_area_leaves_the_writes_to_the_library(job, reference):
    job.xdg.mkdir(parents=True)
    profile = with_write_back(job, 3 << 30)
    files, decided, s = auto_job(job, profile)
    assert decided == {"enabled": "auto", "writes": "not staged", "reason": "absorbed", "profile": str(profile)}
    assert s["calls"] == 0 and s["written_through"] == 0 and s["flusher"]["bytes_written"] == 0
    assert s["flusher"]["started"] == 0       # no file staged: no thread in any process
    assert files[NAME] == reference


def test_without_a_profile_auto_does_not_stage_nor_set_up_the_area(job, reference):
    files, decided, s = auto_job(job)
    assert decided == {"enabled": "auto", "writes": "not staged", "reason": "no profile", "profile": None}
    assert s is None  # no profile anywhere: no area, no flusher
    assert files[NAME] == reference


def test_with_only_another_file_systems_profile_auto_does_not_stage(job, reference):
    profiles = job.xdg / "iotame" / "profiles"
    profiles.mkdir(parents=True)
    profile_for(job.tmp, profiles / "other.json", device="0:4242", path="/elsewhere")
    files, decided, s = auto_job(job)
    assert decided == {"enabled": "auto", "writes": "not staged", "reason": "no profile", "profile": None}
    assert s["calls"] == 0 and s["flusher"]["bytes_written"] == 0  # the area was set up: a profile might have fit
    assert files[NAME] == reference


def test_staging_enabled_true_records_its_decision(job, reference):
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"staging": {"enabled": True}}})
    stats = job.tmp / "s.json"
    res, p = job.kernel(2, "phases", *PHASES, preload=True, config=config, stats=stats)
    assert res["verified"] is True, p.stderr
    (f,) = [f for f in json.loads(stats.read_text())["files"] if f["path"].endswith(NAME)]
    assert f["stage"] == {"enabled": True, "writes": "staged", "reason": "enabled", "profile": None}
    assert json.loads(stats.read_text())["modules"]["stage"]["flusher"]["started"] == 1   # at MPI_Init
    assert take_files(job.tmp)[NAME] == reference


def test_a_killed_job_under_auto_keeps_what_it_synced(job):
    """The flusher auto starts with the first staged file runs in that process: every rank is killed with its second
    MiB staged and not synced, and the synced MiB of each rank is in the file, as with staging always on."""
    from test_stage import CHECK
    job.xdg.mkdir(parents=True)
    profile = with_write_back(job, 0)
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {
        "staging": {"enabled": "auto"}, "collective": {"profile": str(profile)}}})
    path = job.tmp / "k.dat"
    p = job.run(2, [CHECK, "kill", path], preload=True, config=config, check=False)
    assert p.returncode != 0 and json.loads(p.stdout.splitlines()[0]) == {"synced": True}
    data = path.read_bytes()
    for rank in range(2):
        off = 2 * rank << 20
        assert data[off:off + (1 << 20)] == bytes((i * 7 + 3) % 251 for i in range(off, off + (1 << 20)))
