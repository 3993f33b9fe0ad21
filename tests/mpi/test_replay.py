"""The replay kernel: hand-written replay specs replayed byte for byte (shared files through collective file views,
files per process through POSIX, preloaded inputs read back, --scale), every kind of bad input, the converter path
with a fake converter, and the runtime's statistics of a replay (real mpiexec, 1 and 2 ranks)."""
import json
import math
import time

import pytest

from conftest import KERNEL, file_stats, write_json
from kernel_helpers import check_phases, pattern, usage_error

NONCONTIG = ["--elmtcount", "16", "--veclen", "32", "--loops", "2", "--collective"]


def spec(nprocs, *files, source=None):
    out = {"replay": 1, "nprocs": nprocs, "files": list(files)}
    if source is not None:
        out["source"] = source
    return out


def noncontig_file(n, name="shared.dat", chunk=64, veclen=32, loops=2):
    """The noncontig kernel's layout (--collective) as a replay file: rank r's chunks interleaved with stride n
    chunks, one region a call, the next call on the next region."""
    region = n * veclen * chunk
    calls = [[{"op": "W", "at": [[r * chunk, chunk, veclen, n * chunk]], "repeat": loops, "advance": region},
              {"op": "s"}] for r in range(n)]
    return {"name": name, "api": "MPIIO", "procs": list(range(n)), "calls": calls}


def scaled(calls, scale):
    """A proc's calls after --scale: the first ceil(scale*n) collective and independent calls, syncs kept."""
    def count(collective):
        return sum(c.get("repeat", 1) for c in calls if c["op"] != "s" and (c["op"] in "WR") == collective)
    left = {kind: math.ceil(scale * count(kind)) for kind in (True, False)}
    out = []
    for c in calls:
        c = dict(c)
        if c["op"] != "s":
            kind = c["op"] in "WR"
            c["repeat"] = min(c.get("repeat", 1), left[kind])
            left[kind] -= c["repeat"]
        out.append(c)
    return out


def pieces(call):
    """(offset, length) of every piece of every repetition of a call."""
    for i in range(call.get("repeat", 1)):
        for off, length, count, stride in call.get("at", []):
            for j in range(count):
                yield off + j * stride + i * call.get("advance", 0), length


def expected_content(f, scale=1.0):
    """What a file holds after the replay: the pattern (writer 0) over every written and preloaded byte, zeros in
    the holes, up to the end of the last of them."""
    ranges = [tuple(r) for r in f.get("preload", [])]
    for calls in f["calls"]:
        ranges += [p for c in scaled(calls, scale) if c["op"] in "wW" for p in pieces(c)]
    size = max((o + n for o, n in ranges), default=0)
    data = bytearray(size)
    for o, n in ranges:
        data[o:o + n] = pattern(o, n)
    return bytes(data)


def totals(s, scale=1.0):
    """(calls, read bytes, written bytes) over every proc and file of a spec."""
    calls = rd = wr = 0
    for f in s["files"]:
        for proc_calls in f["calls"]:
            for c in scaled(proc_calls, scale):
                rep = c.get("repeat", 1)
                calls += rep
                nbytes = rep * sum(length * count for _, length, count, _ in c.get("at", []))
                if c["op"] in "wW":
                    wr += nbytes
                elif c["op"] in "rR":
                    rd += nbytes
    return calls, rd, wr


def replay(job, n, s, *args, check=True, **kw):
    path = write_json(job.tmp / "spec.json", s)
    return job.kernel(n, "replay", "--from", path.name, *args, check=check, **kw)


def check_replay(job, res, s, scale=1.0, dirname="."):
    """The result's params and phase are the spec's, every file holds what the spec says."""
    calls, rd, wr = totals(s, scale)
    assert res["verified"] is True and res["errors"] == []
    prm = res["params"]
    assert (prm["files"], prm["calls"], prm["read_bytes"], prm["write_bytes"]) == (len(s["files"]), calls, rd, wr)
    assert prm["scale"] == scale and prm["source"] == s.get("source")
    check_phases(res, ["replay"], rd + wr)
    for f in s["files"]:
        assert (job.tmp / dirname / f["name"]).read_bytes() == expected_content(f, scale), f["name"]


# ---- replays checked byte for byte ----

