"""Statistics files: loading, objectives, and `iotame stats show`."""
import json

import pytest

from iotame import StatsError, load_stats, objective, objectives, summarize
from iotame.cli import main
from .fakes import make_stats


def write(tmp_path, obj, name="stats.json"):
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def test_objectives_are_summary_values(stats_obj):
    assert objectives(stats_obj) == {"io-bandwidth": stats_obj["summary"]["io_mbs"], "io-time": 0.5}
    assert objective(stats_obj, "io-time") == 0.5
    with pytest.raises(KeyError):
        objective(stats_obj, "speed")


def test_io_mbs_computed_when_absent(stats_obj):
    del stats_obj["summary"]["io_mbs"]
    assert objectives(stats_obj)["io-bandwidth"] == pytest.approx(3145728 / 0.5 / 1e6)


def test_summarize(stats_obj):
    s = summarize(stats_obj)
    assert s["summary"]["bytes"] == 3145728
    (f,) = s["files"]
    assert f == {"path": "/tmp/x.dat", "bytes_read": 1048576, "bytes_written": 2097152, "ops": 11,
                 "seconds": pytest.approx(0.5)}


def test_load_errors(tmp_path):
    with pytest.raises(StatsError, match="cannot read: No such file or directory"):
        load_stats(tmp_path / "none.json")
    with pytest.raises(StatsError, match="empty file"):
        load_stats(write(tmp_path, ""))
    with pytest.raises(StatsError, match=r"line 1, column \d+: invalid JSON"):
        load_stats(write(tmp_path, "{oops"))
    with pytest.raises(StatsError, match="not a statistics file"):
        load_stats(write(tmp_path, {"version": 1}))
    with pytest.raises(StatsError, match="summary.io_seconds is not a number"):
        load_stats(write(tmp_path, {"summary": {"bytes_read": 0, "bytes_written": 0}}))


def test_stats_show_renders_the_numbers(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    p = write(tmp_path, make_stats(bytes_written=8388608, bytes_read=0, io_seconds=0.016, path="/tmp/x.dat"))
    assert main(["stats", "show", str(p)]) == 0
    out = capsys.readouterr().out
    for text in ("8,388,608", "0.0160", "524.3", "/tmp/x.dat", "2 ranks", "MPICH 4.0.2"):
        assert text in out, text


def test_stats_show_collective_and_hdf5(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    obj = make_stats(path="/tmp/x.h5")
    f = obj["files"][0]
    f["strategies"] = {"two_phase": {"calls": 3, "bytes": 3000000, "seconds": 0.5}}
    f["decisions"] = [{"signature": {"op": "write", "nprocs": 2, "bytes": 1048576, "requests": 64, "gap": 4096},
                       "strategy": "node_local", "state": "running", "throughputs": {"two_phase": 812.5},
                       "reference_mbs": 812.5, "calls": 9, "examination_calls": 7, "reexaminations": 1,
                       "deferred_calls": 41, "from_knowledge": True}]
    f.update(steady_calls=96, steady_windows_measured=7, steady_windows_changed=1)
    f["hdf5"] = {"driver": "mpio", "applied": {"alignment": 1048576}, "datasets": {"/x": {"chunk": [64, 64]}},
                 "not_applied": [{"property": "chunk", "dataset": "/y", "reason": "the dataset is contiguous"}]}
    assert main(["stats", "show", str(write(tmp_path, obj))]) == 0
    out = capsys.readouterr().out
    for text in ("two_phase", "6.0", "write 1,048,576 B in 64 pieces, gap 4096", "node_local (knowledge)",
                 "two_phase 812.5", "alignment=1048576", "/x: chunk=[64, 64]",
                 "chunk (/y): the dataset is contiguous", "waited", "41", "steady windows"):
        assert text in out, text
    s = summarize(obj)
    assert s["collective"]["steady"] == [{"path": "/tmp/x.h5", "calls": 96, "measured": 7, "changed": 1}]
    assert s["collective"]["strategies"] == [{"path": "/tmp/x.h5", "strategy": "two_phase", "calls": 3,
                                              "bytes": 3000000, "mbs": pytest.approx(6.0)}]
    assert s["collective"]["decisions"][0]["examination_calls"] == 7 and s["hdf5"][0]["driver"] == "mpio"


def test_stats_show_the_models_predictions(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    obj = make_stats(path="/tmp/x.dat")
    f = obj["files"][0]
    f["profile"] = {"path": "/home/u/.config/iotame/profiles/ext4.json", "found_by": "directory"}
    f["decisions"] = [{"signature": {"op": "write", "nprocs": 2, "bytes": 1048576, "requests": 64, "gap": 0},
                       "strategy": "node_local", "state": "running",
                       "model": {"first": "node_local", "examined": ["node_local", "two_phase"], "error": 0.2,
                                 "trusted": False, "leads": True, "explored": "two_phase",
                                 "predicted_s": {"node_local": 0.004, "two_phase": 0.009},
                                 "measured_s": {"node_local": 0.005}, "departures": 0, "probes": 0, "returns": 0}}]
    other = dict(f, path="/tmp/y.dat", profile_refused="iotame: profile p.json: memory.copy_mbs: expected MB/s")
    other.pop("profile"), other.pop("decisions")
    obj["files"].append(other)
    assert main(["stats", "show", str(write(tmp_path, obj))]) == 0
    out = capsys.readouterr().out
    for text in ("the cost model", "node_local 4 / 5", "two_phase 9 / -", "0.20", "explored first: two_phase",
                 "profile refused: iotame: profile p.json: memory.copy_mbs"):
        assert text in out, text
    (m, refused) = summarize(obj)["collective"]["model"]
    assert m["profile"].endswith("ext4.json") and m["first"] == "node_local" and refused["path"] == "/tmp/y.dat"


def test_stats_show_the_staging_decisions(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    obj = make_stats(path="/tmp/x.dat")
    obj["files"][0]["stage"] = {"enabled": "auto", "writes": "not staged", "reason": "absorbed",
                                "profile": "/home/u/.config/iotame/profiles/ext4.json"}
    obj["files"].append(dict(obj["files"][0], path="/tmp/y.dat",
                             stage={"enabled": True, "writes": "staged", "reason": "enabled", "profile": None}))
    assert main(["stats", "show", str(write(tmp_path, obj))]) == 0
    out = capsys.readouterr().out
    for text in ("staging", "not staged", "absorbed", "ext4.json", "enabled"):
        assert text in out, text
    rows = summarize(obj)["staging"]
    assert [(r["path"], r["enabled"], r["writes"], r["reason"]) for r in rows] == [
        ("/tmp/x.dat", "auto", "not staged", "absorbed"), ("/tmp/y.dat", True, "staged", "enabled")]


def test_stats_show_json(tmp_path, capsys, stats_obj):
    p = write(tmp_path, stats_obj)
    assert main(["stats", "show", str(p), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["objectives"]["io-time"] == 0.5
    assert data["files"][0]["bytes_written"] == 2097152


def test_stats_show_bad_files(tmp_path, capsys):
    assert main(["stats", "show", str(tmp_path / "none.json")]) == 1
    assert capsys.readouterr().err.startswith(f"iotame: statistics {tmp_path / 'none.json'}: cannot read")
    assert main(["stats", "show", str(write(tmp_path, "[1"))]) == 1
    assert "invalid JSON" in capsys.readouterr().err
