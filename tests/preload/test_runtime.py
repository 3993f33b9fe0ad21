"""End to end: real mpiexec jobs with libiotame.so preloaded, compared with the same jobs without it."""
import json

import pytest

from conftest import TEST_PROGRAMS, write_json

EVERY_CALL = TEST_PROGRAMS / "every_call"
PRINT_HINTS = TEST_PROGRAMS / "print_hints"

DATA_OPS = [
    "read_at", "read_at_all", "write_at", "write_at_all", "read", "read_all", "write", "write_all",
    "iread_at", "iread_at_all", "iwrite_at", "iwrite_at_all", "iread", "iread_all", "iwrite", "iwrite_all",
    "read_shared", "write_shared", "iread_shared", "iwrite_shared", "read_ordered", "write_ordered",
    "read_at_all_begin", "read_at_all_end", "write_at_all_begin", "write_at_all_end",
    "read_all_begin", "read_all_end", "write_all_begin", "write_all_end",
    "read_ordered_begin", "read_ordered_end", "write_ordered_begin", "write_ordered_end",
]


@pytest.mark.parametrize("n", [1, 2, 4])
def test_every_call_is_byte_identical_and_counted(job, n):
    plain, wrapped, stats = job.tmp / "plain.dat", job.tmp / "wrapped.dat", job.tmp / "stats.json"
    job.run(n, [EVERY_CALL, plain, 1024])
    out = job.run(n, [EVERY_CALL, wrapped, 1024], preload=True, stats=stats)
    assert json.loads(out.stdout)["errors"] == 0
    assert plain.read_bytes() == wrapped.read_bytes()

    s = json.loads(stats.read_text())
    size = wrapped.stat().st_size
    assert s["nprocs"] == n
    assert s["summary"]["bytes_written"] == size
    assert s["summary"]["bytes_read"] == size
    (f,) = [f for f in s["files"] if f["path"] == str(wrapped)]
    assert f["ranks"] == n and f["opens"] == n
    assert f["bytes_written"] == size
    missing = [op for op in DATA_OPS if op not in f["ops"]]
    assert not missing, f"operations not counted: {missing}"
    # Each rank writes each plain variant once; the large-count forms count under their plain names.
    assert f["ops"]["write_ordered"]["count"] == n
    assert f["ops"]["write_at_all"]["seconds"]["max"] >= f["ops"]["write_at_all"]["seconds"]["avg"] > 0
    assert f["ops"]["write_at"]["count"] == 2 * n  # write_at and write_at_c
    assert sum(f["histogram"]["write"].values()) == sum(
        v["count"] for k, v in f["ops"].items() if k.startswith(("write", "iwrite")) and not k.endswith("_end"))
    assert f["time"]["write"]["max"] >= f["time"]["write"]["min"] > 0
    assert f["ops"]["sync"]["count"] == 2 * n


def test_without_stats_variable_nothing_is_written(job):
    job.run(2, [EVERY_CALL, job.tmp / "a.dat", 256], preload=True)
    assert sorted(p.name for p in job.tmp.iterdir()) == ["a.dat"]


def test_disable_makes_every_wrapper_a_pass_through(job):
    stats = job.tmp / "stats.json"
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"mpiio_hints": {"cb_buffer_size": 8388608}}})
    job.run(2, [EVERY_CALL, job.tmp / "plain.dat", 256])
    job.run(2, [EVERY_CALL, job.tmp / "off.dat", 256], preload=True, config=config, stats=stats,
            extra_env={"IOTAME_DISABLE": "1"})
    assert not stats.exists()
    assert (job.tmp / "plain.dat").read_bytes() == (job.tmp / "off.dat").read_bytes()
    p = job.run(1, [PRINT_HINTS, "x.dat"], preload=True, config=config, extra_env={"IOTAME_DISABLE": "1"})
    assert json.loads(p.stdout)["x.dat"]["cb_buffer_size"] != "8388608"


def hints(job, n, args, config=None, stats=None):
    p = job.run(n, [PRINT_HINTS, *args], preload=True, config=config, stats=stats)
    return json.loads(p.stdout)


