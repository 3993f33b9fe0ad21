"""`iotame advise` on the real Darshan logs the darshan wheel ships (tests/input, examples): a report and a
configuration the runtime's validator accepts for every log; findings checked against expectations computed here
from the logs' own counters (read with pydarshan directly, not through iotame); bad input (not a log, truncated,
damaged, an unreadable version) ends with exit status 2 and a message naming the file, never a traceback."""
import collections
import fnmatch
import json
import os
from pathlib import Path, PurePosixPath

import pytest

darshan = pytest.importorskip("darshan")

from iotame.advise import ADVICE_VERSION                     # noqa: E402
from iotame.advise.findings import (FILES_PER_OST_MAX, FINDING_IDS, IMBALANCE_MIN_SECONDS,  # noqa: E402
                                    IMBALANCE_RATIO, SMALL_BINS, SMALL_SHARE)
from iotame.cli import main                                   # noqa: E402
from iotame.config import check_config                        # noqa: E402

from .profiles import good_profile                            # noqa: E402

DARSHAN_DIR = Path(darshan.__file__).resolve().parent
LOGS = sorted(DARSHAN_DIR.glob("**/*.darshan"))
LOG = {p.name: p for p in LOGS}                                # the same name in two folders: same log
MACSIO = next(p for p in LOGS if p.name.startswith("shane_macsio"))


@pytest.fixture(autouse=True)
def no_profile_found(tmp_path, monkeypatch):
    """No machine profile unless a test names one: an empty XDG config home, the run in a temporary directory."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


def advise_json(capsys, *args):
    rc = main(["advise", *map(str, args), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def records(path, mod):
    """A module's records, straight from pydarshan."""
    r = darshan.DarshanReport(str(path), read_all=True)
    return r, [r.records[mod][i] for i in range(len(r.records[mod]))] if mod in r.records else []


def test_the_wheel_ships_the_logs_the_tests_need():
    assert {"sample-badost.darshan", "sample-goodost.darshan", "sample.darshan", "noposix.darshan",
            "ior_hdf5_example.darshan", "dxt.darshan", "sample-dxt-simple.darshan"} <= set(LOG)
    assert len(LOGS) >= 15


