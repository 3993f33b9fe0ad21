"""`iotame advise` on the real Darshan logs the darshan wheel ships (tests/input, examples): a report and a
configuration the runtime's validator accepts for every log; findings checked against expectations computed here
from the logs' own counters (read with pydarshan directly, not through iotame); bad input (not a log, truncated,
damaged, an unreadable version) ends with exit status 2 and a message naming the file, never a traceback."""
import collections
import fnmatch
import json
from pathlib import Path, PurePosixPath

import pytest

darshan = pytest.importorskip("darshan")

from iotame.advise import ADVICE_VERSION                     # noqa: E402
from iotame.advise.findings import (FILES_PER_OST_MAX, FINDING_IDS, IMBALANCE_MIN_SECONDS,  # noqa: E402
                                    IMBALANCE_RATIO, IMBALANCE_RUN_SHARE, MIN_REQUESTS_PER_RANK, SMALL_BINS,
                                    SMALL_SHARE, SMALL_TIME_SHARE, small_time_share)
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
    """A file's small requests are a finding when most of its requests, MIN_REQUESTS_PER_RANK per rank, are small
    and take SMALL_TIME_SHARE of its time by small_time_share's estimate (from the bins' counts and upper edges)."""
    r, recs = records(MACSIO, "POSIX")
    nprocs = r.metadata["job"]["nprocs"]
    edges = {"0_100": 100, "100_1K": 1000, "1K_10K": 10_000, "10K_100K": 100_000}
    expected = set()
    for rec in recs:
        c = dict(zip(r.counters["POSIX"]["counters"], rec["counters"]))
        small = sum(c[f"POSIX_SIZE_{d}_{b}"] for d in ("READ", "WRITE") for b in SMALL_BINS)
        small_bytes = sum(c[f"POSIX_SIZE_{d}_{b}"] * edges[b] for d in ("READ", "WRITE") for b in SMALL_BINS)
        total = c["POSIX_READS"] + c["POSIX_WRITES"]
        moved = c["POSIX_BYTES_READ"] + c["POSIX_BYTES_WRITTEN"]
        ranks = nprocs if rec["rank"] == -1 else 1
        if total and small / total >= SMALL_SHARE and small / ranks >= MIN_REQUESTS_PER_RANK and \
                moved >= 1 << 20 and small_time_share(small, total, small_bytes, moved) >= SMALL_TIME_SHARE:
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


def test_rank_imbalance_from_the_fastest_and_slowest_rank_at_mpiio(capsys):
    """sample.darshan's file was written through MPI-IO: the ranks are compared in its MPI-IO record (the layer the
    application called), against the run time."""
    log = LOG["sample.darshan"]
    r, recs = records(log, "MPI-IO")
    f = dict(zip(r.counters["MPI-IO"]["fcounters"], recs[0]["fcounters"]))
    slow, fast = f["MPIIO_F_SLOWEST_RANK_TIME"], f["MPIIO_F_FASTEST_RANK_TIME"]
    run = r.metadata["job"]["run_time"]
    expected = slow - fast >= max(IMBALANCE_MIN_SECONDS, IMBALANCE_RUN_SHARE * run) and slow >= IMBALANCE_RATIO * fast
    advice = advise_json(capsys, log)
    found = [x for x in advice["findings"] if x["id"] == "rank_imbalance"]
    assert bool(found) == expected and expected
    assert found[0]["counters"]["MPIIO_F_SLOWEST_RANK_TIME"] == pytest.approx(slow)
    assert found[0]["value"] == pytest.approx(slow / fast, rel=1e-3) and found[0]["threshold"] == IMBALANCE_RATIO


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
    full = advise_json(capsys, log, "--top", 1000)
    a = advise_json(capsys, log, "--max-files", 50, "--top", 2)
    assert a["skipped"]["files"] == full["job"]["files"] - 50
    assert len(a["files"]) == 2 and a["skipped"]["groups"] > 0
    top = advise_json(capsys, log, "--top", 2)             # the same groups as the full advice, cut after 2
    shown = {g["match"] for g in top["files"]}
    assert shown == {g["match"] for g in full["files"][:2]}
    assert all(f["match"] in shown or f["match"] is None for f in top["findings"])
    hidden = collections.Counter(f["id"] for g in full["files"][2:] for f in g["findings"])
    assert hidden and top["skipped"]["findings"] == dict(hidden)
    assert len(a["config"].get("files", [])) <= 2
    rc = main(["advise", str(log), "--max-files", "50", "--top", "2"])
    out = capsys.readouterr().out
    assert rc == 0 and f"{full['job']['files'] - 50:,} files beyond --max-files" in out