CONFIG = {
    "version": 1,
    "defaults": {"mpiio_hints": {"cb_buffer_size": 8388608, "romio_cb_write": "disable"}},
    "files": [
        {"match": "*.chk", "mpiio_hints": {"cb_nodes": 1, "cb_buffer_size": 2097152}},
        {"match": "*.chk", "mpiio_hints": {"cb_nodes": 2}},  # never reached: the first match wins
        {"match": "out/*.h5", "mpiio_hints": {"romio_ds_write": "disable"}, "override": True},
    ],
}


def test_configured_hints_reach_the_file_and_rules_pick_the_right_file(job):
    config = write_json(job.tmp / "c.json", CONFIG)
    (job.tmp / "out").mkdir()
    default = hints(job, 2, ["plain.dat"])["plain.dat"]
    got = hints(job, 2, ["plain.dat", "a.chk", "out/b.h5"], config=config, stats=job.tmp / "s.json")
    assert default["cb_buffer_size"] != "8388608"
    assert got["plain.dat"]["cb_buffer_size"] == "8388608"
    assert got["plain.dat"]["romio_cb_write"] == "disable"
    assert got["plain.dat"]["cb_nodes"] == default["cb_nodes"]
    assert got["a.chk"]["cb_nodes"] == "1" and got["a.chk"]["cb_buffer_size"] == "2097152"
    assert got["a.chk"]["romio_cb_write"] == "disable"  # defaults still apply under a rule
    assert got["out/b.h5"]["romio_ds_write"] == "disable"
    assert got["out/b.h5"]["cb_nodes"] == default["cb_nodes"]

    stats = {f["path"]: f for f in json.loads((job.tmp / "s.json").read_text())["files"]}
    assert stats["a.chk"]["rule"] == "*.chk"
    assert stats["a.chk"]["hints"] == {"cb_buffer_size": "2097152", "cb_nodes": "1", "romio_cb_write": "disable"}
    # what the library reports at the first open: the same values the job's own MPI_File_get_info read above
    for path, read_back in got.items():
        assert stats[path]["hints_taken"] == read_back, path
    assert stats["plain.dat"]["rule"] is None


def test_application_hints_win_unless_the_rule_overrides(job):
    config = write_json(job.tmp / "c.json", CONFIG)
    (job.tmp / "out").mkdir()
    got = hints(job, 2, ["-h", "cb_buffer_size=4194304", "-h", "romio_ds_write=enable", "plain.dat", "out/b.h5"],
                config=config)
    assert got["plain.dat"]["cb_buffer_size"] == "4194304"  # the application's own hint
    assert got["out/b.h5"]["romio_ds_write"] == "disable"  # override: true
    # override covers every hint configured for the file, the defaults' included
    assert got["out/b.h5"]["cb_buffer_size"] == "8388608"


def test_override_also_applies_to_set_view_hints(job):
    config = write_json(job.tmp / "c.json", {
        "version": 1,
        "files": [{"match": "*.keep", "mpiio_hints": {"cb_buffer_size": 8388608}, "override": True},
                  {"match": "*.free", "mpiio_hints": {"cb_buffer_size": 8388608}}]})
    got = hints(job, 2, ["-v", "cb_buffer_size=2097152", "a.keep", "b.free"], config=config)
    assert got["a.keep"]["cb_buffer_size"] == "8388608"
    assert got["b.free"]["cb_buffer_size"] == "2097152"


HEAP_PROBE = TEST_PROGRAMS / "heap_probe"


@pytest.mark.parametrize("memory,size,mmapped", [
    (None, 8 << 20, True),                            # the default, 0: the allocator left alone
    ({"malloc_threshold": 16 << 20}, 8 << 20, False),  # asked for: served from the heap
    ({"malloc_threshold": 0}, 8 << 20, True),          # 0: the allocator left alone
    ({"malloc_threshold": 1 << 20}, 4 << 20, True),    # above the threshold asked for
])
def test_malloc_threshold_decides_where_buffers_come_from(job, memory, size, mmapped):
    plain = json.loads(job.run(2, [HEAP_PROBE, size]).stdout)
    assert plain["mmapped"]  # glibc's own threshold is far lower: the probe can tell
    config = write_json(job.tmp / "c.json", {"version": 1, "defaults": {"memory": memory} if memory else {}})
    stats = job.tmp / "s.json"
    got = json.loads(job.run(2, [HEAP_PROBE, size], preload=True, config=config, stats=stats).stdout)
    assert got["mmapped"] is mmapped
    applied = (memory or {}).get("malloc_threshold", 0)
    assert json.loads(stats.read_text())["malloc_threshold"] == applied


