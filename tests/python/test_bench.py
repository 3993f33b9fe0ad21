"""`iotame bench`: option mapping, planning, summaries, and whole runs (sweeps, --drop-caches, saved files)
with a stand-in kernel that also answers `--list` and `--describe`."""
import json
import sys

import pytest

from iotame.bench import (BenchSpec, caches, get_kernel, parse_kernel_output, parse_set, plan, run_bench,
                          summarize_phases)
from iotame.cli import main
from iotame.errors import UsageError
from .fakes import kernel_result, make_stats

# A long-option kernel's description, as `iotame-kernel noncontig --describe` prints it (abridged).
NONCONTIG = {
    "kernel": "noncontig", "summary": "ROMIO noncontig: interleaved vectors",
    "options": [
        {"name": "elmtcount", "type": "integer", "default": "64", "min": "1", "max": "268435456", "help": "ints"},
        {"name": "veclen", "type": "integer", "default": "256", "min": "1", "max": None, "help": "chunks"},
        {"name": "collective", "type": "flag", "default": None, "min": None, "max": None, "help": "collective"},
        {"name": "file", "type": "string", "default": "iotame-noncontig.dat", "help": "file name"},
        {"name": "seed", "type": "integer", "default": "42", "min": "0"},
        {"name": "keep", "type": "flag"},
        {"name": "skip-write", "type": "flag"},
    ]}

