"""bench/staging.py patterns (issue 32's staging benchmark): the report's medians, best hint setting and throughput
ratios on synthetic runs, the per piece and per call arithmetic of the counted jobs, perf's output, and every row's
kernel arguments run for real at their smallest size."""
import argparse
import shutil

import pytest

from .scripts import ROOT, load_script

KERNEL = ROOT / "build" / "kernels" / "iotame-kernel"
LIBRARY = ROOT / "build" / "runtime" / "libiotame.so"


@pytest.fixture(scope="module")
def bench():
    return load_script("bench/staging.py", "bench_staging")


def run_record(config, mbs, hints=None, row="noncontig-4B-count", device="none", stage=None, close=None):
    """A run of 8 MB over 2 ranks of 1,000,000 pieces each, as pattern_record writes it."""
    return {"experiment": "patterns", "np": 2, "device": device, "row": row, "config": config, "hints": hints,
            "pieces": 2_000_000, "calls": 4, "how": "2 ranks x 2 calls x 500000 chunks of 4 B", "bytes": 8e6,
            "write_seconds": 8.0 / mbs, "mbs": mbs, "sync_close_seconds": close, "stage": stage}


def table_line(text, row, configuration):
    """The cells of row's line for configuration in the throughput table (nine columns)."""
    lines = [line for line in text.splitlines()
             if line.startswith(f"| {row} | {configuration}") and line.count("|") == 10]
    assert len(lines) == 1, (configuration, text)
    return [cell.strip() for cell in lines[0].strip("|").split("|")]


def synthetic_runs():
    cb = {"romio_cb_write": "enable", "romio_ds_write": "disable"}
    ds = {"romio_cb_write": "disable", "romio_ds_write": "enable"}
    return ([run_record("romio", v) for v in (10, 12, 30)]                     # median 12
            + [run_record("romio_hints", v, cb) for v in (40, 44, 20)]         # median 40: the best setting
            + [run_record("romio_hints", v, ds) for v in (38, 39, 90)]         # median 39, though its maximum is 90
            + [run_record("write_through", v, close=c) for v, c in ((16, 0.1), (20, 0.3), (18, 0.2))]
            + [run_record("staged", v, close=0.5, stage={"bypassed": 0, "flusher.writes_out": w, "new.counter": 7})
               for v, w in ((30, 1), (36, 3), (24, 2))])                      # median 30


def test_the_report_takes_medians_the_best_hint_setting_and_throughput_ratios(bench):
    text = "\n".join(bench.pattern_report(synthetic_runs()))
    best = table_line(text, "noncontig-4B-count", "romio_best")
    assert best[1] == "romio_best (cb=enable, ds=disable)" and best[2] == "40.0"
    staged = table_line(text, "noncontig-4B-count", "staged")
    # MB/s, write s (8 MB at 30 MB/s), sync+close, µs per piece (one rank's 1,000,000 pieces), ratios to
    # write_through (18), romio (12) and romio_best (40).
    assert staged[2:] == ["30.0", "0.2667", "0.5000", "0.267", "**1.67**", "**2.50**", "**0.75**"]
    romio = table_line(text, "noncontig-4B-count", "romio |")
    assert romio[4] == "—" and romio[7] == "—" and romio[6] == "0.67"      # no statistics without the runtime
    through = table_line(text, "noncontig-4B-count", "write_through")
    assert through[4] == "0.2000" and through[6] == "—" and through[7] == "1.50"


def test_the_staging_statistics_are_printed_whatever_their_names(bench):
    text = "\n".join(bench.pattern_report(synthetic_runs()))
    line = [ln for ln in text.splitlines() if ln.startswith("| noncontig-4B-count | staged | ")
            and "writes_out" in ln]
    assert len(line) == 1
    assert "flusher.writes_out 2" in line[0] and "new.counter 7" in line[0] and "bypassed" not in line[0]


def test_numeric_fields_flatten_the_stage_section(bench):
    stage = {"calls": 3, "blocked_seconds": 0.5, "flag": True, "flusher": {"writes_out": 2, "failed": []},
             "bypass": {"too_large": 4}}
    assert bench.numeric_fields(stage) == {"calls": 3, "blocked_seconds": 0.5, "flusher.writes_out": 2,
                                           "bypass.too_large": 4}