@pytest.mark.parametrize("log", LOGS, ids=[str(p.relative_to(DARSHAN_DIR)) for p in LOGS])
def test_every_shipped_log_gives_a_report_and_a_valid_configuration(tmp_path, capsys, log):
    cfg = tmp_path / "advice.json"
    rc = main(["advise", str(log), "--config-out", str(cfg)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "Traceback" not in out + err
    assert f"iotame advise {log}" in out and "prediction: no machine profile" in out
    assert check_config(cfg) == []                         # the runtime's own validator (iotame-config)
    written = json.loads(cfg.read_text())
    advice = advise_json(capsys, log)
    assert advice["config"] == written                     # --json and --config-out agree
    # every setting answers findings the advice lists, and meta records the same settings
    ids = {(f["id"], f["match"]) for f in advice["findings"]}
    for s in advice["settings"]:
        assert s["findings"] and all(fid in {i for i, _ in ids} for fid in s["findings"])
    assert [m["key"] for m in written["meta"]["advise"]["settings"]] == [s["key"] for s in advice["settings"]]
    # each rule's glob matches the basename of every file of its group, and is not an absolute path
    for rule in written.get("files", []):
        assert "/" not in rule["match"]
        group = next(g for g in advice["files"] if g["match"] == rule["match"])
        assert fnmatch.fnmatchcase(PurePosixPath(group["example"]).name, rule["match"])


def _files_per_ost(log):
    """The most files one OST holds, from the LUSTRE records' OST ids."""
    _, recs = records(log, "LUSTRE")
    per_ost = collections.Counter()
    for rec in recs:
        for comp in rec["components"]:
            per_ost.update(set(int(o) for o in comp["ost_ids"]))
    return max(per_ost.values())


def test_ost_imbalance_badost_has_it_goodost_not(capsys):
    for name in ("sample-badost.darshan", "sample-goodost.darshan"):
        most = _files_per_ost(LOG[name])
        expected = most > FILES_PER_OST_MAX
        advice = advise_json(capsys, LOG[name])
        found = [f for f in advice["findings"] if f["id"] == "ost_imbalance"]
        assert bool(found) == expected, (name, most)
        if found:
            assert found[0]["counters"]["files per OST, most"] == most
    assert _files_per_ost(LOG["sample-badost.darshan"]) > FILES_PER_OST_MAX >= _files_per_ost(LOG["sample-goodost.darshan"])


def test_badost_is_posix_only_its_advice_throttles_every_file(capsys):
    advice = advise_json(capsys, LOG["sample-badost.darshan"])
    assert any("did not use MPI-IO" in n for n in advice["notes"])
    cfg = advice["config"]
    rule = cfg["files"][0]
    # 2048 per-process files, one rule whose glob wildcards the rank number
    _, recs = records(LOG["sample-badost.darshan"], "POSIX")
    r, _ = records(LOG["sample-badost.darshan"], "POSIX")
    names = {r.name_records[rec["id"]] for rec in recs}
    assert len(names) == 2048 and all(fnmatch.fnmatchcase(PurePosixPath(n).name, rule["match"]) for n in names)
    assert rule["throttle"] == {"writers": "auto"}
    assert cfg["defaults"]["posix"] == {"all_files": True}     # POSIX-only files are recorded (and throttled)


def test_small_requests_from_the_posix_histogram(capsys):
    r, recs = records(MACSIO, "POSIX")
    expected = set()
    for rec in recs:
        c = dict(zip(r.counters["POSIX"]["counters"], rec["counters"]))
        small = sum(c[f"POSIX_SIZE_{d}_{b}"] for d in ("READ", "WRITE") for b in SMALL_BINS)
        total = c["POSIX_READS"] + c["POSIX_WRITES"]
        moved = c["POSIX_BYTES_READ"] + c["POSIX_BYTES_WRITTEN"]
        if total and small / total >= SMALL_SHARE and small >= 100 and moved >= 1 << 20:
            expected.add(PurePosixPath(r.name_records[rec["id"]]).name)
    advice = advise_json(capsys, MACSIO)
    got = {f["match"] for f in advice["findings"] if f["id"] in ("small_requests", "collective_small_requests")}
    assert got == expected and expected == {"macsio_hdf5_000.h5"}
    rule = next(x for x in advice["config"]["files"] if x["match"] == "macsio_hdf5_000.h5")
    assert rule["staging"]["enabled"] is True                  # mostly independent small writes: staged, merged
    assert rule["hdf5"]["alignment"] >= 4096                    # unaligned requests in an HDF5 file


def test_independent_io_on_a_shared_file(capsys):
    log = LOG["ior_hdf5_example.darshan"]
    r, recs = records(log, "MPI-IO")
    c = dict(zip(r.counters["MPI-IO"]["counters"], recs[0]["counters"]))
    assert recs[0]["rank"] == -1
    expected = c["MPIIO_COLL_WRITES"] + c["MPIIO_COLL_READS"] == 0 and c["MPIIO_INDEP_WRITES"] > 0
    advice = advise_json(capsys, log)
    found = [f for f in advice["findings"] if f["id"] == "independent_shared"]
    assert bool(found) == expected
    assert found[0]["counters"]["MPIIO_INDEP_WRITES"] == c["MPIIO_INDEP_WRITES"]


def test_rank_imbalance_from_the_fastest_and_slowest_rank(capsys):
    log = LOG["sample.darshan"]
    r, recs = records(log, "POSIX")
    f = dict(zip(r.counters["POSIX"]["fcounters"], recs[0]["fcounters"]))
    slow, fast = f["POSIX_F_SLOWEST_RANK_TIME"], f["POSIX_F_FASTEST_RANK_TIME"]
    expected = slow - fast >= IMBALANCE_MIN_SECONDS and slow >= IMBALANCE_RATIO * fast
    advice = advise_json(capsys, log)
    found = [x for x in advice["findings"] if x["id"] == "rank_imbalance"]
    assert bool(found) == expected
    if found:
        assert found[0]["counters"]["POSIX_F_SLOWEST_RANK_TIME"] == pytest.approx(slow)


def test_a_log_without_posix(capsys):
    advice = advise_json(capsys, LOG["noposix.darshan"])
    assert "POSIX" not in advice["log"]["modules"]
    assert any("no POSIX module" in n for n in advice["notes"])
    assert advice["job"]["files"] > 0 and advice["job"]["lustre"]["files"] > 0


def test_json_structure(capsys):
    a = advise_json(capsys, LOG["sample.darshan"])
    assert a["version"] == ADVICE_VERSION and a["kind"] == "iotame-advice"
    assert set(a) == {"version", "kind", "log", "job", "files", "skipped", "notes", "findings", "settings",
                      "unanswered", "prediction", "config"}
    assert {"path", "format", "darshan", "nprocs", "run_seconds", "modules"} <= set(a["log"])
    assert {"bytes_read", "bytes_written", "seconds", "meta_share", "histogram", "access", "mpiio",
            "lustre"} <= set(a["job"])
    g = a["files"][0]
    assert {"match", "files", "kind", "ranks", "bytes_read", "bytes_written", "seconds", "histogram", "access",
            "mpiio", "lustre", "rank_balance", "findings"} <= set(g)
    assert g["kind"] == "shared" and g["ranks"] == 2048 and g["lustre"]["stripe_count"] == 24
    for f in a["findings"]:
        assert f["id"] in FINDING_IDS and f["severity"] in ("info", "warning", "critical")
        assert isinstance(f["message"], str) and f["counters"]
    for s in a["settings"]:
        assert {"rule", "key", "value", "findings", "reason", "predicted_gain"} <= set(s)
        assert s["predicted_gain"] is None                       # no profile
    assert a["prediction"]["profile"] is None and "no gain is predicted" in a["prediction"]["note"]


def test_a_profile_predicts_gains(tmp_path, capsys):
    prof = tmp_path / "profile.json"
    p = good_profile()
    p["storage"]["streams"]["write"] = [[1, 400.0], [2, 700.0], [4, 900.0], [16, 600.0], [128, 300.0]]
    prof.write_text(json.dumps(p))
    a = advise_json(capsys, LOG["sample-badost.darshan"], "--profile", prof)
    s = next(x for x in a["settings"] if x["key"] == "throttle.writers")
    # the curve is best at 4 streams; the log's busiest OST held 86 files: 900 against the curve at 86
    assert s["predicted_gain"] > 1 and a["prediction"]["profile"] == str(prof)
    assert a["config"]["meta"]["advise"]["profile"] == str(prof)


def test_a_bad_profile_is_an_error(tmp_path, capsys):
    bad = tmp_path / "p.json"
    bad.write_text("{}")
    rc = main(["advise", str(LOG["sample.darshan"]), "--profile", str(bad)])
    err = capsys.readouterr().err
    assert rc == 2 and f"profile {bad}" in err


def test_top_and_max_files_say_what_was_skipped(capsys):
    log = LOG["dxt.darshan"]
    full = advise_json(capsys, log)
    a = advise_json(capsys, log, "--max-files", 50, "--top", 2)
    assert a["skipped"]["files"] == full["job"]["files"] - 50
    assert len(a["files"]) == 2 and a["skipped"]["groups"] > 0
    assert len(a["config"].get("files", [])) <= 2
    rc = main(["advise", str(log), "--max-files", "50", "--top", "2"])
    out = capsys.readouterr().out
    assert rc == 0 and f"{full['job']['files'] - 50:,} files beyond --max-files" in out


# --- bad input -------------------------------------------------------------------------------------------------

def run_bad(capsys, path):
    rc = main(["advise", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert "Traceback" not in err and str(path) in err and err.startswith("iotame: darshan log ")
    return err


def test_not_a_darshan_log(tmp_path, capsys):
    text = tmp_path / "notes.darshan"
    text.write_text("this is not a log\n" * 10)
    assert "not a Darshan log" in run_bad(capsys, text)
    empty = tmp_path / "empty.darshan"
    empty.write_bytes(b"")
    assert "not a Darshan log" in run_bad(capsys, empty)
    assert "no such file" in run_bad(capsys, tmp_path / "missing.darshan")
    assert "not a regular file" in run_bad(capsys, tmp_path)


@pytest.mark.parametrize("name", ["sample-badost.darshan", "ior_hdf5_example.darshan", "dxt.darshan"])
@pytest.mark.parametrize("fraction", [0.01, 0.3, 0.9, 0.999])
def test_a_truncated_log(tmp_path, capsys, name, fraction):
    data = LOG[name].read_bytes()
    cut = tmp_path / name
    cut.write_bytes(data[:int(len(data) * fraction)])
    err = run_bad(capsys, cut)
    assert "truncated" in err


def test_a_damaged_log_read_by_the_library_in_a_child(tmp_path, capsys):
    """The header is intact, the compressed records are not: darshan's C library says so on stderr (and may abort);
    the child process keeps iotame alive and its messages make the error."""
    data = bytearray(LOG["sample-badost.darshan"].read_bytes())
    data[200000:200400] = b"\x55" * 400
    bad = tmp_path / "damaged.darshan"
    bad.write_bytes(bytes(data))
    err = run_bad(capsys, bad)
    assert "damaged or truncated" in err and "Error:" in err


def test_a_version_the_library_cannot_read(tmp_path, capsys):
    data = bytearray(LOG["sample-goodost.darshan"].read_bytes())
    old = tmp_path / "old.darshan"
    old.write_bytes(b"2.06\0\0\0\0" + bytes(data[8:]))
    assert "format version '2.06'" in run_bad(capsys, old)
    new = tmp_path / "new.darshan"
    new.write_bytes(b"3.99\0\0\0\0" + bytes(data[8:]))
    assert "format version 3.99, which the installed darshan library cannot read" in run_bad(capsys, new)
