"""What each module decided and why (iotame.decisions, `iotame stats show`): the throttle that never searched,
the one that found a level, the selector whose budget was never earned, staging's visible against hidden time."""
import json

from iotame.cli import main
from iotame.decisions import selector_reason, settings_of, throttle_rows
from iotame.stats import decided

from .fakes import make_stats


def _throttle(found=0, measured=None, io=0.4, mode="auto"):
    t = {"mode": mode, "requests": 64, "max_inside": 2, "level": 2, "predicted_level": 0, "best_measured": 0,
         "found_level": found, "from_knowledge": False, "searches": 1, "measured_mbs": measured or {}, "phases": []}
    return {"read": {"requests": 64, "io_seconds_mean": io}, "targets": [{"target": "abc", "read": t}]}


def test_a_throttle_that_never_searched_says_the_io_was_shorter_than_a_window():
    obj = make_stats()
    obj["modules"] = {"throttle": _throttle(io=0.4)}
    (row,) = throttle_rows(obj)
    assert row["reason"].startswith("not decided: the job's I/O (0.4 s) was shorter than one window (0.25 s)")


def test_the_window_comes_from_the_jobs_configuration(tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"version": 1, "defaults": {"throttle": {"readers": "auto",
                                                                          "window_seconds": 0.5}}}))
    obj = make_stats()
    obj.update(config=str(config), modules={"throttle": _throttle(io=0.2)})
    assert settings_of(obj)[("throttle", "window_seconds")] == 0.5
    assert "one window (0.5 s)" in throttle_rows(obj)[0]["reason"]


def test_a_throttle_that_found_a_level_names_it_and_the_levels_measured():
    obj = make_stats()
    obj["modules"] = {"throttle": _throttle(found=4, measured={"8": 40.0, "4": 55.5})}
    reason = throttle_rows(obj)[0]["reason"]
    assert reason.startswith("found level 4") and "8: 40.0 MB/s" in reason and "4: 55.5 MB/s" in reason


def test_a_fixed_level_is_the_configurations():
    obj = make_stats()
    obj["modules"] = {"throttle": _throttle(mode="fixed")}
    assert throttle_rows(obj)[0]["reason"] == "level 2 set by the configuration"


def test_the_selector_says_when_the_budget_was_never_earned():
    d = {"strategy": "independent", "state": "examining", "throughputs": {"independent": 812.5}, "calls": 9,
         "deferred_calls": 4}
    why = selector_reason(d, 0.05)
    assert why.startswith("examining: the budget was never earned (5% ") and "4 waited" in why
    assert selector_reason(dict(d, state="running"), 0.05).startswith("decided: independent, the fastest measured")
    assert selector_reason(dict(d, state="running", from_knowledge=True), 0.05) == \
        "decided: independent, from the knowledge file"
    deferred = selector_reason(dict(d, state="running", model={"first": "two_phase", "deferred": True}), 0.05)
    assert deferred.startswith("decided: independent, the fastest measured; the cost model's pick (two_phase) was "
                               "examined after the configured first") and "set-up" in deferred
    explored = selector_reason(dict(d, state="running", model={"first": "two_phase", "leads": True,
                                                               "explored": "node_local"}), 0.05)
    assert explored.startswith("decided: independent, the fastest measured of node_local (explored first") and \
        "no earlier job of its class" in explored
    learned = selector_reason(dict(d, state="running", model={"first": "two_phase", "learned": True}), 0.05)
    assert learned.startswith("decided: independent, the fastest measured of the cost model's pick (two_phase, "
                              "served first as its class's earlier jobs measured it)")


def test_stats_show_prints_the_decisions(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    obj = make_stats()
    obj["files"][0]["decisions"] = [{"signature": {"op": "write", "bytes": 1048576, "requests": 64},
                                     "strategy": "two_phase", "state": "examining", "throughputs": {}}]
    obj["modules"] = {"throttle": _throttle(io=0.4),
                      "stage": {"calls": 8, "bytes": 4096, "blocked_seconds": 0.1, "drain_seconds": 0.2,
                                "flusher": {"flush_seconds": 0.9, "overlapped_seconds": 0.6}}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(obj))
    assert main(["stats", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "what the runtime decided, and why" in out
    assert "examining: the budget was never earned" in out
    assert "not decided: the job's I/O (0.4 s) was shorter than one window (0.25 s)" in out
    assert "visible 0.3 s" in out and "hidden 0.6 s of the flusher's 0.9 s" in out
    assert [r["module"] for r in decided(obj)] == ["selector", "throttle", "staging"]