def test_noncontig_layout_matches_the_noncontig_kernel(job):
    """Collective strided calls repeated region after region (one file view for the entry, tiles of `advance`)
    leave the very file the noncontig kernel writes for the same layout."""
    s = spec(2, noncontig_file(2), source={"kind": "hand"})
    res, _ = replay(job, 2, s, "--keep")
    check_replay(job, res, s)
    job.kernel(2, "noncontig", *NONCONTIG, "--keep")
    assert (job.tmp / "iotame-noncontig.dat").read_bytes() == (job.tmp / "shared.dat").read_bytes()


def views_file():
    """Repetitions closer than their span (a view per call), entries that reuse the view in place, a proc with no
    data in a collective call, independent noncontiguous calls between collective ones (the default view back),
    and collective and independent reads of what was written and preloaded."""
    p0 = [
        {"op": "W", "at": [[0, 16, 4, 32], [200, 8, 1, 0]], "repeat": 3, "advance": 8},  # overlapping: per call
        {"op": "W", "at": [[4096, 16, 2, 64]], "repeat": 3},  # the same bytes thrice: one view
        {"op": "W", "at": [[1024, 32, 4, 64]], "repeat": 2, "advance": 256},  # a view, tiles of 256 bytes
        {"op": "W", "at": [[1536, 32, 4, 64]]},  # same runs on the view's third tile: the view in place
        {"op": "w", "at": [[3000, 10, 3, 20], [3100, 5, 1, 0]], "gap": 0.01},
        {"op": "R", "at": [[1024, 32, 8, 32]]},  # one contiguous run: default view
        {"op": "s"},
        {"op": "r", "at": [[8192, 100, 2, 300]]},
    ]
    p1 = [
        {"op": "W", "at": [], "repeat": 3},
        {"op": "W", "at": [[4112, 16, 2, 64]], "repeat": 3},
        {"op": "W", "at": [[1056, 32, 4, 64]], "repeat": 2, "advance": 256},
        {"op": "W", "at": [[1568, 32, 4, 64]]},
        {"op": "R", "at": [[8192, 64, 3, 128]]},
        {"op": "s"},
    ]
    return {"name": "views.dat", "api": "MPIIO", "procs": [0, 1], "preload": [[8192, 1024]], "calls": [p0, p1]}


def test_views_per_call_reuse_and_procs_without_data(job):
    s = spec(2, views_file())
    res, _ = replay(job, 2, s, "--keep", "--compute")
    check_replay(job, res, s)
    assert res["params"]["compute"] is True


def test_file_per_process_posix_and_mpiio_self(job):
    """A POSIX file per process (preloaded input read in pieces, writes, fsync) in a subdirectory of --dir, and an
    MPIIO file of one proc (MPI_COMM_SELF) whose collective calls read its preloaded input."""
    files = [{"name": f"out/rank{r}.dat", "api": "POSIX", "procs": [r], "preload": [[0, 4096]],
              "calls": [[{"op": "r", "at": [[0, 512, 4, 1024]]},
                         {"op": "w", "at": [[4096, 1000, 1, 0]], "repeat": 4, "advance": 1000},
                         {"op": "s"}]]} for r in range(2)]
    files.append({"name": "in.dat", "api": "MPIIO", "procs": [1], "preload": [[0, 65536]],
                  "calls": [[{"op": "R", "at": [[0, 4096, 4, 16384]], "repeat": 2, "advance": 4096},
                             {"op": "w", "at": [[65536, 10, 1, 0]]}]]})
    s = spec(2, *files)
    res, _ = replay(job, 2, s, "--keep", "--dir", "d/e")
    check_replay(job, res, s, dirname="d/e")


def test_compute_sleeps_the_gaps(job):
    """--compute sleeps each call's gap before it: the job takes at least their sum."""
    f = {"name": "g.dat", "api": "POSIX", "procs": [0], "calls": [[{"op": "w", "at": [[0, 8, 1, 0]], "repeat": 3,
                                                                    "advance": 8, "gap": 0.4}, {"op": "s", "gap": 0.4}]]}
    s = spec(1, f)
    start = time.monotonic()
    res, _ = replay(job, 1, s, "--compute")
    assert time.monotonic() - start >= 4 * 0.4
    assert res["verified"] is True and res["params"]["calls"] == 4


def test_one_rank_and_files_removed(job):
    s = spec(1, noncontig_file(1))
    res, _ = replay(job, 1, s)
    assert res["verified"] is True and res["params"]["keep"] is False
    assert sorted(p.name for p in job.tmp.iterdir()) == ["spec.json"]


