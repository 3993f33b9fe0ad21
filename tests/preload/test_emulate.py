"""The storage device model (runtime/src/emulate): labelled statistics, counts that match what the POSIX layer
recorded, files byte-identical to a run without it, and positionings for random reads against stream hits for
sequential ones. Striped over several targets: files byte-identical to the library's under every strategy, the
throttle gates every target, and target_aligned takes its targets from the layout (counts only: no test asserts a
timing)."""
import json

import pytest

from conftest import TEST_PROGRAMS, write_json

POSIX_IO = TEST_PROGRAMS / "posix_io"
RANDOM = TEST_PROGRAMS / "random_collective"
SEED = 20261207
BLOCK, BLOCKS = 65536, 8
PARAMETERS = {"servers", "bandwidth_mbs", "position_ms", "seek_ms", "span_mb", "streams", "write_behind", "state",
              "targets", "target_unit"}
# a fast device: requests wait a little, so that the runs stay short
FAST = {"bandwidth_mbs": 2000, "position_ms": 0.05, "seek_ms": 0}


def emulate_config(job, name="emu.json", all_files=False, defaults=None, files=None, **emulate):
    """A configuration with the emulated device; its state file in the test's own directory."""
    emulate.setdefault("device", "disk")
    emulate.setdefault("state", str(job.tmp / "device.state"))
    defaults = dict(defaults or {}, emulate=emulate)
    if all_files:
        defaults["posix"] = {"all_files": True}
    body = {"version": 1, "defaults": defaults}
    if files:
        body["files"] = files
    return write_json(job.tmp / name, body)


def run(job, n, mode, name, config=None, preload=True):
    data, stats = job.tmp / name, job.tmp / f"{name}.stats.json"
    p = job.run(n, [POSIX_IO, mode, data, BLOCK, BLOCKS], preload=preload, config=config,
                stats=stats if preload else None)
    out = json.loads(p.stdout)
    assert out["verified"]
    return data, (json.loads(stats.read_text()) if preload else None), out


def posix_record(stats, path):
    (f,) = [f for f in stats["files"] if f["path"] == str(path)]
    return f["posix"]


def test_disk_statistics_are_labelled_and_count_the_posix_requests(job):
    data, stats, _ = run(job, 2, "independent", "disk.dat", config=emulate_config(job))
    e = stats["modules"]["emulate"]
    assert e["device"] == "disk"
    assert PARAMETERS <= set(e)
    assert (e["servers"], e["bandwidth_mbs"], e["position_ms"], e["seek_ms"], e["span_mb"], e["streams"],
            e["write_behind"], e["targets"], e["target_unit"]) == (1, 60, 4.2, 8, 4096, 1, True, 1, 1 << 20)
    assert e["state"] == str(job.tmp / "device.state")
    p = posix_record(stats, data)
    assert e["reads"] == p["reads"] == 2 * BLOCKS and e["writes"] == p["writes"] == 2 * BLOCKS
    assert e["requests"] == e["reads"] + e["writes"] == sum(e["requests_per_rank"])
    assert e["requests_per_rank"] == [2 * BLOCKS, 2 * BLOCKS]
    assert e["bytes"] == p["bytes_read"] + p["bytes_written"]
    # write-behind: only reads position or continue a stream
    assert e["positionings"] + e["stream_hits"] == e["reads"]
    assert e["positionings"] >= 2  # each reader's first read at least
    assert e["unmodelled"] == 0 and not stats["passthrough_reasons"]
    assert e["delay_seconds"] > 0
    # one target: every request is one piece on it
    assert e["pieces"] == e["requests"] and e["target_segments"] == [e["segments"]] and e["target_bytes"] == [e["bytes"]]


def test_overrides_replace_the_preset(job):
    config = emulate_config(job, device="raid5", streams=2, bandwidth_mbs=500, write_behind=False)
    _, stats, _ = run(job, 1, "independent", "raid.dat", config=config)
    e = stats["modules"]["emulate"]
    assert (e["device"], e["servers"], e["streams"], e["bandwidth_mbs"], e["write_behind"]) == ("raid5", 5, 2, 500, False)
    # without write-behind, writes position or continue a stream as reads do
    assert e["positionings"] + e["stream_hits"] == e["requests"] == 2 * BLOCKS


