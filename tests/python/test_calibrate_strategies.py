"""`iotame calibrate`'s strategies stage (issue 48): sigprobe under each collective strategy through the network
probe's launcher, one row per strategy x signature x operation in the profile's `strategies` section (version 2),
the fit when fit.py is there, and profiles of version 1 still loading. Outcomes and shapes, never timings."""
import json
import shutil
import sys
import types

import pytest

from iotame.calibrate import (FULL_DESIGN, QUICK_DESIGN, STRATEGIES, Design, load_profile, measure_strategies,
                              network_job, save_profile)
from iotame.calibrate.network import with_probe
from iotame.calibrate.strategies import (FULL_SECONDS, NOT_ASKED_NOTE, QUICK_SECONDS, ROW_KEYS, SKIPPED_NOTE, _served,
                                         runtime_for, strategy_config)
from iotame.cli import main
from iotame.config import validate
from iotame.tune.job import Job

from .profiles import MIB, good_profile

TINY = Design(sizes=(64, 4096), calls=(1,), repeats=1, pieces_bytes=64 << 10)


def _built():
    from iotame.paths import kernel_path, lib_path
    return kernel_path().is_file() and lib_path().is_file()


needs_mpi = pytest.mark.skipif(shutil.which("mpiexec") is None or not _built(),
                               reason="no mpiexec, or iotame-kernel / libiotame.so not built")


def _row(strategy="view_based", op="write", **kw):
    row = {"op": op, "strategy": strategy, "nprocs": 2, "nodes": 1, "ppn": 2, "piece": 64, "pieces": 16384,
           "interleaved": True, "calls": 8, "bytes": 2 * MIB, "gap": 0, "targets": 6, "unit": 65536, "sieves": 1,
           "open_seconds": 0.0012, "seconds": [0.0123, 0.0119, 0.0125]}
    row.update(kw)
    return row


@needs_mpi
def test_the_stage_records_one_row_per_strategy_signature_and_operation(tmp_path):
    steps = []
    section, notes = measure_strategies(tmp_path, network_job(np=2, env={}), TINY,
                                        layout={"targets": 1, "stripe_unit": 0}, on_step=steps.append)
    assert notes == []                                   # every call served by the strategy named
    assert [s.split(" ")[1] for s in steps] == list(STRATEGIES)
    rows = section["measured"]
    # 64 B and 4 KiB interleaved (1024 and 16 pieces per process), and the contiguous 64 KiB run (once)
    signatures = {(64, 1024, True), (4096, 16, True), (65536, 1, False)}
    assert len(rows) == len(STRATEGIES) * len(signatures) * 2
    for strategy in STRATEGIES:
        mine = [r for r in rows if r["strategy"] == strategy]
        assert sorted((r["piece"], r["pieces"], r["interleaved"], r["op"]) for r in mine) == \
            sorted((*s, op) for s in signatures for op in ("write", "read"))
    for r in rows:
        assert tuple(r) == ROW_KEYS
        assert (r["nprocs"], r["nodes"], r["ppn"], r["calls"], r["bytes"]) == (2, 1, 2, 1, 2 * 65536)
        assert (r["gap"], r["targets"], r["unit"], r["sieves"]) == (0, 1, 0, 1)
        assert r["open_seconds"] > 0 and len(r["seconds"]) == 1 and r["seconds"][0] > 0
    assert section["seconds"] >= 0 and "sigprobe" in section["method"]
    assert list(tmp_path.iterdir()) == []                # the probe's scratch directory is gone
    profile = dict(good_profile(), version=2, strategies=section)
    assert load_profile(save_profile(profile, tmp_path / "p.json"))["strategies"] == section
    from iotame.calibrate import measure
    fit, note = measure._fit(profile)                   # the rows are what the fit takes: every strategy fitted
    assert note is None and set(fit["strategies"]) == set(STRATEGIES)
    profile["strategies"]["fit"] = fit
    assert load_profile(save_profile(profile, tmp_path / "p.json"))["strategies"]["fit"] == fit


@needs_mpi
def test_calibrate_prints_the_table_and_writes_version_2(tmp_path, capsys, monkeypatch):
    from iotame.calibrate import measure
    monkeypatch.setattr(measure, "QUICK_DESIGN", TINY)
    monkeypatch.setattr(measure.Calibration, "storage", lambda self: good_profile()["storage"])
    monkeypatch.setattr(measure, "memory_copy_mbs", lambda nbytes: 1000.0)
    out = tmp_path / "p.json"
    assert main(["calibrate", "--quick", "--dir", str(tmp_path), "--out", str(out), "--np", "2"]) == 0
    printed = capsys.readouterr().out
    assert "strategies: MB/s of the median call, 2 processes on 1 node(s)" in printed
    assert "16 x 4 KiB" in printed and "1,024 x 64 B" in printed and "1 x 64 KiB" in printed
    profile = load_profile(out)
    assert profile["version"] == 2 and set(profile["strategies"]["fit"]["strategies"]) <= set(STRATEGIES)
    assert len(profile["strategies"]["measured"]) == len(STRATEGIES) * 3 * 2
    assert main(["calibrate", "--quick", "--dir", str(tmp_path), "--out", str(out), "--np", "2",
                 "--no-strategies"]) == 0
    profile = load_profile(out)
    assert "strategies" not in profile and SKIPPED_NOTE in profile["notes"]
    assert SKIPPED_NOTE in capsys.readouterr().err