@pytest.mark.parametrize("scale", [0.5, 0.2])
def test_scale_keeps_the_first_calls(job, scale):
    """--scale: the first ceil(F*n) collective and ceil(F*m) independent calls per proc and file, repetitions
    counted, syncs kept."""
    f = noncontig_file(2, loops=5)
    f["calls"][0].insert(1, {"op": "w", "at": [[100000, 100, 1, 0]], "repeat": 3, "advance": 100})
    f["calls"][0].append({"op": "w", "at": [[200000, 7, 1, 0]], "repeat": 2})
    s = spec(2, f)
    res, _ = replay(job, 2, s, "--keep", "--scale", str(scale))
    check_replay(job, res, s, scale)


# ---- the runtime's view of a replay ----

def test_runtime_statistics_count_the_spec(job):
    """Under the runtime, the statistics of the shared file count the spec's collective calls and bytes."""
    s = spec(2, noncontig_file(2, loops=3))
    stats = job.tmp / "stats.json"
    res, _ = replay(job, 2, s, preload=True, stats=stats)
    assert res["verified"] is True
    f = file_stats(stats, "shared.dat")
    assert f["ops"]["write_at_all"]["count"] == 2 * 3
    assert f["ops"]["write_at_all"]["bytes"] == f["bytes_written"] == 2 * 3 * 32 * 64
    assert f["ops"]["sync"]["count"] == 2
    assert f["bytes_read"] == 0
    assert f["ops"]["set_view"]["count"] == 2  # one view per proc for the repeated entry


def test_reopen_closes_and_opens_again(job):
    """A checkpoint written, the file reopened, read back: under the runtime, two opens and closes per process, the
    view set again after the reopen, and the POSIX file per process reopened the same way."""
    shared = noncontig_file(2, loops=2)
    for r, calls in enumerate(shared["calls"]):
        calls += [{"op": "o"}, {"op": "R", "at": [[r * 64, 64, 32, 128]], "repeat": 2, "advance": 2 * 32 * 64}]
    own = [{"name": f"own{r}.dat", "api": "POSIX", "procs": [r],
            "calls": [[{"op": "w", "at": [[0, 100, 1, 0]]}, {"op": "o"}, {"op": "r", "at": [[0, 100, 1, 0]]}]]}
           for r in range(2)]
    s = spec(2, shared, *own)
    stats = job.tmp / "stats.json"
    res, _ = replay(job, 2, s, "--keep", preload=True, stats=stats,
                    config=write_json(job.tmp / "c.json", {"version": 1, "defaults": {"posix": {"all_files": True}}}))
    check_replay(job, res, s)
    f = file_stats(stats, "shared.dat")
    assert f["ops"]["open"]["count"] == f["ops"]["close"]["count"] == 2 * 2
    assert f["ops"]["read_at_all"]["count"] == 2 * 2 and f["bytes_read"] == f["bytes_written"]
    assert f["ops"]["set_view"]["count"] == 2 * 2     # the reopened file starts from the default view
    px = file_stats(stats, "own0.dat")["posix"]
    assert px["opens"] == 3 and px["reads"] == px["writes"] == 1      # and the read-back check's open (a mapping)


def test_calls_of_no_bytes_are_made_and_counted(job):
    """Reads of 0 bytes at the end of a file (Python's .pyc files in real logs) and a write of 0 bytes are calls:
    made through POSIX and MPI-IO, counted by the runtime, the data around them verified."""
    pyc = {"name": "mod.pyc", "api": "POSIX", "procs": [0], "preload": [[0, 100]],
           "calls": [[{"op": "r", "at": [[0, 100, 1, 0]]}, {"op": "r", "at": [[100, 0, 1, 0]], "repeat": 2},
                      {"op": "w", "at": [[100, 0, 1, 0]]}]]}
    end = {"name": "end.dat", "api": "MPIIO", "procs": [0, 1],
           "calls": [[{"op": "w", "at": [[r * 64, 64, 1, 0]]}, {"op": "r", "at": [[128, 0, 1, 0]]}] for r in range(2)]}
    s = spec(2, pyc, end)
    stats = job.tmp / "stats.json"
    res, _ = replay(job, 2, s, "--keep", preload=True, stats=stats,
                    config=write_json(job.tmp / "c.json", {"version": 1, "defaults": {"posix": {"all_files": True}}}))
    check_replay(job, res, s)
    px = file_stats(stats, "mod.pyc")["posix"]
    assert (px["reads"], px["writes"], px["bytes_read"], px["bytes_written"]) == (3, 1, 100, 0)
    f = file_stats(stats, "end.dat")
    assert f["ops"]["read_at"]["count"] == 2 and f["bytes_read"] == 0 and f["bytes_written"] == 128