DESCRIBING = r'''#!{python}
"""Answers --list and KERNEL --describe from describe.json; anything else runs the fake kernel."""
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
described = json.load(open(os.path.join(here, "describe.json")))
if sys.argv[1:] == ["--list"]:
    print("\n".join(["ior", *described]))
elif len(sys.argv) == 3 and sys.argv[2] == "--describe":
    print(json.dumps(described[sys.argv[1]]))
else:
    with open(os.path.join(here, "cwd.log"), "a") as f:
        f.write(os.getcwd() + "\n")
    os.execv({target!r}, [{target!r}] + sys.argv[1:])
'''


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """`iotame bench` saves its results in the current directory unless told otherwise."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def long_kernel(fake_kernel, tmp_path, monkeypatch):
    """iotame-kernel is a script that describes `noncontig` and runs the fake kernel for real runs."""
    d = tmp_path / "describing"
    d.mkdir()
    (d / "describe.json").write_text(json.dumps({"noncontig": NONCONTIG}))
    script = d / "iotame-kernel"
    script.write_text(DESCRIBING.format(python=sys.executable, target=str(fake_kernel.path)))
    script.chmod(0o755)
    monkeypatch.setenv("IOTAME_KERNEL", str(script))
    fake_kernel.cwd_log = d / "cwd.log"
    return fake_kernel


def _steps(*mbs_list, stats=True, kernel="ior"):
    out = []
    for w, r in mbs_list:
        result = kernel_result(w, r)
        result["kernel"] = kernel
        out.append({"stdout": json.dumps(result), "stats": make_stats() if stats else None})
    return out


def _one_phase(name, mbs, verified=True):
    r = kernel_result()
    r["phases"] = [{"name": name, "bytes": 1000000, "seconds": 1 / mbs, "mbs": mbs}]
    r["verified"] = verified
    return {"stdout": json.dumps(r), "stats": make_stats()}


def test_set_maps_to_kernel_options():
    ior = get_kernel("ior")
    assert ior.options(parse_set(["b=1m", "t=256k"])) == ["-w", "-r", "-b", "1m", "-t", "256k"]
    assert ior.options(parse_set(["F=1", "c=true", "e=0", "w=1"])) == ["-F", "-c", "-w"]
    assert ior.options(parse_set(["a=POSIX", "o=/scratch/f"])) == ["-w", "-r", "-a", "POSIX", "-o", "/scratch/f"]
    assert ior.options([("r", "1")]) == ["-r"]          # asking for one phase drops the default pair


def test_set_errors():
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_set(["b"])
    with pytest.raises(UsageError, match="-F of ior expects 1 or 0"):
        get_kernel("ior").options([("F", "maybe")])
    with pytest.raises(UsageError, match="ior has no option 'elmtcount'"):
        get_kernel("ior").options([("elmtcount", "4")])
    assert parse_set(["b=1m", "b=2m", "x=a=b"]) == [("b", "2m"), ("x", "a=b")]


def test_plan_interleaves_repeats_over_sweep_points():
    spec = BenchSpec("ior", settings=[("b", "1m"), ("t", "1k")], sweep=[("t", ["64k", "1m"])], repeat=2)
    trials = plan(spec)
    assert [(t.number, t.point, t.repeat) for t in trials] == [(1, 0, 1), (2, 1, 1), (3, 0, 2), (4, 1, 2)]
    assert [t.swept["t"] for t in trials] == ["64k", "1m", "64k", "1m"]       # A B A B, not A A B B
    assert trials[1].settings == [("b", "1m"), ("t", "1m")]
    assert len(plan(BenchSpec("ior", repeat=3))) == 3
    two = plan(BenchSpec("ior", sweep=[("t", ["64k", "1m"]), ("F", ["0", "1"])], repeat=2))
    assert [t.point for t in two] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert two[1].swept == {"t": "64k", "F": "1"}


def test_parse_kernel_output():
    r = kernel_result()
    assert parse_kernel_output(json.dumps(r)) == r
    assert parse_kernel_output("warning: x\n" + json.dumps(r) + "\n") == r
    with pytest.raises(ValueError):
        parse_kernel_output("{not json")
    with pytest.raises(ValueError):
        parse_kernel_output('{"kernel": "ior"}')


def test_run_bench_and_summary(fake_kernel, fake_lib, direct_launcher, tmp_path):
    fake_kernel.plan(_steps((100, 200), (300, 400), (200, 300)))
    spec = BenchSpec("ior", nprocs=2, settings=[("b", "1m")], repeat=3, out=tmp_path / "out")
    runs = run_bench(spec)
    assert [r.ok for r in runs] == [True, True, True]
    assert runs[0].argv == [str(fake_kernel.path), "ior", "-w", "-r", "-b", "1m"]
    assert runs[0].caches_dropped is None and runs[0].read_argv is None
    rows = {r["name"]: r for r in summarize_phases(runs)}
    assert (rows["write"]["median"], rows["write"]["min"], rows["write"]["max"]) == (200, 100, 300)
    assert rows["read"]["runs"] == 3
    assert runs[0].stats["summary"]["bytes_written"] == 2097152
    (jsonl,) = (tmp_path / "out").glob("*.jsonl")
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [line["number"] for line in lines] == [1, 2, 3]
    assert lines[0]["result"]["phases"][0]["mbs"] == 100
    assert len(list((tmp_path / "out").glob("*.stats.json"))) == 3
    # each run had its own statistics file
    assert len({e["env"]["IOTAME_STATS"] for e in fake_kernel.log()}) == 3


def test_summary_median_and_spread_per_sweep_point(fake_kernel, fake_lib, direct_launcher):
    # Trials run A B A B A B: point A gets write 100, 300, 200; point B gets 10, 30, 20.
    fake_kernel.plan(_steps((100, 1), (10, 2), (300, 3), (30, 4), (200, 5), (20, 6)))
    runs = run_bench(BenchSpec("ior", sweep=[("t", ["64k", "1m"])], repeat=3))
    rows = [(r["point"], r["name"], r["runs"], r["median"], r["min"], r["max"]) for r in summarize_phases(runs)]
    assert ({"t": "64k"}, "write", 3, 200, 100, 300) in rows
    assert ({"t": "1m"}, "write", 3, 20, 10, 30) in rows
    assert ({"t": "1m"}, "read", 3, 4, 2, 6) in rows
    assert [e["argv"][-2:] for e in fake_kernel.log()] == [["-t", "64k"], ["-t", "1m"]] * 3


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
    assert data["caches_dropped"] is None
    assert "iotame: bench ior run 2 of 4 failed: exit status 1" in out.err
    assert "  | rank 1: boom" in out.err


def test_bench_cli_table(fake_kernel, fake_lib, direct_launcher, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "120")
    fake_kernel.plan(_steps((100, 200), (300, 400)))
    assert main(["bench", "ior", "--repeat", "2"]) == 0
    captured = capsys.readouterr()
    assert "2 of 2 runs ok" in captured.out
    assert "200.0" in captured.out and "300.0" in captured.out     # write median, read median
    (out,) = tmp_path.glob("iotame-bench-ior-*")                      # the default --out
    assert f"results in {out.name}" in captured.err
    assert len(list(out.glob("ior-*.jsonl"))) == 1 and len(list(out.glob("ior-*.summary.json"))) == 1


def test_bench_cli_sweep_saves_results_summary_and_plot(fake_kernel, fake_lib, direct_launcher, tmp_path,
                                                        capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    fake_kernel.plan(_steps((100, 200), (300, 400), (110, 210), (310, 410)))
    out = tmp_path / "out"
    assert main(["bench", "ior", "--sweep", "t=64k,256k", "--repeat", "2", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "t=64k" in captured.out and "t=256k" in captured.out
    (jsonl,) = out.glob("*.jsonl")
    assert [json.loads(line)["swept"] for line in jsonl.read_text().splitlines()] == \
        [{"t": "64k"}, {"t": "256k"}] * 2
    (png,) = out.glob("*.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    assert f"plot: {png}" in captured.err
    (summary,) = out.glob("*.summary.json")
    data = json.loads(summary.read_text())
    assert data["sweep"] == {"t": ["64k", "256k"]} and "runs" not in data
    assert {(r["point"]["t"], r["name"], r["median"]) for r in data["phases"]} >= {("64k", "write", 105),
                                                                                   ("256k", "read", 405)}


def test_bench_no_preload_needs_no_library(fake_kernel, direct_launcher, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("IOTAME_LIB", str(tmp_path / "missing.so"))
    fake_kernel.plan(_steps((100, 200), stats=False))
    assert main(["bench", "ior", "--repeat", "1", "--no-preload", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"][0]["stats"] is None and data["preload"] is False
    assert fake_kernel.log()[0]["env"]["LD_PRELOAD"] is None


def test_bench_usage_errors(long_kernel, fake_lib, direct_launcher, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 2}')
    assert main(["bench", "ior", "--config", str(bad)]) == 2
    assert main(["bench", "ior", "--config", str(bad), "--no-preload"]) == 2
    assert main(["bench", "ior", "--set", "F=maybe"]) == 2
    assert main(["bench", "ior", "--sweep", "t=64k,,1m"]) == 2
    assert main(["bench", "ior", "--sweep", "t=64k,lots"]) == 2
    assert main(["bench", "noncontig", "--set", "elmtcount=0"]) == 2
    assert main(["bench", "nope"]) == 2
    assert main(["bench", "ior", "--np", "0"]) == 2
    assert main(["bench", "ior", "--dir", "/tmp"]) == 2
    assert main(["bench", "fio", "--np", "2"]) == 2
    assert long_kernel.log() == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("iotame-bench-")] == []
    err = capsys.readouterr().err
    assert "unknown kernel 'nope' (expected one of: ior, noncontig, fio)" in err
    assert "--set elmtcount=0: --elmtcount of noncontig expects an integer from 1 to 268435456" in err
    assert "--sweep t=lots: -t of ior expects a size >= 1" in err
    assert "--dir applies to `iotame bench fio` only" in err
    assert "bench fio: --np applies to kernels, not fio" in err


def test_unknown_key_is_rejected_before_launching(long_kernel, fake_lib, direct_launcher, capsys):
    assert main(["bench", "noncontig", "--set", "elmcount=4"]) == 2
    assert main(["bench", "ior", "--sweep", "x=1,2"]) == 2
    err = capsys.readouterr().err
    assert "--set elmcount: noncontig has no option 'elmcount' (valid: elmtcount, veclen, collective, file, " \
           "seed, keep, skip-write)" in err
    assert "--sweep x: ior has no option 'x' (valid: a, b, t, s, F, c, z, e, C, w, r, W, R, o, i, k, G)" in err
    assert long_kernel.log() == []


def test_long_option_kernel_runs_with_described_options(long_kernel, fake_lib, direct_launcher, capsys):
    long_kernel.plan(_steps((100, 200), kernel="noncontig"))
    assert main(["bench", "noncontig", "--repeat", "1", "--set", "collective=1", "--set", "veclen=8",
                 "--set", "keep=0", "--json"]) == 0
    assert long_kernel.log()[0]["argv"] == ["noncontig", "--collective", "--veclen", "8"]
    assert json.loads(capsys.readouterr().out)["runs"][0]["ok"]


def test_bench_missing_kernel(fake_lib, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IOTAME_KERNEL", str(tmp_path / "none"))
    assert main(["bench", "ior", "--repeat", "1"]) == 2
    err = capsys.readouterr().err
    assert "iotame-kernel not found" in err and "run make setup" in err


# --drop-caches: two jobs per trial, the page cache dropped in between.

@pytest.fixture
def drops(monkeypatch):
    """Records every cache drop; `drops.why` is what drop_caches returns (None: dropped)."""
    class Drops(list):
        why = None
    d = Drops()

    def fake():
        d.append(1)
        return d.why
    monkeypatch.setattr(caches, "drop_caches", fake)
    return d


def test_drop_caches_splits_ior_into_write_then_read(fake_kernel, fake_lib, direct_launcher, drops, tmp_path):
    fake_kernel.plan([_one_phase("write", 100), _one_phase("read", 50)] * 2)
    out = tmp_path / "out"
    spec = BenchSpec("ior", settings=[("b", "1m"), ("o", str(tmp_path / "data" / "f")), ("W", "1"), ("R", "1")],
                     repeat=2, drop_caches="machine", out=out, cwd=tmp_path)
    (tmp_path / "data").mkdir()
    runs = run_bench(spec)
    assert len(drops) == 2
    log = [e["argv"] for e in fake_kernel.log()]
    assert len(log) == 4
    write, read = log[0], log[1]
    assert write[-2:] == ["-w", "-k"] and "-W" in write and "-R" not in write and "-r" not in write
    assert read[-1] == "-r" and "-R" in read and "-W" not in read and "-w" not in read and "-k" not in read
    # the files go to a fresh directory beside the asked-for file, removed afterwards
    workdir = write[write.index("-o") + 1].rsplit("/", 1)[0]
    assert workdir.startswith(str(tmp_path / "data" / ".iotame-bench-"))
    assert read[read.index("-o") + 1] == write[write.index("-o") + 1]
    assert list((tmp_path / "data").iterdir()) == []
    run = runs[0]
    assert run.ok and run.caches_dropped is True
    assert run.argv[-2:] == ["-w", "-k"] and run.read_argv[-1] == "-r"
    assert [(p["name"], p["mbs"]) for p in run.result["phases"]] == [("write", 100), ("read", 50)]
    assert run.stats is not None and run.read_stats is not None
    assert {p.name for p in out.glob("*.stats.json")} >= {f"{run.stats_path.rsplit('/', 1)[1]}",
                                                          f"{run.read_stats_path.rsplit('/', 1)[1]}"}
    assert run.read_stats_path.endswith("-run1-read.stats.json")
    assert [r["name"] for r in summarize_phases(runs)] == ["write", "read"]     # no runtime row for two jobs


def test_drop_caches_long_kernel_keep_then_skip_write(long_kernel, fake_lib, direct_launcher, drops, tmp_path):
    warm = json.loads(_steps((100, 9999))[0]["stdout"])                  # the write job reads a warm cache
    cold = json.loads(_one_phase("read", 40)["stdout"])
    long_kernel.plan([{"stdout": json.dumps(warm)}, {"stdout": json.dumps(cold)}])
    runs = run_bench(BenchSpec("noncontig", settings=[("veclen", "8"), ("keep", "1")], drop_caches="machine",
                               cwd=tmp_path))
    log = [e["argv"] for e in long_kernel.log()]
    assert log == [["noncontig", "--veclen", "8", "--keep"], ["noncontig", "--veclen", "8", "--skip-write"]]
    cwds = long_kernel.cwd_log.read_text().split()
    assert cwds[0] == cwds[1] and cwds[0].startswith(str(tmp_path / ".iotame-bench-"))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".iotame-bench-")] == []
    assert [(p["name"], p["mbs"]) for p in runs[0].result["phases"]] == [("write", 100), ("read", 40)]
    assert runs[0].caches_dropped is True and len(drops) == 1


def test_drop_caches_says_once_when_it_cannot(fake_kernel, fake_lib, direct_launcher, drops, capsys):
    drops.why = "not root"
    fake_kernel.plan([_one_phase("write", 100), _one_phase("read", 50)] * 2)
    assert main(["bench", "ior", "--repeat", "2", "--drop-caches", "machine", "--json"]) == 0
    out = capsys.readouterr()
    assert out.err.count("cannot drop the page cache (not root): read figures may come from memory") == 1
    data = json.loads(out.out)
    assert data["caches_dropped"] is False and [r["caches_dropped"] for r in data["runs"]] == [False, False]


def test_drop_caches_failures_and_write_only(fake_kernel, fake_lib, direct_launcher, drops):
    fake_kernel.plan([{"exit": 3, "stderr": "cannot open\n"}, _one_phase("write", 100)])
    runs = run_bench(BenchSpec("ior", repeat=2, drop_caches="machine", settings=[("w", "1")]))
    assert runs[0].error.startswith("exit status 3")           # write only: one job, nothing to drop
    assert runs[1].ok and runs[1].caches_dropped is None and drops == []
    fake_kernel.plan([{"exit": 3, "stderr": "cannot open\n"}])
    (run,) = run_bench(BenchSpec("ior", drop_caches="machine"))
    assert run.error.startswith("write job: exit status 3") and drops == []


def test_drop_caches_read_only_runs_in_place(fake_kernel, fake_lib, direct_launcher, drops, tmp_path):
    fake_kernel.plan([_one_phase("read", 50)])
    (run,) = run_bench(BenchSpec("ior", settings=[("r", "1"), ("o", "kept.dat")], drop_caches="machine", cwd=tmp_path))
    assert run.ok and run.caches_dropped is True and len(drops) == 1
    assert run.argv[-3:] == ["-r", "-o", "kept.dat"] and run.read_argv is None
    assert [e["argv"] for e in fake_kernel.log()] == [["ior", "-r", "-o", "kept.dat"]]


def test_drop_caches_skip_write_runs_in_the_working_directory(long_kernel, fake_lib, direct_launcher, drops,
                                                               tmp_path):
    long_kernel.plan([_one_phase("read", 50)])
    (run,) = run_bench(BenchSpec("noncontig", settings=[("skip-write", "1")], drop_caches="machine", cwd=tmp_path))
    assert run.ok and run.caches_dropped is True
    assert long_kernel.cwd_log.read_text().split() == [str(tmp_path)]


def test_bench_cli_steady_memory(fake_kernel, fake_lib, direct_launcher, capsys, monkeypatch, tmp_path):
    """--steady-memory turns free page reporting off around the runs, touches the free memory once, puts the order
    back, and says so (a stand-in sysfs: tests never change the machine)."""
    import functools

    from iotame.bench import memory
    from iotame.commands import bench as bench_command
    order, buddy, meminfo = tmp_path / "order", tmp_path / "buddyinfo", tmp_path / "meminfo"
    order.write_text("9\n")
    buddy.write_text("Node 0, zone   Normal    938   1490   1373   1807   1953   1562   1213    996    824    742   3791\n")
    meminfo.write_text("MemFree:        4194304 kB\n")
    touched, seen = [], []

    def touch(n):
        touched.append(n)
        seen.append(order.read_text().strip())   # while the memory is touched and the runs go: reporting off

    monkeypatch.setattr(bench_command, "steady_memory", functools.partial(memory.steady_memory, order, buddy, meminfo,
                                                                          touch))
    fake_kernel.plan(_steps((100, 200)))
    assert main(["bench", "ior", "--steady-memory", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert touched == [(4 << 30) - (2 << 30)] and seen == ["11"] and order.read_text().strip() == "9"
    assert data["memory"].startswith("free page reporting off")
    fake_kernel.plan(_steps((100, 200)))
    assert main(["bench", "ior", "--json"]) == 0                      # not asked: nothing touched
    assert "memory" not in json.loads(capsys.readouterr().out) and len(touched) == 1