@needs_mpi
def test_a_budget_cuts_repeats_and_says_where(tmp_path):
    design = Design(sizes=(64, 4096), calls=(1,), repeats=3, pieces_bytes=16 << 10, seconds=0.001)
    section, notes = measure_strategies(tmp_path, network_job(np=2, env={}), design, strategies=("two_phase",))
    rows = section["measured"]
    assert len(rows) == 6 and all(len(r["seconds"]) == 1 for r in rows)   # each signature's first repeat only
    assert notes == ["strategy two_phase: 6 of 6 rows have fewer than 3 repeats (its 0.001 s budget: its slowest "
                     "signatures were repeated less)"]
    assert "budget" in section["method"]
    assert list(tmp_path.iterdir()) == []


def test_a_failed_sigprobe_names_the_kernels_own_reason(tmp_path, monkeypatch):
    import iotame.calibrate.strategies as strategies
    from iotame.errors import IotameError
    err = ("iotame-kernel sigprobe: rank 2: write: No space left on device\n" + "-" * 70 + "\n"
           "[tb0:1] 3 more processes have sent help message help-mpi-api.txt / mpi-abort\n"
           "[tb0:1] Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help / error messages\n")
    failed = types.SimpleNamespace(stdout="", stderr=err, returncode=3, exit_status=3, timed_out=False)
    monkeypatch.setattr(strategies, "run_command", lambda *a, **k: failed)
    with pytest.raises(IotameError) as e:
        measure_strategies(tmp_path, network_job(np=2, env={}), TINY, strategies=("node_local",))
    assert "strategy node_local: sigprobe failed (exit status 3)" in str(e.value)
    assert str(e.value).endswith("iotame-kernel sigprobe: rank 2: write: No space left on device")


@needs_mpi
def test_a_strategy_past_the_timeout_is_left_out_with_a_note(tmp_path):
    section, notes = measure_strategies(tmp_path, network_job(np=2, env={}), TINY,
                                        strategies=("two_phase", "independent"), timeout=0.01)
    assert section is None                               # nothing measured: no section, and no failed calibration
    assert [n.split(": ")[:2] for n in notes] == [["strategy two_phase", "not measured"],
                                                  ["strategy independent", "not measured"]]
    assert list(tmp_path.iterdir()) == []


def test_without_processes_there_is_no_stage_and_a_note(tmp_path):
    assert measure_strategies(tmp_path, None) == (None, [NOT_ASKED_NOTE])
    assert "--np N" in NOT_ASKED_NOTE
    job = Job(("no-such-mpiexec-here", "-n", "2", "iotame-kernel", "netprobe"), 2, True)
    section, (note,) = measure_strategies(tmp_path, job)
    assert section is None and "no-such-mpiexec-here not found" in note


def test_the_probe_goes_through_the_networks_launcher(tmp_path):
    kernel = tmp_path / "iotame-kernel"
    args = ["sigprobe", "--dir", "/d"]
    job = with_probe(network_job(np=2, program=kernel, env={}), args)
    assert job.argv[0] == "mpiexec" and job.argv[-4:] == (str(kernel), *args) and job.nprocs == 2
    testbed = ["scripts/testbed", "mpiexec", "--openmpi", "-n", "2", "--per-host", "1", "--"]
    job = with_probe(network_job(testbed, program=kernel, env={}), args)
    assert job.argv == (*testbed, str(kernel), *args) and job.nprocs == 2
    forwarded = Job(("mpiexec", "-n", "2", "-x", "LD_PRELOAD", "-x", "IOTAME_CONFIG", str(kernel), "netprobe",
                     "--reps", "5"), 2, True)
    assert with_probe(forwarded, args).argv == forwarded.argv[:7] + (str(kernel), *args)
    with pytest.raises(ValueError):
        with_probe(Job(("mpiexec", "-n", "2", "app"), 2, True), args)


