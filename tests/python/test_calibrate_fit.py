"""The cost model fitted to the strategies' measurements (issue 48): `iotame-config predict` (the runtime's model as
a program), calibrate/fit.py on synthetic measurements made from known constants, and `iotame calibrate --check`
and `--refit` on a profile with a fit."""
import copy
import itertools
import json
import math
import statistics
import subprocess

import numpy as np
import pytest

from iotame.calibrate import fit_report, fit_strategies, fitted_seconds, fs_identity, load_profile, save_profile
from iotame.calibrate.fit import FEATURES, NOISE_MIN, features, raw_predictions, row_features
from iotame.cli import main
from iotame.paths import config_tool_path

from conftest import sample
from .profiles import MIB, good_profile

KINDS = ("passthrough", "independent", "two_phase", "node_local", "target_aligned", "view_based")


def measured_rows(strategies, pieces=(64, 1024, 16384, 256 << 10, 4 * MIB), calls=(1, 8), ops=("write", "read"),
                  process_bytes=(MIB,)):
    """One row per strategy, piece size, direction, interleaving, calls per phase and bytes per process: 2 processes
    on one node, at least a piece per process and call. Their seconds are set later."""
    rows = []
    for strategy, piece, op, interleaved, n, b in itertools.product(strategies, pieces, ops, (True, False), calls,
                                                                    process_bytes):
        per_process = max(1, b // piece)
        rows.append({"op": op, "strategy": strategy, "nprocs": 2, "nodes": 1, "ppn": 2, "piece": piece,
                     "pieces": per_process, "interleaved": interleaved, "calls": n, "bytes": 2 * piece * per_process,
                     "gap": 0, "targets": 1, "unit": MIB, "sieves": 1, "open_seconds": 0.002, "seconds": [1.0]})
    return rows


def synthetic_profile(coefs, setups=None, **design):
    """A profile whose measured seconds are a steady call's, the model's raw prediction times exp(coef . features)
    of the strategy's known coef times a deterministic noise within +-2 % per signature (three repeats, their median
    taken), plus the strategy's known set-up (`setups[strategy][op]`, seconds) spread over the phase's calls."""
    p = dict(good_profile(), version=2)
    rows = measured_rows(list(coefs), **design)
    p["strategies"] = {"method": "synthetic", "seconds": 0.0, "measured": rows}
    signatures: dict = {}
    for row, raw in zip(rows, raw_predictions(p, rows)):
        c = coefs[row["strategy"]]
        key = (row["strategy"], row["op"], row["piece"], row["interleaved"], row["bytes"])
        noise = 0.02 * math.sin(1.7 * signatures.setdefault(key, len(signatures)) + 0.3)
        s = raw[row["strategy"]] * math.exp(float(np.dot(c, row_features(row)))) * (1 + noise)
        s += ((setups or {}).get(row["strategy"]) or {}).get(row["op"], 0.0) / row["calls"]
        row["seconds"] = [s * 1.01, s, s * 0.99]
    return p


def test_features_are_the_contracts():
    assert features(64, True, False, 0.0, 16 << 10) == [1.0, -1.0, 1.0, 1.0, 0.0, 0.0, -1.0]
    assert features(16384, False, True, 1.0, 512 << 10) == [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    assert features(4 * MIB, 1, 1, 0.25, 16 * MIB) == [1.0, 1.0, 1.0, 1.0, 1.0, 0.25, 1.0]
    assert features(1, 0, 0)[1] == -1.0 and features(1 << 30, 0, 0)[1] == 1.0      # clamped
    assert features(1, 0, 0, 0, 1)[6] == -1.0 and features(1, 0, 0, 0, 1 << 30)[6] == 1.0
    assert features(1024, 0, 0)[1] == pytest.approx(-0.5) and features(1024, 0, 0, 0, MIB)[6] == pytest.approx(0.2)
    assert FEATURES == ("one", "u", "u2", "write", "interleaved", "first", "v")
    row = measured_rows(["two_phase"], pieces=(1024,), calls=(4,), ops=("read",), process_bytes=(16 << 10,))[0]
    assert row_features(row) == features(1024, False, True, 0.25, 16 << 10)


def test_a_rows_raw_prediction_is_a_steady_calls():
    """The equations' set-up (two opens) stays out of a row's raw prediction: it stands for the application's own
    open, and the set-up the strategy measured is taken out of the row's time instead."""
    p = good_profile()
    row = measured_rows(["two_phase"], pieces=(4096,), calls=(4,), ops=("write",))[0]
    row["open_seconds"] = 0.25
    once = dict(row, calls=1, open_seconds=0.0)
    assert raw_predictions(p, [row]) == raw_predictions(p, [once])


# the feature `first` has no weight of its own in a design of 1 and 8 calls: only the phases of 8 calls are fitted,
# the one-call phases give the set-up (test_the_set_up_measured_is_taken_out_of_the_fit)
COEFS = [(0.0,) * 7, (0.3, -0.5, 0.2, 0.4, -0.3, 0.0, 0.5), (-1.2, 0.8, -0.6, -0.2, 0.9, 0.0, -0.7)]


@pytest.mark.parametrize("strategy, coef",
                         sample(itertools.product(KINDS, COEFS), 8, "fit_recovers", cover=(0, 1)))
def test_the_fit_recovers_known_constants(strategy, coef):
    other = "independent" if strategy != "independent" else "passthrough"
    p = synthetic_profile({strategy: coef, other: (0.5, 0, 0, 0, 0, 0, 0)}, process_bytes=(16 << 10, MIB, 8 * MIB))
    fit = fit_strategies(p)
    assert fit["features"] == list(FEATURES) and set(fit["strategies"]) == {strategy, other}
    entry = fit["strategies"][strategy]
    assert entry["rows"] == 60 and len(entry["residuals"]) == 60          # the phases of 8 calls
    assert entry["coef"] == pytest.approx(coef, abs=0.03)
    assert entry["cv_median"] < 0.02 and entry["cv_max"] < 0.05
    assert fit["strategies"][other]["coef"] == pytest.approx([0.5, 0, 0, 0, 0, 0, 0], abs=0.03)
    # the residuals name their row's features; fitted_seconds applies the coefficients to a raw prediction
    rows = [r for r in p["strategies"]["measured"] if r["strategy"] == strategy and r["calls"] > 1]
    assert [r[:4] for r in entry["residuals"]] == \
        [[pytest.approx(f[1], abs=1e-6), pytest.approx(f[6], abs=1e-6), int(f[3]), int(f[4])]
         for f in map(row_features, rows)]
    row = rows[0]
    raw = raw_predictions(p, [row])[0][strategy]
    assert fitted_seconds(entry, raw, row["piece"], True, row["interleaved"], 1 / row["calls"],
                          row["bytes"] / row["nprocs"]) == \
        pytest.approx(sorted(row["seconds"])[1], rel=0.05)


def test_a_first_calls_set_up_is_measured_in_seconds():
    """Phases of 1 and 8 calls whose first call adds a set-up of known seconds to a steady call of any size: the fit
    stores that amount per operation, 0 for a strategy without one; without phases of one call, none."""
    p = synthetic_profile({"two_phase": (0.0,) * 7, "passthrough": (0.0,) * 7})
    setup = {("two_phase", "write"): 0.008, ("two_phase", "read"): 0.003}
    for row in p["strategies"]["measured"]:
        steady = 1e-3 * (1 + row["bytes"] / MIB) * (1.3 if row["interleaved"] else 1.0)
        mean = steady + setup.get((row["strategy"], row["op"]), 0.0) / row["calls"]
        row["seconds"] = [mean * 1.01, mean, mean * 0.99]
    fit = fit_strategies(p)["strategies"]
    assert fit["two_phase"]["setup"] == {"read": pytest.approx(0.003, rel=0.02), "write": pytest.approx(0.008, rel=0.02)}
    assert fit["passthrough"]["setup"] == {"read": pytest.approx(0, abs=1e-4), "write": pytest.approx(0, abs=1e-4)}
    assert "setup" not in fit_strategies(synthetic_profile({"two_phase": (0.0,) * 7}, calls=(8,)))["strategies"][
        "two_phase"]


def test_the_set_up_measured_is_taken_out_of_the_fit():
    """Rows whose first call adds a known set-up of seconds (not a factor: the file system's opens): the fit finds
    the steady call's constants as without it, and stores the set-up."""
    coef = (0.3, -0.5, 0.2, 0.4, -0.3, 0.0, 0.5)
    setup = {"write": 0.02, "read": 0.008}
    fit = fit_strategies(synthetic_profile({"two_phase": coef}, {"two_phase": setup}))["strategies"]["two_phase"]
    assert fit["setup"] == pytest.approx(setup, rel=1e-3)
    assert fit["coef"] == pytest.approx(coef, abs=0.03) and fit["cv_median"] < 0.02


def test_one_slow_row_stands_out_and_leaves_the_others_small():
    coef = (0.3, -0.5, 0.2, 0.4, -0.3, 0.0, 0.0)
    p = synthetic_profile({"two_phase": coef}, calls=(1, 4, 16))
    rows = [r for r in p["strategies"]["measured"] if r["calls"] > 1]   # the rows fitted
    slow = next(i for i, r in enumerate(rows) if (r["piece"], r["op"], r["interleaved"], r["calls"]) ==
                (16384, "write", True, 4))
    rows[slow]["seconds"] = [5 * s for s in rows[slow]["seconds"]]
    entry = fit_strategies(p)["strategies"]["two_phase"]
    r = [res[4] for res in entry["residuals"]]
    assert r[slow] == pytest.approx(math.log(5), abs=0.05)  # left out, the fit of the others sees the factor 5 whole
    others = [abs(x) for i, x in enumerate(r) if i != slow]
    assert max(others) < 0.25 and np.median(others) < 0.1
    # the model as applied, fit and anchor, with each row left out: the slow row stands out alike
    assert entry["cv_max"] == pytest.approx(math.expm1(r[slow]), rel=0.05) and entry["cv_median"] < 0.1
    assert entry["coef"] == pytest.approx(coef, abs=0.5)   # one row in the 40 fitted moves them little


def test_a_measured_signature_anchors_the_calls_near_it():
    """A bend the smooth fit cannot follow (one signature 3 x slower than the equations and the fit say): the
    fitted model predicts that signature as measured, a call two octaves away half-way, four octaves away as the fit
    alone; anchors are the rows of several calls and repeats, their noise at least NOISE_MIN."""
    p = synthetic_profile({"two_phase": (0.2, -0.3, 0.1, 0.2, 0.0, 0.0, 0.1)}, calls=(1, 8))
    rows = p["strategies"]["measured"]
    bent = [i for i, r in enumerate(rows) if (r["piece"], r["op"], r["interleaved"]) == (16384, "read", True)]
    for i in bent:
        rows[i]["seconds"] = [3 * s for s in rows[i]["seconds"]]
    entry = fit_strategies(p)["strategies"]["two_phase"]
    anchors = entry["anchors"]
    assert len(anchors) == sum(r["calls"] > 1 for r in rows) and all(a[5] >= NOISE_MIN for a in anchors)
    eight = next(i for i in bent if rows[i]["calls"] == 8)
    row = rows[eight]
    raw = raw_predictions(p, [row])[0]["two_phase"]
    # as measured, less what the row has that a later call has not: the first call's set-up, and its share of the
    # phase the feature first still carries
    setup = (entry.get("setup") or {}).get("read", 0.0)
    measured_steady = (statistics.median(row["seconds"]) - setup / 8) * math.exp(-entry["coef"][5] / 8)
    at = fitted_seconds(entry, raw, row["piece"], False, True, 0.0, row["bytes"] / row["nprocs"])
    assert at == pytest.approx(measured_steady, rel=0.02)
    bare = dict(entry, anchors=[])
    alone = fitted_seconds(bare, raw, row["piece"], False, True, 0.0, row["bytes"] / row["nprocs"])
    assert at / alone > 1.5                                  # the fit alone misses the bend by far
    first = [fitted_seconds(e, raw, row["piece"], False, True, 1.0, row["bytes"] / row["nprocs"]) for e in (entry, bare)]
    assert first[0] == first[1]                              # a first call: the fit's alone
    # a row measured once (the budget cut it) anchors too, with the median spread of the repeated rows
    for i, r in enumerate(rows):
        r["seconds"][0] *= 1.2 + 0.01 * (i % 7)              # spreads of 0.1 and more: beyond the floor
    rows[eight]["seconds"] = rows[eight]["seconds"][:1]
    spreads = [statistics.stdev(math.log(s) for s in r["seconds"]) for r in rows if r["calls"] > 1 and r is not row]
    assert statistics.median(spreads) > 2 * NOISE_MIN
    once = fit_strategies(p)["strategies"]["two_phase"]["anchors"]
    f = row_features(row)
    lone = next(a for a in once if (a[0], a[1], a[2], a[3]) == (f[1], round(f[6], 6), 0, 1))
    assert len(once) == len(anchors) and lone[5] == pytest.approx(statistics.median(spreads), abs=1e-6)
    for r in rows:
        r["seconds"] = r["seconds"][:1]
    assert fit_strategies(p)["strategies"]["two_phase"]["anchors"] == []     # no spread to take: no anchors
    for octaves, share in ((2, 0.5), (4, 0.0)):              # call size 4 and 16 x the anchor's, same pieces
        pb = row["bytes"] / row["nprocs"] * 2 ** octaves
        r2 = raw_predictions(p, [dict(row, calls=1, open_seconds=0.0, bytes=int(pb * 2), pieces=int(pb) // 16384)])
        near = fitted_seconds(entry, r2[0]["two_phase"], row["piece"], False, True, 0.0, pb)
        fit_only = fitted_seconds(bare, r2[0]["two_phase"], row["piece"], False, True, 0.0, pb)
        f = row_features(row)
        residual = next(a[4] for a in anchors if (a[0], a[1], a[2], a[3]) == (f[1], round(f[6], 6), 0, 1))
        assert math.log(near / fit_only) == pytest.approx(share * residual, abs=1e-6)


def test_constant_features_get_no_weight_and_few_rows_no_fit():
    p = synthetic_profile({"view_based": (0.2, 0.1, 0.0, 0.7, 0.0, 0.0, 0.0)}, ops=("write",))
    p["strategies"]["measured"] += measured_rows(["node_local"], pieces=(64, 4096), calls=(1,), ops=("read",))[:2]
    fit = fit_strategies(p)
    entry = fit["strategies"]["view_based"]
    assert entry["coef"][3] == 0.0                          # every row a write: no column, coefficient 0
    assert entry["coef"][0] == pytest.approx(0.9, abs=0.03) and entry["cv_max"] < 0.05
    assert "node_local" not in fit["strategies"]            # two rows
    assert fit_strategies(good_profile()) == {"features": list(FEATURES), "strategies": {}}


def test_a_malformed_row_is_named():
    p = synthetic_profile({"two_phase": (0,) * 7}, pieces=(64, 4096))
    p["strategies"]["measured"][2]["seconds"] = []
    with pytest.raises(ValueError, match=r"strategies.measured\[2\].seconds: expected a list of seconds > 0"):
        fit_strategies(p)
    p["strategies"]["measured"][2]["seconds"] = [1.0]
    p["strategies"]["measured"][3]["strategy"] = "auto"
    with pytest.raises(ValueError, match=r"strategies.measured\[3\].strategy: expected one of passthrough"):
        fit_strategies(p)


# --- iotame-config predict ---------------------------------------------------------------------------------------

def predict(tmp_path, lines):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(good_profile()))
    return subprocess.run([config_tool_path(), "predict", str(path)], input="".join(lines), capture_output=True,
                          text=True)


def test_predict_answers_every_kind_per_line(tmp_path):
    call = {"op": "write", "nprocs": 4, "nodes": 2, "bytes": 4 * MIB, "pieces": 64, "piece": 16384,
            "interleaved": True, "sieves": 1}
    p = predict(tmp_path, [json.dumps(call) + "\n", "\n", json.dumps({**call, "setup_seconds": 0.5}) + "\n",
                           json.dumps({"op": "read"})])
    assert p.returncode == 0, p.stderr
    first, setup, empty = (json.loads(line)["raw"] for line in p.stdout.splitlines())
    assert list(first) == list(KINDS) and all(s > 0 for s in first.values())
    assert all(set(json.loads(line)) == {"raw"} for line in p.stdout.splitlines())     # no fit: the raw model only
    # setup_seconds is the engine strategies' only: the library's own calls do not pay it
    for kind in KINDS:
        assert setup[kind] - first[kind] == pytest.approx(0.5 if kind not in ("passthrough", "independent") else 0)
    assert all(s > 0 for s in empty.values())


def test_predict_applies_the_fit_as_python_does(tmp_path):
    """The runtime's fitted prediction (iotame_model_fitted) is the raw one times exp(coef . features) with the
    features of fit.py: the two definitions agree, clamped piece sizes included."""
    p = synthetic_profile({"two_phase": (0.1, -0.4, 0.3, 0.2, -0.5, 0.4, 0.3),
                           "view_based": (0.3, 0.2, 0, 0, 0, 0.2, -0.2)},
                          pieces=(64, 16384, 4 * MIB), calls=(1, 8), process_bytes=(16 << 10, MIB))
    p["strategies"]["fit"] = fit = fit_strategies(p)
    path = tmp_path / "fitted.json"
    path.write_text(json.dumps(p))
    calls = [{"op": op, "nprocs": 4, "nodes": 2, "pieces": 3, "piece": piece, "bytes": 12 * piece,
              "interleaved": interleaved, "first_call": first} for piece in (1, 64, 700, 16384, 300000, 4 * MIB, 1 << 30)
             for op in ("write", "read") for interleaved in (True, False) for first in (0, 1)]
    out = subprocess.run([config_tool_path(), "predict", str(path)], input="".join(json.dumps(c) + "\n" for c in calls),
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for call, line in zip(calls, out.stdout.splitlines()):
        answer = json.loads(line)
        assert set(answer["fitted"]) == set(answer["error"]) == {"two_phase", "view_based"}
        for kind, entry in fit["strategies"].items():
            assert answer["fitted"][kind] == pytest.approx(
                fitted_seconds(entry, answer["raw"][kind], call["piece"], call["op"] == "write", call["interleaved"],
                               call["first_call"], call["bytes"] / call["nprocs"]), rel=1e-9)
            largest = math.expm1(math.hypot(max(abs(r[4]) for r in entry["residuals"]),
                                            max(a[5] for a in entry["anchors"])))
            assert 0 <= answer["error"][kind] <= largest + 1e-5      # the stored figures: 6 decimals


@pytest.mark.parametrize("lines, message", [
    (['{"op": "write"}\n', '{"op": "write", "nprocs": "2"}\n'], 'line 2: nprocs: expected an integer >= 0, got "2"'),
    (['{"op": "append"}\n'], 'line 1: op: expected "write" or "read", got "append"'),
    (['\n', '{"interleaved": 2}\n'], "line 2: interleaved: expected true, false, 0 or 1, got 2"),
    (['{"setup_seconds": -1}\n'], "line 1: setup_seconds: expected a number of seconds >= 0, got -1"),
    (['{"bytes": 1.5}\n'], "line 1: bytes: expected an integer >= 0, got 1.5"),
    (['{"pieces_per_call": 1}\n'], "line 1: pieces_per_call: unknown key"),
    (['{}\n', '{"op": \n'], "line 2: not JSON:"),
    (['[1, 2]\n'], "line 1: (the line): expected an object, one call, got [1,2]"),
])
def test_predict_names_the_line_and_the_key(tmp_path, lines, message):
    p = predict(tmp_path, lines)
    assert p.returncode == 1
    assert f"iotame-config: predict: {message}" in p.stderr
    assert len(p.stdout.splitlines()) == sum(1 for line in lines[:-1] if line.strip())   # the lines before it


def test_predict_refuses_a_bad_profile_and_bad_usage(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**good_profile(), "kind": "x"}))
    p = subprocess.run([config_tool_path(), "predict", str(bad)], input="{}\n", capture_output=True, text=True)
    assert p.returncode == 1 and f"iotame: profile {bad}: kind:" in p.stderr and p.stdout == ""
    p = subprocess.run([config_tool_path(), "predict"], capture_output=True, text=True)
    assert p.returncode == 2 and "iotame-config predict PROFILE" in p.stderr


# --- iotame calibrate --check and --refit ------------------------------------------------------------------------

class FakeCalibration:
    """calibrate --check's measurement, giving the profile's own figures (good_profile's 400 MB/s at 1 MiB)."""

    def __init__(self, directory, settings, on_step=None, drop=True, env=None):
        self.drop_reason = None

    def layout(self):
        pass

    def point(self, direction, pattern, request):
        return 400.0

    def cleanup(self):
        pass


def fitted_profile(tmp_path):
    p = synthetic_profile({"two_phase": (0.1, 0, 0, 0, 0, 0, 0), "view_based": (0.3, 0.2, 0, 0, 0, 0, 0)}, pieces=(64, 16384),
                          calls=(1,))
    p["strategies"]["measured"] += measured_rows(["node_local"], pieces=(64,), calls=(1,), ops=("write",))
    p["strategies"]["fit"] = fit_strategies(p)
    p["filesystem"] = dict(fs_identity(tmp_path))
    return p


def test_check_reports_the_fits_error_per_strategy(tmp_path, monkeypatch, capsys):
    from iotame.calibrate import check
    monkeypatch.setattr(check, "Calibration", FakeCalibration)
    p = fitted_profile(tmp_path)
    p["strategies"]["fit"]["strategies"]["two_phase"]["setup"] = {"write": 0.0085}   # what a first call adds
    path = save_profile(p, tmp_path / "p.json")
    assert main(["calibrate", "--dir", str(tmp_path), "--check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "holds" in out and "model fit: cross-validated error" in out
    lines = {line.split()[1]: line for line in out.splitlines() if line.split()[1:2] and
             line.split()[1] in ("two_phase", "view_based", "node_local")}
    fits = p["strategies"]["fit"]["strategies"]
    assert f"{100 * fits['view_based']['cv_median']:.1f} %" in lines["view_based"]
    assert " 8 " in lines["two_phase"] and "too few rows" in lines["node_local"]
    assert "8.5 ms / -" in lines["two_phase"] and "- / -" in lines["view_based"]
    assert main(["calibrate", "--dir", str(tmp_path), "--check", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["strategies"] == fit_report(p) and [r["strategy"] for r in result["strategies"]] == \
        ["two_phase", "view_based", "node_local"]
    assert result["strategies"][1]["cv_max"] == fits["view_based"]["cv_max"]
    # a profile without a fit: no table, and null in --json
    del p["strategies"]
    save_profile(p, path)
    assert main(["calibrate", "--dir", str(tmp_path), "--check", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strategies"] is None


def test_refit_rewrites_the_fit_in_place(tmp_path, capsys):
    p = fitted_profile(tmp_path)
    stale = copy.deepcopy(p)
    stale["strategies"]["fit"] = {"features": list(FEATURES), "strategies": {}}
    path = save_profile(stale, tmp_path / "p.json")
    assert main(["calibrate", "--refit", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strategies"] == fit_report(p)
    assert load_profile(path) == p
    assert main(["calibrate", "--refit", str(path), "--dir", str(tmp_path)]) == 2
    assert "give only --refit PROFILE.json [--json]" in capsys.readouterr().err
    del stale["strategies"]
    save_profile(stale, path)
    assert main(["calibrate", "--refit", str(path)]) == 2
    assert f"iotame: profile {path}: strategies.measured: expected" in capsys.readouterr().err
    assert main(["calibrate", "--check", str(path)]) == 2
    assert "give --dir DIR" in capsys.readouterr().err
