"""`iotame bench`: option mapping, planning, summaries, and whole runs with a stand-in kernel."""
import json

import pytest

from iotame.bench import (BenchSpec, get_kernel, parse_kernel_output, parse_set, plan, run_bench,
                          summarize_phases)
from iotame.cli import main
from iotame.errors import UsageError
from .fakes import kernel_result, make_stats


def test_set_maps_to_kernel_options():
    ior = get_kernel("ior")
    assert ior.options(parse_set(["b=1m", "t=256k"])) == ["-w", "-r", "-b", "1m", "-t", "256k"]
    assert ior.options(parse_set(["F=1", "c=true", "e=0", "w=1"])) == ["-F", "-c", "-w"]
    assert ior.options(parse_set(["a=POSIX", "o=/scratch/f"])) == ["-w", "-r", "-a", "POSIX", "-o", "/scratch/f"]
    assert ior.option_args("elmtcount", "4") == ["--elmtcount", "4"]
    assert ior.options([("r", "1")]) == ["-r"]          # asking for one phase drops the default pair


def test_set_errors():
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_set(["b"])
    with pytest.raises(UsageError, match="is a flag of ior"):
        get_kernel("ior").options([("F", "maybe")])
    with pytest.raises(UsageError, match="unknown kernel 'nope'"):
        get_kernel("nope")
    assert parse_set(["b=1m", "b=2m", "x=a=b"]) == [("b", "2m"), ("x", "a=b")]


def test_plan_interleaves_repeats_over_sweep_points():
    spec = BenchSpec("ior", settings=[("b", "1m"), ("t", "1k")], sweep=[("t", ["64k", "1m"])], repeat=2)
    trials = plan(spec)
    assert [(t.number, t.point, t.repeat) for t in trials] == [(1, 0, 1), (2, 1, 1), (3, 0, 2), (4, 1, 2)]
    assert trials[1].settings == [("b", "1m"), ("t", "1m")]
    assert len(plan(BenchSpec("ior", repeat=3))) == 3


def test_parse_kernel_output():
    r = kernel_result()
    assert parse_kernel_output(json.dumps(r)) == r
    assert parse_kernel_output("warning: x\n" + json.dumps(r) + "\n") == r
    with pytest.raises(ValueError):
        parse_kernel_output("{not json")
    with pytest.raises(ValueError):
        parse_kernel_output('{"kernel": "ior"}')


def _steps(*mbs_list, stats=True):
    return [{"stdout": json.dumps(kernel_result(w, r)), "stats": make_stats() if stats else None}
            for w, r in mbs_list]


def test_run_bench_and_summary(fake_kernel, fake_lib, direct_launcher, tmp_path):
    fake_kernel.plan(_steps((100, 200), (300, 400), (200, 300)))
    spec = BenchSpec("ior", nprocs=2, settings=[("b", "1m")], repeat=3, out=tmp_path / "out")
    runs = run_bench(spec)
    assert [r.ok for r in runs] == [True, True, True]
    assert runs[0].argv == [str(fake_kernel.path), "ior", "-w", "-r", "-b", "1m"]
    rows = {r["name"]: r for r in summarize_phases(runs)}
    assert (rows["write"]["median"], rows["write"]["min"], rows["write"]["max"]) == (200, 100, 300)
    assert rows["read"]["runs"] == 3
    assert runs[0].stats["summary"]["bytes_written"] == 2097152
    (jsonl,) = (tmp_path / "out").glob("*.jsonl")
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [line["number"] for line in lines] == [1, 2, 3]
    assert len(list((tmp_path / "out").glob("*.stats.json"))) == 3
    # each run had its own statistics file
    assert len({e["env"]["IOTAME_STATS"] for e in fake_kernel.log()}) == 3


def test_bench_cli_json_and_failures(fake_kernel, fake_lib, direct_launcher, capsys):
    steps = _steps((100, 200))
    steps.append({"exit": 1, "stderr": "rank 1: boom\n", "stdout": ""})
    steps.append({"stdout": "not json"})
    steps.append({"stdout": json.dumps(kernel_result(verified=False))})
    fake_kernel.plan(steps)
    rc = main(["bench", "ior", "--np", "2", "--repeat", "4", "--set", "b=1m", "--json"])
    assert rc == 1
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert [r["ok"] for r in data["runs"]] == [True, False, False, False]
    assert data["failed"] == 3
    assert data["runs"][1]["error"].startswith("exit status 1")
    assert data["runs"][1]["stderr"].endswith("rank 1: boom\n")
    assert data["runs"][2]["error"] == 'no JSON result with "phases" on stdout'
    assert data["runs"][3]["error"].startswith("data verification failed")
    assert [p["name"] for p in data["phases"]] == ["write", "read", "all I/O (runtime stats)"]
    assert "iotame: bench ior run 2 of 4 failed: exit status 1" in out.err
    assert "  | rank 1: boom" in out.err


def test_bench_cli_table(fake_kernel, fake_lib, direct_launcher, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    fake_kernel.plan(_steps((100, 200), (300, 400)))
    assert main(["bench", "ior", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 runs ok" in out
    assert "200.0" in out and "300.0" in out     # write median, read median


def test_bench_no_preload_needs_no_library(fake_kernel, direct_launcher, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("IOTAME_LIB", str(tmp_path / "missing.so"))
    fake_kernel.plan(_steps((100, 200), stats=False))
    assert main(["bench", "ior", "--repeat", "1", "--no-preload", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"][0]["stats"] is None and data["preload"] is False
    assert fake_kernel.log()[0]["env"]["LD_PRELOAD"] is None


def test_bench_usage_errors(fake_kernel, fake_lib, direct_launcher, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 2}')
    assert main(["bench", "ior", "--config", str(bad)]) == 2
    assert main(["bench", "ior", "--config", str(bad), "--no-preload"]) == 2
    assert main(["bench", "ior", "--set", "F=maybe"]) == 2
    assert main(["bench", "nope"]) == 2
    assert main(["bench", "ior", "--np", "0"]) == 2
    assert fake_kernel.log() == []
    capsys.readouterr()


def test_bench_missing_kernel(fake_lib, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IOTAME_KERNEL", str(tmp_path / "none"))
    assert main(["bench", "ior", "--repeat", "1"]) == 2
    err = capsys.readouterr().err
    assert "iotame-kernel not found" in err and "run make setup" in err