def test_without_emulate_there_is_no_section(job):
    _, stats, _ = run(job, 2, "independent", "plain.dat")
    assert "emulate" not in stats.get("modules", {})
    none = write_json(job.tmp / "none.json", {"version": 1, "defaults": {"emulate": {"device": "none"}}})
    _, stats, _ = run(job, 2, "independent", "none.dat", config=none)
    assert "emulate" not in stats.get("modules", {})


def test_files_are_byte_identical_to_a_run_without_it(job):
    config = emulate_config(job, all_files=True)
    for mode in ("independent", "collective", "plain"):
        plain, _, a = run(job, 2, mode, f"{mode}.ref.dat", preload=False)
        emulated, stats, b = run(job, 2, mode, f"{mode}.emu.dat", config=config)
        assert plain.read_bytes() == emulated.read_bytes()
        assert a["checksum"] == b["checksum"]
        assert stats["modules"]["emulate"]["requests"] > 0
    assert (job.tmp / "plain.ref.dat.plain").read_bytes() == (job.tmp / "plain.emu.dat.plain").read_bytes()


def test_sequential_reads_continue_the_stream(job):
    data, stats, _ = run(job, 1, "independent", "seq.dat", config=emulate_config(job))
    e = stats["modules"]["emulate"]
    assert e["reads"] == BLOCKS
    assert e["positionings"] == 1 and e["stream_hits"] == BLOCKS - 1  # only the first read positions


def test_random_and_backward_reads_position(job):
    """IO_Bench on one rank: sequential, backward and random reads of 256 KiB blocks. The blocks are farther apart
    than the stream's gap, so a read continues the stream exactly when the POSIX layer counts it consecutive (which
    it also does for the file's first read, at offset 0: the one read that positions though consecutive)."""
    config = emulate_config(job, all_files=True)
    stats = job.tmp / "iob.stats.json"
    res, p = job.kernel(1, "iobench", "--file-size", "2m", "--block-size", "256k", "--file", job.tmp / "iob.dat",
                        preload=True, config=config, stats=stats)
    assert res["verified"] is True, p.stderr
    s = json.loads(stats.read_text())
    e = s["modules"]["emulate"]
    (f,) = [f for f in s["files"] if f["path"].startswith(str(job.tmp / "iob.dat"))]
    reads, consecutive = f["posix"]["reads"], f["posix"]["access"]["read"]["consecutive"]
    assert e["reads"] == reads == 3 * 8
    assert e["positionings"] == reads - consecutive + 1
    assert e["stream_hits"] == consecutive - 1
    # sequential: 1 positioning; backward: all 8; random: most
    assert e["positionings"] >= 1 + 8 + 4


# ---- several storage targets ----

def striped_statistics(job, name, targets, unit, n=2, mode="collective", block=BLOCK, blocks=BLOCKS, defaults=None,
                       files=None):
    config = emulate_config(job, f"{name}.json", defaults=defaults, files=files, targets=targets, target_unit=unit,
                            **FAST)
    data, stats, _ = run(job, n, mode, name, config=config)
    return data, stats


def file_record(stats, path):
    (f,) = [f for f in stats["files"] if f["path"] == str(path)]
    return f


