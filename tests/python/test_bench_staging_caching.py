"""bench/staging.py --configs (issue 37's table: the synchronous collective write, node staging and aggregator
caching side by side): the options' checks, the configurations, the targets row by row and the report on synthetic
runs. Nothing is timed."""
import argparse
import subprocess
import sys

import pytest

from iotame.bench.setting import Setting

from .scripts import ROOT, load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench/staging.py", "bench_staging_caching")


def options(**kw):
    a = {"configs": "sync,node,aggregators", "experiment": "phases", "hosts": None, "per_host": "1", "targets": 0,
         "devices": "disk", "np": "1,2"}
    return argparse.Namespace(**{**a, **kw})


def test_sync_comes_first_whether_named_or_not(bench):
    assert bench.caching_names("aggregators,node") == ["sync", "aggregators", "node"]
    assert bench.caching_names("node, sync,node") == ["sync", "node"]
    with pytest.raises(ValueError, match="unknown configuration staged"):
        bench.caching_names("sync,staged")


def test_per_host_is_one_value_or_one_per_host_count(bench):
    assert bench.host_layouts(None, "1") == [(0, 0)]
    assert bench.host_layouts("2,4", "1") == [(2, 1), (4, 1)]
    assert bench.host_layouts("2,4", "2,1") == [(2, 2), (4, 1)]
    with pytest.raises(ValueError, match="--per-host 2,1,1"):
        bench.host_layouts("2,4", "2,1,1")
    with pytest.raises(ValueError, match="--hosts two"):
        bench.host_layouts("two", "1")
    with pytest.raises(ValueError, match="--hosts 0"):
        bench.host_layouts("0", "1")


def test_the_options_of_the_table_are_checked_before_anything_runs(bench):
    assert bench.caching_arguments(options(configs=None)) == []
    with pytest.raises(ValueError, match="--hosts: only with --configs"):
        bench.caching_arguments(options(configs=None, hosts="2"))
    with pytest.raises(ValueError, match="not patterns"):
        bench.caching_arguments(options(experiment="patterns"))
    with pytest.raises(ValueError, match="one device with --targets"):
        bench.caching_arguments(options(targets=4, devices="none,disk"))
    with pytest.raises(ValueError, match="square number of processes, not 2 \\(--hosts 2 x --per-host 1\\)"):
        bench.caching_arguments(options(experiment="btio", hosts="2,4"))
    assert bench.caching_arguments(options(experiment="btio", hosts="2,4", per_host="2,1")) == [
        "sync", "node", "aggregators"]


def test_the_configurations_on_striped_targets_and_on_one_device(bench, tmp_path):
    striped = Setting(2, 1, "openmpi", 4, 65536, "disk")
    agg = bench.caching_config("aggregators", striped, "disk", 2, tmp_path)["defaults"]
    assert agg["staging"] == {"enabled": True, "collective": "aggregators"}
    assert agg["collective"] == {"strategy": "view_based"}
    assert agg["emulate"]["targets"] == 4 and agg["emulate"]["target_unit"] == 65536
    sync = bench.caching_config("sync", Setting(), "disk", 1, tmp_path)["defaults"]
    assert sync == {"staging": {"enabled": False}, "collective": {"strategy": "view_based"},
                    "emulate": {"device": "disk", "state": str(tmp_path / "device.state")}}
    node = bench.caching_config("node", Setting(), "none", 1, tmp_path)["defaults"]
    assert node == {"staging": {"enabled": True, "collective": "node"}}
    assert "aggregators" not in str(bench.CACHING_CONFIGS["sync"])  # the module's table is not changed by a run


def test_open_mpi_on_this_machine_oversubscribes(bench):
    assert Setting(mpi="openmpi").argv(3, "k")[:4] == ["mpirun.openmpi", "--oversubscribe", "-n", "3"]
    assert Setting().argv(2, "k") == ["mpiexec", "-n", "2", "k"]
    assert Setting().env() == {} and Setting(mpi="openmpi").env()["OMPI_ALLOW_RUN_AS_ROOT"] == "1"


def medians(write, close, total, compute, mbs):
    return {"write": write, "close": close, "total": total, "compute": compute, "mbs": mbs}


def test_targets_apply_by_compute(bench):
    sync = medians(1.0, 0.01, 2.5, 1.5, 100)
    hidden = bench.caching_targets(sync, medians(0.1, 0.4, 2.0, 1.5, 200))
    assert hidden == {"write": True, "total": True, "throughput": None}
    assert bench.caching_targets(sync, medians(0.11, 0.4, 2.1, 1.5, 200)) == {
        "write": False, "total": False, "throughput": None}  # 2.1 > 1.1 x 1.9
    short = bench.caching_targets(sync, medians(0.01, 0.4, 2.0, 0.5, 200))  # compute below sync's write
    assert short == {"write": None, "total": None, "throughput": None}
    assert bench.caching_targets(sync, medians(0.01, 1.2, 1.3, 0, 89))["throughput"] is False
    assert bench.caching_targets(sync, medians(0.01, 1.2, 1.3, 0, 90))["throughput"] is True