def test_the_runtime_is_the_one_built_beside_the_kernel(tmp_path, monkeypatch):
    tree = tmp_path / "build-openmpi"
    (tree / "kernels").mkdir(parents=True)
    (tree / "runtime").mkdir()
    (tree / "runtime" / "libiotame.so").write_bytes(b"")
    assert runtime_for(tree / "kernels" / "iotame-kernel") == (tree / "runtime" / "libiotame.so").resolve()
    monkeypatch.setenv("IOTAME_LIB", str(tmp_path / "mine.so"))
    (tmp_path / "mine.so").write_bytes(b"")
    assert runtime_for(tree / "kernels" / "iotame-kernel") == (tmp_path / "mine.so").resolve()


def test_each_strategys_configuration_is_valid_and_keeps_the_emulated_storage():
    emulate = {"device": "disk", "targets": 6, "target_unit": 65536, "state": "/dev/shm/x.state"}
    for strategy in STRATEGIES:
        config = strategy_config(strategy, emulate)
        assert validate(config, "strategy.json") == []
        assert config["defaults"]["collective"] == {"strategy": strategy}
        assert config["defaults"]["emulate"] == emulate
    assert "emulate" not in strategy_config("two_phase")["defaults"]


def test_designs_keep_the_fit_determined():
    for design in (FULL_DESIGN, QUICK_DESIGN):
        assert len(design.sizes) >= 3 and set(design.layouts) == {"interleaved", "contiguous"}
        pieces = set(design.sizes) | {u for u, _ in design.call_sizes}
        assert set(design.ops) == {"write", "read"} and min(pieces) == 64 and max(pieces) == 4 * MIB
        per_process = {design.pieces_bytes} | {b for _, b in design.call_sizes}   # the fit's v: small and large calls
        assert min(per_process) <= 16 << 10 and max(per_process) >= 8 * MIB
        assert (64, 64 << 10) in design.call_sizes     # 64 B pieces: as many per call as 1 KiB ones in 1 MiB
    argv = FULL_DESIGN.argv("/d")
    assert argv[:3] == ["sigprobe", "--dir", "/d"]
    assert argv[argv.index("--sizes") + 1].split(",")[-3:] == [f"65536@{256 << 10}", f"{MIB}@{8 * MIB}",
                                                              f"{4 * MIB}@{16 * MIB}"]


def test_each_strategys_run_has_a_budget_and_a_timeout_far_above_it():
    from iotame.calibrate.strategies import PROBE_TIMEOUT
    for design, budget in ((FULL_DESIGN, FULL_SECONDS), (QUICK_DESIGN, QUICK_SECONDS)):
        argv = design.argv("/d")
        assert 0 < budget == float(argv[argv.index("--seconds") + 1]) and PROBE_TIMEOUT >= 5 * budget
    assert TINY.argv("/d")[-2:] == ["--seconds", "0"]       # 0: every repeat, as sigprobe without the option


def test_calls_not_served_by_the_strategy_are_noted():
    def stats(strategies, reasons=None):
        return {"nprocs": 2, "files": [{"ranks": 2, "ops": {"write_all": {"count": 8}, "read_all": {"count": 8}},
                                        "strategies": strategies, "passthrough_reasons": reasons or {}}]}
    assert _served(stats({"two_phase": {"calls": 8}}), "two_phase") is None
    assert _served(stats({}), "passthrough") is None
    note = _served(stats({"independent": {"calls": 2}}, {"not a local file system": 6}), "independent")
    assert note == "strategy independent: served 2 of 8 collective calls (passed through: 6 x not a local file system)"
    assert "unknown" in _served(None, "view_based")


def test_the_fit_is_added_and_a_failing_fit_keeps_the_measurements(monkeypatch):
    from iotame.calibrate import measure
    profile = dict(good_profile(), version=2, strategies={"method": "m", "seconds": 1.0, "measured": [_row()]})
    fake = types.ModuleType("iotame.calibrate.fit")
    fake.fit_strategies = lambda p: {"features": ["one", "u", "u2", "write", "interleaved", "first", "v"],
                                     "strategies": {}, "rows_seen": len(p["strategies"]["measured"])}
    monkeypatch.setitem(sys.modules, "iotame.calibrate.fit", fake)
    fit, note = measure._fit(profile)
    assert fit["rows_seen"] == 1 and note is None

    def broken(p):
        raise ValueError("too few rows")
    fake.fit_strategies = broken
    assert measure._fit(profile) == (None, "strategies not fitted: ValueError: too few rows")


def test_a_version_1_profile_still_loads_and_a_version_2_one_with_rows(tmp_path):
    old = good_profile()
    assert old["version"] == 1 and "strategies" not in old
    assert load_profile(save_profile(old, tmp_path / "v1.json")) == old
    rows = [_row(s, op) for s in STRATEGIES for op in ("write", "read")]
    new = dict(good_profile(), version=2, strategies={"method": "m", "seconds": 12.0, "measured": rows})
    path = save_profile(new, tmp_path / "v2.json")
    assert json.loads(path.read_text())["strategies"]["measured"][0] == rows[0]
    assert load_profile(path) == new