def test_runtime_statistics_count_the_views(job):
    """Views are set only where needed: per call for the overlapping repetitions (3), once for the entry that
    rewrites the same bytes, once for the repeated entry, none for the entry on its tiles, the default view back
    before independent calls (twice), once for the read where one proc is noncontiguous: 8 per proc. Bytes are the
    spec's, split by call."""
    s = spec(2, views_file())
    stats = job.tmp / "stats.json"
    res, _ = replay(job, 2, s, preload=True, stats=stats)
    assert res["verified"] is True
    ops = file_stats(stats, "views.dat")["ops"]
    assert ops["set_view"]["count"] == 2 * 8
    assert (ops["write_at_all"]["count"], ops["write_at_all"]["bytes"]) == (2 * 9, 3 * 72 + 2 * 3 * 32 +
                                                                             2 * 2 * 128 + 2 * 128)
    assert (ops["write_at"]["count"], ops["write_at"]["bytes"]) == (4, 35)  # 4 pieces of one independent call
    assert (ops["read_at_all"]["count"], ops["read_at_all"]["bytes"]) == (2, 256 + 192)
    assert (ops["read_at"]["count"], ops["read_at"]["bytes"]) == (2, 200)


def independent_noncontig(n, repeats, chunk=64, veclen=32):
    """The noncontig kernel's independent layout: each proc writes its strided chunks, syncs, reopens and reads
    them back, `repeats[r]` calls a region apart."""
    region = n * veclen * chunk
    calls = [[{"op": op, "at": [[r * chunk, chunk, veclen, n * chunk]], "repeat": repeats[r], "advance": region}
              for op in ("w", "s", "o", "r")] for r in range(n)]
    for c in calls:
        del c[1]["at"], c[1]["advance"], c[2]["at"], c[2]["advance"], c[1]["repeat"], c[2]["repeat"]
    return {"name": "indep.dat", "api": "MPIIO", "procs": list(range(n)), "calls": calls}


@pytest.mark.parametrize("repeats, viewed", [((2, 2), True), ((2, 1), False)])
def test_independent_noncontiguous_calls_under_a_view_where_every_proc_makes_them(job, repeats, viewed):
    """Where every proc makes the same entries, a noncontiguous independent call is one call under a view every
    proc sets at the entry (as the job did: the view set collectively, the calls independent); where the procs'
    entries differ, no proc can count on the others to set a view: one call per piece in the default view."""
    s = spec(2, independent_noncontig(2, repeats))
    stats = job.tmp / "stats.json"
    res, _ = replay(job, 2, s, "--keep", preload=True, stats=stats)
    check_replay(job, res, s)
    ops = file_stats(stats, "indep.dat")["ops"]
    calls = sum(repeats) if viewed else 32 * sum(repeats)
    assert ops["write_at"]["count"] == ops["read_at"]["count"] == calls
    assert ops.get("set_view", {}).get("count", 0) == (2 * 2 if viewed else 0)   # at the write and after reopen


# ---- the converter path ----

FAKE_CLI = """#!/bin/sh
# A stand-in for `iotame replay spec SRC --out OUT`: copies a fixed spec, or fails like the converter.
[ "$1 $2 $4" = "replay spec --out" ] || {{ echo "bad arguments: $*" >&2; exit 9; }}
case "$3" in *bad*) echo "$3: not a Darshan log (bad magic)" >&2; exit 2;; esac
cp {spec} "$5"
"""


def fake_cli(job, spec_path):
    cli = job.tmp / "fake-iotame"
    cli.write_text(FAKE_CLI.format(spec=spec_path))
    cli.chmod(0o755)
    return cli


@pytest.mark.parametrize("source", [b"\x00\x01darshan-binary", b'{"version": 1, "files": []}'],
                         ids=["darshan", "statistics"])
def test_converter_makes_the_spec(job, source):
    s = spec(2, noncontig_file(2), source={"kind": "darshan", "path": "job.darshan"})
    spec_path = write_json(job.tmp / "converted.json", s)
    cli = fake_cli(job, spec_path)
    (job.tmp / "job.darshan").write_bytes(source)
    tmpdir = job.tmp / "tmpdir"
    tmpdir.mkdir()
    res, _ = job.kernel(2, "replay", "--from", "job.darshan", "--keep",
                        extra_env={"IOTAME_CLI": str(cli), "TMPDIR": str(tmpdir)})
    check_replay(job, res, s)
    assert res["params"]["from"] == "job.darshan"
    assert list(tmpdir.iterdir()) == []  # the converted spec removed


