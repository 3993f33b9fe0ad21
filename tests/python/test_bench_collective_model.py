"""bench/collective.py's auto_model: the configuration it writes, and the report's accuracy table and summary on
synthetic results."""
import json
import math

import pytest

from .scripts import load_script

MB = 1e6


@pytest.fixture(scope="module")
def bench():
    return load_script("bench/collective.py", "bench_collective_model")


def decision(call_bytes, calls, predicted_mbs):
    """A decision of auto_model whose model predicted these MB/s per strategy for calls of call_bytes."""
    predicted = {s: call_bytes / (mbs * MB) for s, mbs in predicted_mbs.items()}
    first = max(predicted_mbs, key=predicted_mbs.get)
    return {"signature": {"op": "write", "bytes": call_bytes, "requests": 4, "gap": 0}, "strategy": first,
            "calls": calls, "examination_calls": 0, "reexaminations": 0,
            "model": {"first": first, "examined": [first], "predicted_s": predicted, "measured_s": {}, "error": 0.1,
                      "departures": 0}}


def trial(case, config, write, read, decisions=(), repeat=1):
    sel = {"decisions": list(decisions), "strategies": {}, "passthrough_reasons": {}}
    return {"case": case, "ranks": 2, "config": config, "repeat": repeat, "write_mbs": write, "read_mbs": read,
            "write_selector": sel, "read_selector": sel}


def test_auto_model_names_the_profile_and_needs_one(bench, tmp_path):
    profile = tmp_path / "p.json"
    profile.write_text("{}")
    path = bench.config_writer(tmp_path, profile=str(profile))("auto_model", 2)
    coll = json.loads(path.read_text())["defaults"]["collective"]
    assert coll == {"strategy": "auto", "virtual_node_size": 1, "profile": str(profile.resolve())}


def test_the_decision_covering_most_bytes_gives_the_prediction(bench):
    small = decision(1000, 100, {"two_phase": 1.0})                 # 0.1 MB
    large = decision(1_000_000, 4, {"two_phase": 50.0})             # 4 MB
    assert bench.main_decision([small, large, {"signature": small["signature"], "calls": 9}]) is large
    runs = [trial("matrix-1M-d4", "auto_model", 60, 60, [small, large])]
    assert bench.predicted_mbs(runs, 2, "matrix-1M-d4", "write") == {"two_phase": pytest.approx(50.0)}


def test_accuracy_table_compares_each_prediction_with_the_fixed_strategy(bench):
    """The model predicts node_local fastest (120 MB/s) but two_phase measures fastest; passthrough's prediction is
    judged against `default`."""
    model = decision(4_000_000, 8, {"passthrough": 100.0, "two_phase": 90.0, "node_local": 120.0})
    runs = [trial("matrix-1M-d4", "default", 100, 100), trial("matrix-1M-d4", "two_phase", 180, 90),
            trial("matrix-1M-d4", "node_local", 60, 120), trial("matrix-1M-d4", "auto_model", 60, 120, [model])]
    rows = bench.model_rows(runs)
    (_, _, op, cells, first, best, apart), (*_, read_apart) = rows
    assert op == "write" and first == "node_local" and best == "two_phase" and apart and read_apart
    assert cells["passthrough"] == pytest.approx((100.0, 100.0, 0.0))
    assert cells["two_phase"] == pytest.approx((90.0, 180.0, -0.5))
    assert cells["node_local"] == pytest.approx((120.0, 60.0, 1.0))
    table = bench.model_table(runs)
    assert "| 2 | matrix-1M-d4 | write | 100 / 100 (+0%) | 90 / 180 (-50%) | 120 / 60 (+100%) | " \
           "node_local / two_phase (**differ**) |" in table
    assert "| node_local | 50% | 100% |" in table                 # |+100 %| on writes, |0 %| on reads
    assert "fastest is the measured fastest in 1 of 2 row-operations; in 1 of the 2 where the two fastest differ" \
        in table
    # a second default run faster than two_phase's slowest: the write's two fastest no longer differ beyond ranges
    runs.append(dict(trial("matrix-1M-d4", "default", 190, 100), repeat=1))
    assert [r[6] for r in bench.model_rows(runs)] == [False, True]
    assert "in 1 of the 1 where" in bench.model_table(runs)


def test_no_prediction_no_table(bench):
    assert bench.model_table([trial("matrix-1M-d4", "auto", 1, 1)]) == ""


def test_goals_summary_counts_rows_within_five_percent_and_the_matrix_geometric_mean(bench):
    runs = []
    for case, best, model in (("matrix-4K-d4", 100, 96), ("matrix-1M-d4", 100, 90), ("noncontig-64B", 100, 100)):
        runs += [trial(case, "default", 50, 50), trial(case, "two_phase", best, best),
                 trial(case, "auto", 50, 50), trial(case, "auto_model", model, 2 * model)]
    table = bench.goals_summary(runs)
    assert "| 2 | auto | 0 of 6 | 1.00 (2 rows) | 1.00 |" in table
    # writes: 96 and 100 within 5 % (4K and noncontig), 90 not; reads (2 x) all above
    write_gm, read_gm = math.sqrt(96 / 50 * 90 / 50), math.sqrt(192 / 50 * 180 / 50)
    assert f"| 2 | auto_model | 5 of 6 | {write_gm:.2f} (2 rows) | {read_gm:.2f} |" in table


def test_profile_line_reports_the_profile_or_the_refusal(bench):
    ok, refused = trial("matrix-4K-d4", "auto_model", 1, 1), trial("matrix-4K-d4", "auto_model", 1, 1)
    ok["write_selector"] = dict(ok["write_selector"], profile={"path": "/p.json", "found_by": "setting"})
    refused["read_selector"] = {"decisions": [], "strategies": {}, "profile_refused": "iotame: profile x: bad"}
    line = bench.profile_line([ok, refused])
    assert "/p.json (found by setting) (" in line and "REFUSED: iotame: profile x: bad (1 jobs)" in line


def test_selector_keeps_the_model_and_the_profile(bench):
    model = decision(1000, 3, {"two_phase": 1.0})
    stats = {"files": [{"profile": {"path": "/p.json", "found_by": "environment"},      # the collective section's
                        "decisions": [model, dict(model, signature=dict(model["signature"], op="read"))]}]}
    out = bench.selector(stats, "write")
    assert out["profile"]["found_by"] == "environment"
    assert [d["model"]["first"] for d in out["decisions"]] == ["two_phase"]


def test_selector_keeps_the_storage_targets(bench):
    targets = {"count": 6, "unit": 65536, "from": "cephfs"}
    stats = {"files": [{}, {"storage_targets": targets}]}
    assert bench.selector(stats, "write")["storage_targets"] == targets
    assert "storage_targets" not in bench.selector({"files": [{}]}, "write")