def test_a_striped_file_spreads_over_the_targets(job):
    """Two ranks' 64 KiB blocks interleaved over four targets of 64 KiB units: every target serves a quarter of the
    bytes, a block is one piece on one target, and the counts add up as with one target."""
    data, stats = striped_statistics(job, "striped.dat", 4, BLOCK)
    e = stats["modules"]["emulate"]
    assert (e["targets"], e["target_unit"]) == (4, BLOCK)
    total = e["bytes"]
    assert total == 2 * (2 * BLOCKS * BLOCK)  # written and read back
    assert e["target_bytes"] == [total // 4] * 4
    assert sum(e["target_segments"]) == e["segments"] >= e["pieces"] >= e["requests"]
    assert e["unmodelled"] == 0 and not stats["passthrough_reasons"]
    # a request over several units is split: one rank's 8 blocks of 64 KiB in one call of 512 KiB reach 4 targets
    _, stats = striped_statistics(job, "wide.dat", 4, BLOCK // 4, n=1, mode="independent")
    e = stats["modules"]["emulate"]
    assert e["pieces"] > e["requests"]
    assert all(b > 0 for b in e["target_bytes"])


def test_the_throttle_gates_every_target(job):
    """The throttle reads the emulated layout where it reads Lustre's: one gate per target the requests reached
    (a request's first byte's target), each holding its level. Each rank's 64 KiB blocks, one unit each, reach all
    four targets."""
    throttle = {"throttle": {"readers": 1, "writers": 1}}
    _, stats = striped_statistics(job, "gated.dat", 4, BLOCK, mode="independent", defaults=throttle)
    gates = stats["modules"]["throttle"]["targets"]
    assert len(gates) == 4 == len({g["target"] for g in gates})
    for g in gates:
        assert g["write"]["requests"] > 0 and g["read"]["requests"] > 0
        assert g["write"]["max_inside"] <= 1 and g["read"]["max_inside"] <= 1
    # one target: one gate
    _, stats = striped_statistics(job, "gated1.dat", 1, BLOCK, mode="independent", defaults=throttle)
    assert len(stats["modules"]["throttle"]["targets"]) == 1


def test_target_aligned_takes_the_targets_from_the_layout(job):
    """Without collective.targets and striping hints, target_aligned aligns to the layout the POSIX layer reads
    (the emulated storage's here); the configuration still wins, and one target stays the default."""
    aligned = {"collective": {"strategy": "target_aligned", "virtual_node_size": 1}}
    data, stats = striped_statistics(job, "layout.dat", 4, BLOCK, defaults=aligned)
    f = file_record(stats, data)
    assert f["storage_targets"] == {"count": 4, "unit": BLOCK, "from": "layout"}
    assert f["strategies"]["target_aligned"]["calls"] == 2
    data, stats = striped_statistics(job, "configured.dat", 4, BLOCK,
                                     defaults={"collective": dict(aligned["collective"], targets=2)})
    assert file_record(stats, data)["storage_targets"] == {"count": 2, "unit": BLOCK, "from": "configuration"}
    data, stats = striped_statistics(job, "single.dat", 1, BLOCK, defaults=aligned)
    assert file_record(stats, data)["storage_targets"] == {"count": 1, "unit": 1 << 20, "from": "default"}


@pytest.mark.parametrize("strategy", ["passthrough", "independent", "two_phase", "node_local", "target_aligned",
                                      "view_based", "auto"])
def test_striped_files_match_the_library_under_every_strategy(job, strategy):
    """The randomized differential test on storage striped over three targets in 4 KiB units (test.dat routed
    through the strategy, ref.dat the library's): files, buffers and statuses identical."""
    stats, cases = job.tmp / "s.json", 30
    config = emulate_config(job, targets=3, target_unit=4096, **FAST,
                            files=[{"match": "*/test.dat", "collective": {"strategy": strategy, "virtual_node_size": 1,
                                                                          "readahead": 0}}])
    # where the library serves test.dat's calls, its memory types are packed bytes (random_collective's usage)
    env = {"RANDOM_COLLECTIVE_BYTES": "1"} if strategy in ("passthrough", "independent", "auto") else None
    p = job.run(2, [RANDOM, job.tmp, SEED, cases, 0], preload=True, config=config, stats=stats, timeout=300,
                extra_env=env)
    assert json.loads(p.stdout) == {"cases": cases, "calls": 4 * 2 * cases, "mismatches": 0}
    s = json.loads(stats.read_text())
    e = s["modules"]["emulate"]
    assert e["requests"] > 0 and e["unmodelled"] == 0
    assert all(b > 0 for b in e["target_bytes"]) and e["pieces"] > e["requests"]
    if strategy == "target_aligned":
        (f,) = [f for f in s["files"] if f["path"] == str(job.tmp / "test.dat")]
        assert f["storage_targets"] == {"count": 3, "unit": 4096, "from": "layout"}