def test_converted_spec_errors_name_the_source(job):
    s = spec(2, noncontig_file(2)) | {"nprocs": 3}
    cli = fake_cli(job, write_json(job.tmp / "converted.json", s))
    (job.tmp / "job.darshan").write_bytes(b"\x00darshan")
    p = job.run(2, [KERNEL, "replay", "--from", "job.darshan"], extra_env={"IOTAME_CLI": str(cli)}, check=False)
    assert p.returncode == 2 and p.stdout == ""
    assert "replay spec converted from job.darshan: nprocs: the spec is for a job of 3 processes, this job has 2" \
        in p.stderr


def test_converter_failure_is_reported(job):
    cli = fake_cli(job, job.tmp / "none.json")
    (job.tmp / "bad.darshan").write_bytes(b"\x00garbage")
    line, _ = usage_error(job, 2, "replay", ["--from", "bad.darshan"])
    # usage_error runs without our variables; run again with the fake converter
    p = job.run(2, [KERNEL, "replay", "--from", "bad.darshan"], extra_env={"IOTAME_CLI": str(cli)}, check=False)
    assert p.returncode == 2 and p.stdout == ""
    assert "bad.darshan is not a replay spec" in p.stderr
    assert "bad.darshan: not a Darshan log (bad magic)" in p.stderr
    assert "bad.darshan is not a replay spec" in line  # the converter found by default failed too


# ---- bad input: exit 2, one message naming the spec, the key and what was expected ----

def call_spec(call, api="MPIIO"):
    return spec(1, {"name": "a.dat", "api": api, "procs": [0], "calls": [[{"op": "s"}, call]]})


BAD = [
    ("json", "{\"replay\": 1, \"nprocs\": 1,", "not valid JSON"),
    ("version", spec(1) | {"replay": 2}, "replay: expected an integer from 1 to 1, got 2"),
    ("nprocs-type", spec(1) | {"nprocs": "1"}, "nprocs: expected an integer >= 1, got a string"),
    ("nprocs-mismatch", spec(4), "nprocs: the spec is for a job of 4 processes, this job has 1"),
    ("files-type", spec(1) | {"files": {}}, "files: expected an array of files, got an object"),
    ("unknown-key", spec(1) | {"filez": []}, "unknown key \"filez\""),
    ("name-dotdot", spec(1, {"name": "a/../../b", "api": "POSIX", "procs": [0], "calls": [[]]}),
     "files[0].name: \"a/../../b\": expected a relative path without \"..\""),
    ("name-absolute", spec(1, {"name": "/etc/x", "api": "POSIX", "procs": [0], "calls": [[]]}),
     "files[0].name: \"/etc/x\""),
    ("name-twice", spec(1, *[{"name": "a", "api": "POSIX", "procs": [0], "calls": [[]]}] * 2),
     "files[1].name: \"a\" is also files[0]"),
    ("api", spec(1, {"name": "a", "api": "HDF5", "procs": [0], "calls": [[]]}),
     "files[0].api: expected \"MPIIO\" or \"POSIX\""),
    ("procs-range", spec(1, {"name": "a", "api": "POSIX", "procs": [1], "calls": [[]]}),
     "files[0].procs[0]: expected an integer from 0 to 0, got 1"),
    ("calls-count", spec(1, {"name": "a", "api": "POSIX", "procs": [0], "calls": [[], []]}),
     "files[0].calls: expected an array of 1 call lists"),
    ("preload", spec(1, {"name": "a", "api": "POSIX", "procs": [0], "preload": [[0, -1]], "calls": [[]]}),
     "files[0].preload[0][1]: expected an integer from 0"),
    ("op", call_spec({"op": "x", "at": []}), "files[0].calls[0][1].op: expected one of"),
    ("collective-posix", call_spec({"op": "W", "at": [[0, 1, 1, 0]]}, api="POSIX"),
     "files[0].calls[0][1].op: \"W\" is collective: it needs api \"MPIIO\""),
    ("at-type", call_spec({"op": "w", "at": {"0": 1}}), "files[0].calls[0][1].at: expected an array of runs"),
    ("run-size", call_spec({"op": "w", "at": [[0, 1, 1]]}), "files[0].calls[0][1].at[0]: expected a run"),
    ("run-value", call_spec({"op": "w", "at": [[0, -1, 1, 0]]}),
     "files[0].calls[0][1].at[0][1] (length): expected an integer from 0"),
    ("run-empty-not-alone", call_spec({"op": "w", "at": [[0, 1, 1, 0], [10, 0, 1, 0]]}),
     "files[0].calls[0][1].at[1]: a run of length 0 is a call of no bytes: expected it alone in \"at\""),
    ("run-empty-count", call_spec({"op": "r", "at": [[0, 0, 3, 0]]}),
     "files[0].calls[0][1].at[0]: a run of length 0 (a call of no bytes) has count 1, got 3"),
    ("run-stride", call_spec({"op": "w", "at": [[0, 10, 2, 5]]}),
     "files[0].calls[0][1].at[0]: stride 5 is less than length 10"),
    ("runs-overlap", call_spec({"op": "w", "at": [[0, 10, 2, 20], [25, 1, 1, 0]]}),
     "files[0].calls[0][1].at[1]: starts at 25, before the end of the previous run (30)"),
    ("runs-unsorted", call_spec({"op": "w", "at": [[100, 10, 1, 0], [0, 10, 1, 0]]}),
     "files[0].calls[0][1].at[1]: starts at 0, before the end of the previous run (110)"),
    ("repeat", call_spec({"op": "w", "at": [[0, 1, 1, 0]], "repeat": 0}),
     "files[0].calls[0][1].repeat: expected an integer from 1"),
    ("gap", call_spec({"op": "w", "at": [[0, 1, 1, 0]], "gap": "1s"}),
     "files[0].calls[0][1].gap: expected seconds"),
    ("sync-at", call_spec({"op": "s", "at": [[0, 1, 1, 0]]}), "files[0].calls[0][1].at: a sync accesses no data"),
]


