"""Partial statistics of an aborted job (STATS.partial.RANK): merging, `stats show`, `run` and the tuner."""
import json
import os
import time

import pytest

from iotame import StatsError, load_stats
from iotame.cli import main
from iotame.stats import merge_partials, partial_paths
from iotame.tune.measure import run_once
from .fakes import make_stats


def partial(rank, nprocs=3, reason=None, signal=None, **kw):
    s = make_stats(**kw)
    s["nprocs"] = 1
    s["files"][0]["ranks"] = 1
    s["files"][0]["opens"] = 1
    s["partial"] = {"reason": reason or f"signal 15 (SIGTERM) on rank {rank}", "rank": rank, "job_nprocs": nprocs,
                    "signal": signal}
    return s


def write(path, obj):
    path.write_text(json.dumps(obj))
    return path


def test_merge_sums_bytes_and_keeps_the_slowest_times():
    a = partial(0, bytes_written=100, bytes_read=0, io_seconds=0.5)
    b = partial(2, bytes_written=300, bytes_read=10, io_seconds=2.0, reason="MPI_Abort(MPI_COMM_WORLD, 7) called on rank 2")
    b["files"][0]["time"]["write"] = {"min": 1.0, "avg": 1.0, "max": 1.0}
    m = merge_partials([("a", a), ("b", b)])
    assert m["nprocs"] == 3
    assert m["summary"]["bytes_written"] == 400 and m["summary"]["bytes_read"] == 10
    assert m["summary"]["io_seconds"] == 2.0
    assert m["summary"]["io_mbs"] == pytest.approx(410 / 2.0 / 1e6)
    (f,) = m["files"]
    assert f["ranks"] == 2 and f["opens"] == 2 and f["bytes_written"] == 400
    assert f["ops"]["write_at_all"] == {"count": 8, "bytes": 400}
    assert f["time"]["write"] == {"min": 0.2, "avg": pytest.approx(0.625), "max": 1.0}
    assert f["histogram"]["write"] == {"524288": 8}
    assert m["partial"]["ranks"] == [0, 2] and m["partial"]["missing"] == [1]
    assert m["partial"]["reasons"][1] == {"rank": 2, "reason": "MPI_Abort(MPI_COMM_WORLD, 7) called on rank 2",
                                          "signal": None}


def test_files_of_an_earlier_job_of_another_size_are_left_out():
    m = merge_partials([("old", partial(3, nprocs=4)), ("new", partial(0, nprocs=2))], newest="new")
    assert m["nprocs"] == 2 and m["partial"]["ranks"] == [0] and m["partial"]["missing"] == [1]


def test_bad_partial_names_the_file_and_key():
    bad = partial(0)
    del bad["partial"]["job_nprocs"]
    with pytest.raises(StatsError, match="statistics x.json.partial.0: partial.job_nprocs is not"):
        merge_partials([("x.json.partial.0", bad)])


def test_load_stats_merges_when_the_statistics_are_missing_or_older(tmp_path):
    stats = tmp_path / "s.json"
    write(tmp_path / "s.json.partial.1", partial(1, nprocs=2, bytes_written=5, bytes_read=0))
    (tmp_path / "s.json.partial.0.tmp123").write_text("{")       # a half-written one: not read
    assert [p.name for p in partial_paths(stats)] == ["s.json.partial.1"]
    m = load_stats(stats)
    assert m["partial"]["ranks"] == [1] and m["summary"]["bytes_written"] == 5
    write(stats, make_stats())                                      # a later, complete job
    os.utime(tmp_path / "s.json.partial.1", (time.time() - 100, time.time() - 100))
    assert "partial" not in load_stats(stats)
    assert load_stats(tmp_path / "s.json.partial.1")["partial"]["missing"] == [0]   # one partial file read alone


def test_stats_show_prints_the_banner(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    write(tmp_path / "s.json.partial.0", partial(0, nprocs=2, signal=11, reason="signal 11 (SIGSEGV) on rank 0"))
    assert main(["stats", "show", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "partial: the job aborted (signal 11 (SIGSEGV) on rank 0)" in out
    assert "rank 0: signal 11 (SIGSEGV) on rank 0" in out
    assert "no statistics from rank 1" in out
    assert main(["stats", "show", "--json", str(tmp_path / "s.json")]) == 0
    assert json.loads(capsys.readouterr().out)["partial"]["missing"] == [1]


def test_run_and_the_tuner_say_partial_statistics(fake_lib, fake_program, capsys, tmp_path):
    aborted = {"exit": 7, "partials": {"1": partial(1, nprocs=2, reason="MPI_Abort(MPI_COMM_WORLD, 7) called on rank 1")}}
    fake_program.plan([aborted])
    assert main(["run", "--stats", str(tmp_path / "s.json"), "--", str(fake_program.path)]) == 7
    err = capsys.readouterr().err
    assert "partial statistics only: the job aborted (MPI_Abort(MPI_COMM_WORLD, 7) called on rank 1)" in err
    assert "no statistics" not in err
    out = run_once([str(fake_program.path)], tmp_path / "c.json", tmp_path / "run", "io-bandwidth")
    assert out.value is None
    assert out.error == ("exit status 7 (partial statistics only: the job aborted (MPI_Abort(MPI_COMM_WORLD, 7) "
                         f"called on rank 1) ({tmp_path / 'run' / 'stats.json'}.partial.*))")
    fake_program.plan([{**aborted, "exit": 0}])                     # exit 0 without MPI_Finalize: still failed
    out = run_once([str(fake_program.path)], tmp_path / "c.json", tmp_path / "run2", "io-bandwidth")
    assert out.value is None and out.error.startswith("partial statistics only")
