"""bench/dynamic.py's auto_model: its configuration names the profile, and the report gives it a row and a per-run
table with the model's first choice, on synthetic results."""

import pytest

from iotame.bench.setting import Setting

from .scripts import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench/dynamic.py", "bench_dynamic_model")


def run(config, mbs, strategy, model=None, profile=None):
    """Ten calls, one a second, the load from 3 to 6 s."""
    return {"config": config, "loadavg": 0.5, "write_seconds": 10.0, "write_mbs": mbs, "load_on": 3.0,
            "load_off": 6.0, "write_end": 10.0, "samples": [(float(t), int(t * mbs * 1e6)) for t in range(11)],
            "times": [float(t) + 0.5 for t in range(10)], "trace": [[strategy, mbs]] * 10, "strategy": strategy,
            "reexaminations": 0, "model": model, "profile": profile or {}}


def test_auto_model_configuration_names_the_profile(bench, tmp_path):
    section = bench.config_section("auto_model", Setting(), tmp_path / "state", str(tmp_path / "p.json"))
    coll = section["defaults"]["collective"]
    assert coll["strategy"] == "auto" and coll["profile"] == str((tmp_path / "p.json").resolve())
    assert "candidates" not in coll
    assert bench.config_section("two_phase", Setting(), tmp_path / "state")["defaults"]["collective"][
        "candidates"] == ["two_phase"]


def test_report_has_a_row_and_a_per_run_table_for_auto_model(bench):
    model = {"first": "node_local", "examined": ["node_local"], "predicted_s": {"node_local": 0.01},
             "measured_s": {}, "error": 0.2, "departures": 1}
    data = {"meta": {"repeat": 1, "load": "net", "load_start": 3, "load_stop": 6, "block_size": 65536, "depth": 4,
                     "iterations": 10, "per_call": 524288},
            "runs": [run("auto", 100.0, "view_based"), run("auto_model", 120.0, "node_local", model),
                     run("auto_model", 90.0, "two_phase", profile={"profile_refused": "iotame: profile p: bad"}),
                     run("node_local", 110.0, "node_local")]}
    text = bench.report(data)
    assert "| auto_model | 105 / " in text                   # the median over both runs' calls (90 and 120)
    assert "auto_model per run:" in text and "auto per run:" in text
    assert "node_local; model first node_local, 1 departures |" in text
    assert "two_phase; profile REFUSED: iotame: profile p: bad |" in text
    assert "Calls served by each strategy under auto_model (all runs): node_local 10, two_phase 10" in text