def test_perf_output_is_read_and_an_uncounted_event_is_none(bench):
    text = ("# started on Fri Nov 27 12:00:00 2026\n\n"
            "<not supported>,,instructions:u,0,100.00,,\n"
            "331.25,msec,task-clock,331250000,100.00,1.5,CPUs utilized\n")
    assert bench.perf_counts(text) == {"instructions": None, "task_clock_ms": 331.25}
    assert bench.perf_counts("123456789,,instructions:u,5,100.00,,\n")["instructions"] == 123456789


def counted(config, size, instructions, ms, pieces, calls):
    return {"experiment": "patterns_count", "device": "none", "row": "noncontig-small-calls", "config": config,
            "size": size, "instructions": instructions, "task_clock_ms": ms, "pieces": pieces, "calls": calls,
            "how": "2 ranks x N calls x 4 chunks of 64 B"}


def test_per_piece_and_per_call_costs_leave_out_what_every_job_costs(bench):
    """romio: 1e6 instructions fixed + 100 a piece; staged: 5e6 fixed + 150 a piece (600 a call of 4 pieces)."""
    runs = [counted("romio", "full", 1e6 + 100 * 8000, 100.0, 8000, 2000),
            counted("romio", "base", 1e6 + 100 * 8, 90.0, 8, 2),
            counted("staged", "full", 5e6 + 150 * 8000, 310.0, 8000, 2000),
            counted("staged", "base", 5e6 + 150 * 8, 290.0, 8, 2)]
    full, base, ref, ref_base = runs[2], runs[3], runs[0], runs[1]
    assert bench.pattern_marginal(full, base, ref, ref_base, "instructions", "pieces") == pytest.approx(50)
    assert bench.pattern_marginal(full, base, ref, ref_base, "instructions", "calls") == pytest.approx(200)
    line = [c.strip() for c in [ln for ln in bench.instruction_report(runs) if "| staged |" in ln][0].split("|")]
    # instr/piece 50, CPU (20 ms - 10 ms) / 7992 pieces = 1.25 µs, instr/call 200, CPU 10 ms / 1998 calls
    assert line[7:11] == ["50", "1.25", "200", "5.01"]


def test_without_instruction_counts_the_costs_are_dashes(bench):
    runs = [counted("romio", "full", None, 100.0, 8000, 2000), counted("romio", "base", None, 90.0, 8, 2),
            counted("staged", "full", None, 310.0, 8000, 2000), counted("staged", "base", None, 290.0, 8, 2)]
    line = [c.strip() for c in [ln for ln in bench.instruction_report(runs) if "| staged |" in ln][0].split("|")]
    assert line[5] == "— / —" and line[7] == "—" and line[8] == "1.25"


def options(**sizes):
    a = argparse.Namespace(nc_veclen=1048576, nc64_veclen=65536, nc_loops=2, tile_rows=262144, small_loops=4096,
                           ior_block="128m", ior_block_4k="32m", flash_maxblocks=100, flash_cells=16, profile=None)
    for k, v in sizes.items():
        setattr(a, k, v)
    return a


def test_the_rows_follow_the_issue_and_count_their_pieces(bench):
    rows = {r.name: r for r in bench.pattern_rows(options(), 2)}
    assert list(rows) == ["noncontig-4B-count", "noncontig-64B-count", "tileio-subarray-64B",
                          "noncontig-small-calls", "ior-coll-1m", "ior-coll-4k", "flashio-checkpoint"]
    four = list(map(str, rows["noncontig-4B-count"].args))
    assert four[four.index("--count") + 1] == "65536" and "--mem-noncontig" in four
    assert rows["noncontig-4B-count"].pieces == 2 * 2 * 1048576 and rows["noncontig-4B-count"].calls == 4
    assert rows["noncontig-64B-count"].pieces * 64 == rows["noncontig-4B-count"].pieces * 4     # the same bytes
    assert rows["ior-coll-1m"].pieces == 2 * 128 and rows["ior-coll-4k"].calls == 2 * 8192
    assert rows["flashio-checkpoint"].pieces is None
    with pytest.raises(SystemExit, match="--nc64-veclen 1000: must be a multiple of 16"):
        bench.pattern_rows(options(nc64_veclen=1000), 2)