@pytest.mark.parametrize("name,content,message", BAD, ids=[b[0] for b in BAD])
def test_bad_spec(job, name, content, message):
    path = job.tmp / "spec.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    line, _ = usage_error(job, 1, "replay", ["--from", "spec.json"])
    assert line.startswith("iotame-kernel replay: replay spec spec.json: "), line
    assert message in line, line


MISALIGNED = [
    ([{"op": "W", "at": [], "repeat": 2}], [{"op": "W", "at": []}],
     "at collective entry 0: \"W\" repeat 2 (calls[0][0]) against \"W\" repeat 1 (calls[1][0])"),
    ([{"op": "w", "at": [[0, 1, 1, 0]]}, {"op": "s"}, {"op": "R", "at": []}], [{"op": "s"}, {"op": "W", "at": []}],
     "at collective entry 1: \"R\" repeat 1 (calls[0][2]) against \"W\" repeat 1 (calls[1][1])"),
    ([{"op": "s"}], [{"op": "s"}, {"op": "s"}], "at collective entry 1: none against \"s\" repeat 1 (calls[1][1])"),
]


@pytest.mark.parametrize("calls0,calls1,message", MISALIGNED, ids=["repeat", "op", "length"])
def test_misaligned_collective_sequences(job, calls0, calls1, message):
    s = spec(2, {"name": "ok.dat", "api": "POSIX", "procs": [0, 1], "calls": [[], []]},
             {"name": "x.dat", "api": "MPIIO", "procs": [0, 1], "calls": [calls0, calls1]})
    write_json(job.tmp / "spec.json", s)
    line, _ = usage_error(job, 2, "replay", ["--from", "spec.json"])
    assert "files[1]: file \"x.dat\": the collective calls (W, R, s) differ between proc 0 and proc 1" in line, line
    assert message in line, line


def test_listed_with_help(job):
    assert "replay" in job.run(1, [KERNEL, "--list"]).stdout.split()
    p = job.run(1, [KERNEL, "replay", "--help"])
    assert p.stdout.startswith("usage: iotame-kernel replay")
    for name in ["--from", "--dir", "--scale", "--compute", "--seed", "--keep"]:
        assert name in p.stdout


def test_bad_options(job):
    line, _ = usage_error(job, 1, "replay", [])
    assert "option --from" in line
    write_json(job.tmp / "spec.json", spec(1))
    for scale in ("0", "1.5"):
        line, _ = usage_error(job, 1, "replay", ["--from", "spec.json", "--scale", scale])
        assert "option --scale" in line
    line, _ = usage_error(job, 1, "replay", ["--from", "missing.json"])
    assert "cannot open missing.json" in line