# --- bad input -------------------------------------------------------------------------------------------------

def run_bad(capsys, path):
    rc = main(["advise", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    # the error is the last line: a slow read may print the progress of `advise: reading` before it
    assert "Traceback" not in err and str(path) in err and err.splitlines()[-1].startswith("iotame: darshan log ")
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


# --- findings no shipped log shows: the records of a real log (ior_hdf5_example: one shared HDF5 file of 4
# ranks on Lustre, independent MPI-IO) with counters set to the pattern --------------------------------------------

from iotame.advise import advise_loaded                       # noqa: E402
from iotame.advise.findings import STRIPE_MIN_BYTES            # noqa: E402
from iotame.advise.load import load_log                       # noqa: E402
from iotame.config import validate                            # noqa: E402


def set_counters(log, mod, **values):
    for rec in log["records"][mod]:
        rec["counters"].update(values)
    return log


def ids_of(advice, match="test123.h5"):
    return {f.id for f in advice.findings if f.match == match}


def test_stripe_count_against_the_writers():
    log = load_log(LOG["ior_hdf5_example.darshan"])
    log["job"]["nprocs"] = 64
    set_counters(log, "POSIX", POSIX_BYTES_WRITTEN=STRIPE_MIN_BYTES * 4)
    a = advise_loaded(log, "x.darshan")
    assert "stripe_count" in ids_of(a)           # 64 ranks on 1 OST of the at least 107 the log shows (id 106)
    rule = a.config["files"][0]
    assert rule["mpiio_hints"]["striping_factor"] == 64 and rule["mpiio_hints"]["striping_unit"] == 1 << 20
    assert validate(a.config, "x") == []
    set_counters(log, "POSIX", POSIX_BYTES_WRITTEN=STRIPE_MIN_BYTES - 1)
    assert "stripe_count" not in ids_of(advise_loaded(log, "x.darshan"))


def test_stripe_count_with_a_profile_of_six_targets(tmp_path):
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps(good_profile()))                 # filesystem.targets 6
    log = load_log(LOG["ior_hdf5_example.darshan"])
    log["job"]["nprocs"] = 64
    set_counters(log, "POSIX", POSIX_BYTES_WRITTEN=STRIPE_MIN_BYTES * 4)
    a = advise_loaded(log, "x.darshan", profile=str(prof))
    s = next(x for x in a.settings if x.key == "mpiio_hints.striping_factor")
    assert s.value == 6 and s.predicted_gain == pytest.approx(6.0)


def test_collective_calls_with_small_requests():
    log = load_log(LOG["ior_hdf5_example.darshan"])
    set_counters(log, "MPI-IO", MPIIO_COLL_WRITES=1000, MPIIO_INDEP_WRITES=0, MPIIO_INDEP_READS=0)
    set_counters(log, "POSIX", POSIX_SIZE_WRITE_100_1K=5000, POSIX_WRITES=5016)
    a = advise_loaded(log, "x.darshan")
    assert "collective_small_requests" in ids_of(a) and "small_requests" not in ids_of(a)
    rule = a.config["files"][0]
    assert rule["mpiio_hints"]["romio_cb_write"] == "enable" and rule["collective"]["strategy"] == "auto"
    assert rule["override"] is True and validate(a.config, "x") == []


def test_interleaved_pieces_without_collective_calls():
    log = load_log(LOG["ior_hdf5_example.darshan"])
    set_counters(log, "POSIX", POSIX_WRITES=1000, POSIX_CONSEC_WRITES=10, POSIX_SEQ_WRITES=500)
    a = advise_loaded(log, "x.darshan")
    f = next(x for x in a.findings if x.id == "interleaved_no_collective")
    assert f.counters["POSIX_CONSEC_WRITES"] == 10 and f.counters["POSIX_WRITES"] == 1000
    assert a.config["files"][0]["staging"]["enabled"] is True
    set_counters(log, "POSIX", POSIX_CONSEC_WRITES=900)
    assert "interleaved_no_collective" not in ids_of(advise_loaded(log, "x.darshan"))


def test_small_hdf5_chunks_get_dataset_rules():
    log = load_log(LOG["ior_hdf5_example.darshan"])
    set_counters(log, "H5D", H5D_CHUNK_SIZE_D1=1024)            # 1024 x 8-byte elements: 8 KiB chunks
    a = advise_loaded(log, "x.darshan")
    f = next(x for x in a.findings if x.id == "small_hdf5_chunks")
    assert list(f.counters.values()) == [8192]
    rules = a.config["files"][0]["hdf5"]["datasets"]
    assert rules == [{"match": "/Dataset-0000.0000", "chunk_bytes": 4 << 20}]
    assert validate(a.config, "x") == []


def test_a_job_without_mpiio_records_gets_no_mpiio_advice():
    log = load_log(LOG["ior_hdf5_example.darshan"])
    del log["records"]["MPI-IO"]
    log["modules"].remove("MPI-IO")
    set_counters(log, "POSIX", POSIX_SIZE_WRITE_100_1K=5000, POSIX_WRITES=5016)
    a = advise_loaded(log, "x.darshan")
    assert any("did not use MPI-IO" in n for n in a.notes)
    assert "small_requests" in ids_of(a)                        # the POSIX finding stands
    assert not any(s.key.startswith(("mpiio_hints", "collective")) for s in a.settings)


def test_severity_follows_the_groups_share_of_the_io_time(capsys):
    a = advise_json(capsys, LOG["dxt.darshan"], "--top", 1000)
    job = a["job"]["io_seconds"]
    seen = set()
    for g in a["files"]:
        share = g["io_seconds"] / job
        for f in g["findings"]:
            want = "critical" if share >= 0.5 else ("info" if share < 0.05 else "warning")
            assert f["severity"] == want, (g["match"], share)
            seen.add(want)
    assert seen == {"critical", "warning", "info"}


def test_config_out_that_cannot_be_written(tmp_path, capsys):
    rc = main(["advise", str(LOG["sample.darshan"]), "--config-out", str(tmp_path / "no" / "such" / "a.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot write" in err and "Traceback" not in err


def test_thousands_of_files_capped(capsys):
    """sample-badost: 2048 files; with --max-files 500 the rest is summed and said to be skipped."""
    full = advise_json(capsys, LOG["sample-badost.darshan"])
    a = advise_json(capsys, LOG["sample-badost.darshan"], "--max-files", 500)
    assert a["job"]["files"] == 2048 and a["files"][0]["files"] == 500
    assert a["skipped"]["files"] == 1548
    total = full["job"]["bytes_written"]
    assert a["files"][0]["bytes_written"] + a["skipped"]["bytes_written"] == total


def test_the_profile_the_runtime_finds_for_the_current_directory(tmp_path, capsys):
    """Without --profile: the profile of the current directory's file system in the user's profile directory."""
    from iotame.calibrate import fs_identity, save_profile
    p = good_profile()
    ident = fs_identity(tmp_path)
    p["filesystem"] = dict({k: ident[k] for k in ("path", "type", "magic", "device")}, targets=1, stripe_unit=0)
    p["storage"]["streams"]["write"] = [[1, 400.0], [2, 700.0], [4, 900.0], [128, 300.0]]
    saved = save_profile(p, tmp_path / "xdg" / "iotame" / "profiles" / "here.json")
    a = advise_json(capsys, LOG["sample-badost.darshan"])
    assert a["prediction"]["profile"] == str(saved) and "found for the current directory" in a["prediction"]["note"]
    assert next(s for s in a["settings"] if s["key"] == "throttle.writers")["predicted_gain"] > 1


def test_tune_runs_the_tune_command_on_the_replay(tmp_path, capsys):
    """--tune hands its options to `iotame tune` as the command line parses them: the replay of the log is the job
    (its dry run prints it), and a bad option is tune's usage error (exit status 2), not a traceback."""
    log = LOG["ior_hdf5_example.darshan"]
    rc = main(["advise", "--tune", "--nprocs", "2", "--out", str(tmp_path / "o"), "--tune-options=--dry-run", str(log)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "iotame-kernel replay --from" in out and str(tmp_path / "o" / "replay.json") in out
    assert f"study: advise-{log.stem}" in out and "processes: 2" in out
    assert main(["advise", "--tune", "--out", str(tmp_path / "o"), "--tune-options=--bogus", str(log)]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


# --- the records between advise's modules: dataclasses from load to render, whose to_json() is the documented
# document ----------------------------------------------------------------------------------------------------

import dataclasses                                              # noqa: E402
import re                                                       # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "advise.md"


def documented_example() -> dict:
    """The example of docs/advise.md's "The JSON document", parsed."""
    text = DOC.read_text(encoding="utf-8").split("## The JSON document", 1)[1]
    return json.loads(re.search(r"```json\n(.*?)```", text, re.S).group(1))


def test_the_records_are_dataclasses_from_load_to_render():
    """advise_loaded types the loaded log and passes records, not dictionaries, to the findings, the configuration
    and the output (issue 47): the job, each group and its parts, the log's header, what was skipped."""
    a = advise_loaded(load_log(LOG["dxt.darshan"]), "x.darshan", top=2, max_files=50)
    parts = [a.log, a.job, a.job.totals, a.job.totals.seconds, a.job.histogram, a.skipped_files, a.skipped_groups]
    for g in a.files:
        parts += [g, g.totals, g.histogram, g.requests]
        parts += [p for p in (g.access, g.alignment, g.mpiio, g.lustre, g.hdf5, g.rank_balance) if p is not None]
    assert all(dataclasses.is_dataclass(p) and not isinstance(p, type) for p in parts)


def test_the_json_keys_are_the_documented_ones_in_their_order():
    """sample.darshan is the documentation's example (vpicio, 2048 ranks on 24 OSTs): the keys of the log, the job
    and a group, and of their parts the example spells out, come in the documented order."""
    doc = documented_example()
    a = advise_loaded(load_log(LOG["sample.darshan"]), "sample.darshan").to_json()
    assert list(a) == list(doc)
    for key in ("log", "job"):
        assert list(a[key]) == list(doc[key]), key
    for key in ("access", "mpiio", "lustre"):
        assert list(a["job"][key]) == list(doc["job"][key]), key
    assert list(a["job"]["access"]["write"]) == list(doc["job"]["access"]["write"])
    g, want = a["files"][0], doc["files"][0]
    assert list(g) == list(want)
    for key in ("alignment", "requests", "lustre"):
        assert list(g[key]) == list(want[key]), key
    assert list(g["rank_balance"])[:2] == ["source", "counters"]


def test_skipped_files_and_groups_in_one_record_of_the_documented_keys():
    a = advise_loaded(load_log(LOG["dxt.darshan"]), "x.darshan", top=1, max_files=3).to_json()
    assert list(a["skipped"]) == ["files", "bytes_read", "bytes_written", "seconds", "io_seconds", "meta_share",
                                  "reason", "groups", "group_files", "group_bytes", "group_seconds", "matches",
                                  "findings"]
    assert advise_loaded(load_log(LOG["sample.darshan"]), "x.darshan").to_json()["skipped"] is None