def test_the_configurations(bench, tmp_path):
    none = {n: c for n, _, c in bench.pattern_configs(options(), "none", tmp_path)}
    assert none["romio"] is None
    assert none["write_through"] == {"version": 1, "defaults": {"staging": {"enabled": False}}}
    assert none["staged"]["defaults"] == {"staging": {"enabled": True}} and "staged_profile" not in none
    disk = bench.pattern_configs(options(profile=str(tmp_path / "p.json")), "disk", tmp_path)
    hinted = [h for n, h, _ in disk if n == "romio_hints"]
    assert len(hinted) == 4 and {"romio_cb_write": "disable", "romio_ds_write": "disable"} in hinted
    by = {n: c for n, _, c in disk}
    assert by["romio"]["defaults"]["emulate"]["device"] == "disk"
    assert by["staged_profile"]["defaults"]["collective"] == {"profile": str(tmp_path / "p.json")}
    assert by["staged_profile"]["defaults"]["staging"] == {"enabled": True}


@pytest.mark.skipif(not KERNEL.exists() or not LIBRARY.exists() or shutil.which("mpiexec") is None,
                    reason="needs the build (make setup) and mpiexec")
def test_every_row_runs_and_verifies_at_its_smallest_size(bench, tmp_path):
    """One rank, the sizes of the counted base jobs: the kernels accept the rows' arguments, verify their data, and
    write the bytes the rows' piece counts say; the runtime accepts write_through's configuration."""
    shutil.copy2(LIBRARY, tmp_path / "libiotame.so")
    a = argparse.Namespace(**{**vars(options()), **bench.PATTERN_BASE}, mpi="mpich")
    configs = {n: c for n, _, c in bench.pattern_configs(a, "none", tmp_path)}
    for row in bench.pattern_rows(a, 1):
        name = "write_through" if row.name == "noncontig-4B-count" else "romio"
        res, st = bench.run(a, 1, row.args, configs[name], tmp_path)
        r = bench.pattern_record(row, "none", 1, name, None, res, st)
        assert r["bytes"] > 0 and r["write_seconds"] > 0
        if row.piece_bytes:
            assert r["bytes"] == row.pieces * row.piece_bytes, row.name
    assert r["sync_close_seconds"] is None and st is None


def test_the_whole_report_names_the_configurations_left_out(bench):
    runs = synthetic_runs() + [run_record("romio", 50, row="ior-coll-4k")]
    data = {"date": "2026-11-27 13:00", "mpi": "mpich", "repeat": 3, "runs": runs,
            "dropped": [{"device": "none", "row": "ior-coll-4k", "config": "romio_hints",
                         "why": "job killed after 12 s",
                         "hints": {"romio_cb_write": "enable", "romio_ds_write": "enable"}},
                        {"device": "none", "row": "ior-coll-4k", "config": "staged", "hints": None,
                         "why": "job killed after 120 s"}]}
    text = bench.report(data)
    assert "| noncontig-4B-count | staged | 30.0 |" in text
    assert "none ior-coll-4k (cb=enable, ds=enable): job killed after 12 s" in text
    assert "none ior-coll-4k staged: job killed after 120 s" in text
    assert "| ior-coll-4k | staged | job killed after 120 s | — |" in text     # its line in the table


def test_a_report_of_other_experiments_has_no_patterns_table(bench):
    """A phases run's report (its records carry no pattern row) prints the phases table and nothing of patterns."""
    run = {"experiment": "phases", "np": 2, "device": "disk", "record": 1024, "compute_per_phase": 0.0,
           "compute_seconds": 0.0, "io_seconds": 0.3, "close_seconds": 0.01, "wall_seconds": 0.32, "bytes": 1 << 20}
    data = {"date": "2026-11-27 14:00", "mpi": "mpich", "repeat": 1,
            "runs": [dict(run, staged=False), dict(run, staged=True, io_seconds=0.003, close_seconds=0.1)]}
    text = bench.report(data)
    assert "| disk | 2 | 1 KiB |" in text and "| row | configuration |" not in text
