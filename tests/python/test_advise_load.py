"""Reading a Darshan log (iotame.advise.load): the header of each log format (3.10, 3.21, 3.41) as darshan-util lays
it out, on the real logs of ../shared/darshan-logs and the wheel's samples: every one is accepted, and the regions its
maps promise end exactly at the file's end; a cut log is refused as cut, whichever format; bytes after the last
region are read with a note; Darshan's partial flags reach the document per module and per file; an impossible
process count is never passed on as a count."""
import struct
from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

from iotame.advise.load import (FORMAT_LAYOUTS, LAYOUT_16, LAYOUT_64, NPROCS_MAX, DarshanLog,  # noqa: E402
                                _load_finish, check_header, load_log)
from iotame.cli import main                                     # noqa: E402
from iotame.errors import LogError                              # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHARED = (ROOT / ".." / "shared" / "darshan-logs").resolve()
SHARED_LOGS = sorted(SHARED.glob("*.darshan"))
WHEEL_LOGS = sorted(Path(darshan.__file__).resolve().parent.glob("**/*.darshan"))
needs_shared = pytest.mark.skipif(not SHARED_LOGS, reason=f"no logs in {SHARED}")


def shared(prefix):
    return next(p for p in SHARED_LOGS if p.name.startswith(prefix))


def test_the_layouts_are_darshan_utils():
    """darshan-log-format.h: 3.00-3.21 comp_type + uint32 partial flag, 16 maps, 16 uint32 versions (360 bytes);
    3.41: uint64 partial flag at 24 (after padding), name map at 32, 64 maps and versions (1328 bytes)."""
    assert (LAYOUT_16.maps_at, LAYOUT_16.modules, LAYOUT_16.header_bytes) == (24, 16, 360)
    assert (LAYOUT_64.partial_at, LAYOUT_64.maps_at, LAYOUT_64.modules, LAYOUT_64.header_bytes) == (24, 32, 64, 1328)
    assert FORMAT_LAYOUTS["3.41"] is LAYOUT_64 and FORMAT_LAYOUTS["3.21"] is FORMAT_LAYOUTS["3.10"] is LAYOUT_16


@needs_shared
def test_the_shared_logs_cover_old_and_new_formats():
    formats = {check_header(p).format for p in SHARED_LOGS}
    assert {"3.10", "3.21", "3.41"} <= formats


@pytest.mark.parametrize("log", SHARED_LOGS + WHEEL_LOGS, ids=lambda p: p.name[:40])
def test_every_real_log_is_accepted_and_its_maps_end_at_the_files_end(log):
    header = check_header(log)
    assert header.layout is not None
    assert header.mapped_bytes == header.file_bytes == log.stat().st_size
    assert header.notes == []
    # the job record starts right after the header: it decompresses there (zlib) in every real log
    import zlib
    data = log.read_bytes()
    assert zlib.decompressobj().decompress(data[header.layout.header_bytes:header.layout.header_bytes + 4096])


@needs_shared
@pytest.mark.parametrize("prefix", ["ior_pnetcdf_hdf5", "release_logs__mpi-io-test-x86_64-3.4.7", "dlio_logs",
                                    "imbalanced_io", "release_logs__mpi-io-test-x86_64-3.1.6"])
