"""The storage device model (runtime/src/emulate): labelled statistics, counts that match what the POSIX layer
recorded, files byte-identical to a run without it, and positionings for random reads against stream hits for
sequential ones (counts only: no test asserts a timing)."""
import json

from conftest import TEST_PROGRAMS, write_json

POSIX_IO = TEST_PROGRAMS / "posix_io"
BLOCK, BLOCKS = 65536, 8
PARAMETERS = {"servers", "bandwidth_mbs", "position_ms", "seek_ms", "span_mb", "streams", "write_behind", "state"}


def emulate_config(job, name="emu.json", all_files=False, **emulate):
    """A configuration with the emulated device; its state file in the test's own directory."""
    emulate.setdefault("device", "disk")
    emulate.setdefault("state", str(job.tmp / "device.state"))
    defaults = {"emulate": emulate}
    if all_files:
        defaults["posix"] = {"all_files": True}
    return write_json(job.tmp / name, {"version": 1, "defaults": defaults})


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
            e["write_behind"]) == (1, 60, 4.2, 8, 4096, 1, True)
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