BAD_CONFIGS = [
    ("missing", None, "cannot read: No such file or directory"),
    ("syntax", '{"version": 1,\n "defaults": {,}}', "line 2, column 15: invalid JSON"),
    ("unknown key", {"version": 1, "defualts": {}}, "defualts: unknown key (expected one of: defaults, files, meta, version)"),
    ("unknown hint", {"version": 1, "defaults": {"mpiio_hints": {"cb_node": 2}}},
     "defaults.mpiio_hints.cb_node: unknown key (expected one of: access_style, cb_buffer_size,"),
    ("wrong type", {"version": 1, "files": [{"match": "*", "mpiio_hints": {"cb_nodes": "four"}}]},
     'files[0].mpiio_hints.cb_nodes: expected an integer >= 1, got "four"'),
    ("bad enum", {"version": 1, "defaults": {"mpiio_hints": {"romio_cb_write": "on"}}},
     'defaults.mpiio_hints.romio_cb_write: expected one of enable, disable, automatic, got "on"'),
    ("no match", {"version": 1, "files": [{"override": True}]}, "files[0].match: missing required key"),
    ("process-wide", {"version": 1, "files": [{"match": "*", "memory": {"malloc_threshold": 0}}]},
     "files[0].memory: the section sets the whole process: allowed in defaults only"),
    ("version", {"version": 2}, "version: expected 1, got 2"),
]


@pytest.mark.parametrize("name,content,message", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_configuration_stops_the_job_before_any_io(job, name, content, message):
    config = job.tmp / "bad.json"
    if isinstance(content, str):
        config.write_text(content)
    elif content is not None:
        write_json(config, content)
    p = job.run(2, [EVERY_CALL, job.tmp / "data.dat", 256], preload=True, config=config, check=False)
    assert p.returncode == 3, p.stderr
    assert f"iotame: config {config}: {message}" in p.stderr
    assert p.stderr.count(message) == 1  # rank 0 alone reports
    assert not (job.tmp / "data.dat").exists()


def test_bad_configuration_with_passthrough_warns_and_runs(job):
    config = write_json(job.tmp / "bad.json", {"version": 1, "defaults": {"mpiio_hints": {"cb_nodes": 0}}})
    stats = job.tmp / "s.json"
    p = job.run(2, [EVERY_CALL, job.tmp / "data.dat", 256], preload=True, config=config, stats=stats,
                extra_env={"IOTAME_ON_ERROR": "passthrough"})
    assert "expected an integer >= 1, got 0" in p.stderr and "running without configuration" in p.stderr
    s = json.loads(stats.read_text())
    assert "defaults.mpiio_hints.cb_nodes" in s["config_error"]
    assert s["summary"]["bytes_written"] == (job.tmp / "data.dat").stat().st_size


def test_fortran_application_is_seen_through_the_c_wrappers(job):
    program = TEST_PROGRAMS / "fortran_write"
    if not program.exists():
        pytest.skip("no Fortran compiler: fortran_write was not built")
    stats = job.tmp / "s.json"
    job.run(2, [program, job.tmp / "f.dat"], preload=True, stats=stats)
    (f,) = json.loads(stats.read_text())["files"]
    assert f["ops"]["write_at_all"]["count"] == 2 and f["ops"]["write_at_all"]["bytes"] == 8192
    assert (job.tmp / "f.dat").stat().st_size == 8192


def test_threads_are_counted_exactly_under_thread_multiple(job):
    stats = job.tmp / "s.json"
    job.run(2, [TEST_PROGRAMS / "threaded_writes", job.tmp / "t.dat", 2000], preload=True, stats=stats)
    (f,) = json.loads(stats.read_text())["files"]
    writes = 2 * 2 * 2000  # ranks x threads x writes
    assert f["ops"]["write_at"]["count"] == writes and f["ops"]["write_at"]["bytes"] == writes * 512
    assert f["histogram"]["write"] == {"512": writes}
    assert (job.tmp / "t.dat").stat().st_size == writes * 512