def test_a_cut_log_is_refused_as_cut_in_every_format(tmp_path, capsys, prefix):
    data = shared(prefix).read_bytes()
    version = data[:4].decode()
    for keep in (len(data) - 1, len(data) * 9 // 10, len(data) * 3 // 4, 1400, 200):
        cut = tmp_path / f"cut{keep}.darshan"
        cut.write_bytes(data[:keep])
        with pytest.raises(LogError, match="truncated") as e:
            load_log(cut)
        assert str(cut) in str(e.value) and (f"the file has {keep}" in str(e.value) or "header" in str(e.value))
    assert version in ("3.41", "3.21", "3.10")
    rc = main(["advise", str(tmp_path / "cut200.darshan")])
    out, err = capsys.readouterr()
    assert rc == 2 and "truncated" in err and "Traceback" not in err


def test_the_issues_case_a_3_41_log_cut_to_2330_bytes(tmp_path):
    """A log of format 3.41 whose maps end past 2,330 bytes, cut there: the older layout's check let it pass."""
    log = next(p for p in SHARED_LOGS if check_header(p).format == "3.41" and p.stat().st_size > 2600)
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(log.read_bytes()[:2330])
    with pytest.raises(LogError, match=r"truncated: its header \(format 3.41\) maps \d+ bytes, the file has 2330"):
        check_header(cut)


@needs_shared
def test_bytes_after_the_last_region_are_read_with_a_note(tmp_path):
    log = shared("skew_io")
    longer = tmp_path / "longer.darshan"
    longer.write_bytes(log.read_bytes() + b"\0" * 7)
    data = load_log(longer)
    assert data["header"]["file_bytes"] - data["header"]["mapped_bytes"] == 7
    assert any("7 bytes after the last region" in n for n in data["header"]["notes"])
    assert data["records"]["POSIX"]


@needs_shared
def test_overlapping_maps_are_a_damaged_header(tmp_path):
    data = bytearray(shared("ior_pnetcdf_hdf5").read_bytes())
    off, length = struct.unpack_from("<QQ", data, 32)           # the name map of format 3.41
    struct.pack_into("<QQ", data, 32, off, length + 64)         # now it runs into the next region
    bad = tmp_path / "overlap.darshan"
    bad.write_bytes(bytes(data))
    with pytest.raises(LogError, match="damaged header: the region at byte"):
        check_header(bad)


@needs_shared
def test_darshans_partial_flag_per_module_and_per_file():
    """imbalanced-io.darshan (format 3.21): the header's flag has bit 1 (POSIX) set, and pydarshan says so too."""
    data = load_log(shared("imbalanced_io"))
    assert data["header"]["partial_flag"] == 1 << 1
    assert data["header"]["partial_modules"] == ["POSIX"]
    ids = {str(r["id"]) for r in data["records"]["POSIX"]} | {str(r["id"]) for r in data["records"]["MPI-IO"]}
    assert set(data["partial"]) == ids and all(v == {"POSIX": True} for v in data["partial"].values())
    log = DarshanLog.of(data)
    assert log.partial_modules == ["POSIX"] and any("POSIX partial" in n for n in log.notes)
    whole = load_log(shared("mpi_io_test_with_dxt"))
    assert whole["header"]["partial_modules"] == [] and whole["partial"] == {}


def test_an_impossible_process_count_is_unknown_not_a_number():
    """4,427,712,942,739,450,220 processes (a damaged job record of a real log, issue 49): nprocs is null in the
    document, 0 in the typed job (unknown), the value is kept for the note, and never rendered as a count."""
    doc = {"job": {"nprocs": 4427712942739450220, "run_time": 1.0, "jobid": 1, "log_ver": "3.41", "lib_ver": "3.4.4"},
           "modules": ["POSIX"], "records": {"POSIX": []}, "names": {}, "partial_modules": []}
    header = check_header(SHARED_LOGS[0]) if SHARED_LOGS else check_header(WHEEL_LOGS[0])
    data = _load_finish(doc, header)
    assert data["job"]["nprocs"] is None and data["job"]["nprocs_recorded"] == 4427712942739450220
    assert any("4427712942739450220" in n and "damaged" in n for n in data["header"]["notes"])
    log = DarshanLog.of(data)
    assert log.job.nprocs == 0 and log.job.nprocs_recorded == 4427712942739450220
    ok = _load_finish({**doc, "job": {**doc["job"], "nprocs": NPROCS_MAX}}, header)
    assert ok["job"]["nprocs"] == NPROCS_MAX and not any("impossible" in n for n in ok["header"]["notes"])