def run_record(config, write, close, total, compute, repeat, record=65536, cached="aggregators"):
    return {"experiment": "phases_caching", "hosts": 2, "per_host": 1, "np": 2, "device": "disk", "targets": 4,
            "config": config, "compute_per_phase": compute, "repeat": repeat, "record": record, "bytes": 4e6,
            "write_seconds": write, "close_seconds": close, "compute_seconds": 3 * compute,
            "total_seconds": total, "stage": None, "cached_at": None if config == "sync" else cached}


def test_the_report_takes_medians_ratios_and_targets(bench):
    runs = ([run_record("sync", w, 0.001, 1.0, 0.5, i) for i, w in enumerate((0.4, 0.2, 0.3))]  # median 0.3
            + [run_record("aggregators", w, 0.1, 1.7, 0.5, i) for i, w in enumerate((0.02, 0.9, 0.01))]  # 0.02
            + [run_record("node", 0.05, 0.1, 1.7, 0.5, i, cached="node: no window") for i in range(3)])
    text = bench.report({"date": "d", "mpi": "openmpi", "repeat": 3, "runs": runs})
    rows = {line.split("|")[5].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| 2 x 1 |")}
    assert rows["sync"][5:8] == ["0.3000", "0.0010", "1.000"]
    assert rows["aggregators"][5] == "0.0200" and rows["aggregators"][9] == "0.067"
    assert rows["aggregators"][12] == "write yes, total yes"  # 1.7 <= 1.1 x (1.5 + 0.1)
    assert rows["node"][12] == "write NO, total yes"
    assert rows["sync"][12] == "—"
    assert "node: node: no window (3)" in text and "aggregators: aggregators (3)" in text
    assert "| device | np | record |" not in text  # the default phases table is left out


def test_rows_of_other_link_rates_stay_apart(bench):
    runs = [{**run_record(n, w, 0.01, 1.0, 0.0, 0), "link": link}
            for link, w in (("1gbit", 0.4), ("10gbit", 0.1)) for n in ("sync", "aggregators")]
    text = bench.report({"date": "d", "mpi": "openmpi", "repeat": 1, "runs": runs})
    assert [line.split("|")[1].strip() for line in text.splitlines() if "| sync |" in line] == [
        "2 x 1 (1gbit)", "2 x 1 (10gbit)"]  # by rate, not by name
    assert bench.link_bits("100mbit") == 1e8 and bench.link_bits(None) == 0 and bench.link_bits("none") > 1e12


@pytest.mark.parametrize("argv, message", [
    (["btio", "--configs", "sync,aggregators", "--np", "2"], "square number of processes, not 2 (--np)"),
    (["phases", "--hosts", "2"], "--hosts: only with --configs"),
    (["noncontig", "--configs", "sync"], "--configs: for phases and btio only, not noncontig"),
    (["phases", "--configs", "sync", "--targets", "4"], "--devices none,disk: one device with --targets"),
])
def test_the_command_line_refuses_before_running_anything(argv, message):
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "staging.py"), *argv], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and message in p.stderr, p.stderr


def test_the_statistics_give_the_visible_write_and_where_writes_were_cached(bench):
    ops = {"write_at_all": {"seconds": {"max": 0.25}}, "iwrite_at": {"seconds": {"max": 0.5}},
           "read_at_all": {"seconds": {"max": 4.0}}, "sync": {"seconds": {"max": 8.0}}}
    st = {"files": [{"path": "/run/bt.dat", "ops": ops, "stage": {"collective": "aggregators"}},
                    {"path": "/run/other.dat", "ops": ops, "stage": {"collective": "node",
                                                                      "collective_reason": "one caching open"}}],
          "modules": {}}
    assert bench.write_op_seconds(st, "bt.dat") == 0.75  # writes only, of this file only
    assert bench.cached_at(st, "bt.dat") == "aggregators"
    assert bench.cached_at(st, "other.dat") == "node: one caching open"
    flushed = {"files": [{"path": "/run/bt.dat"}], "modules": {"stage": {
        "flusher": {"flush_seconds": 1, "overlapped_seconds": 0, "extents_in": 3, "writes_out": 1},
        "blocked_seconds": 0}}}
    assert bench.cached_at(flushed, "bt.dat") == "node" and bench.cached_at({"files": []}, "bt.dat") is None
