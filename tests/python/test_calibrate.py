"""`iotame calibrate`: the machine profile's validator, the pieces of the measurement, the command end to end on a
tiny setting (fio on the test's temporary directory), and --check's decision."""
import copy
import json
import os
import shutil
import subprocess

import pytest

from iotame.calibrate import (QUICK, ProfileError, ceph_layout, check_request, dirty_freerun_bytes, fs_identity,
                              identity_problems, judge, load_profile, lustre_layout, parse_stat_f, save_profile,
                              stream_counts, validate_profile, write_back_section)
from iotame.cli import main

from .profiles import MIB, good_profile, set_key


def test_a_good_profile_is_valid_and_unknown_keys_are_kept(tmp_path):
    p = good_profile()
    p["measurement"] = {"anything": 1}
    assert validate_profile(p) == []
    path = save_profile(p, tmp_path / "p.json")
    assert load_profile(path) == p


@pytest.mark.parametrize("keys, value, key, expected", [
    (("kind",), "iotame-config", "kind", '"iotame-machine-profile"'),
    (("version",), 3, "version", "the integer 1 or 2"),
    (("version",), True, "version", "the integer 1 or 2"),
    (("filesystem",), KeyError, "filesystem", "an object, missing"),
    (("filesystem", "device"), "254", "filesystem.device", '"major:minor"'),
    (("filesystem", "magic"), "ef53", "filesystem.magic", "hexadecimal"),
    (("filesystem", "targets"), 0, "filesystem.targets", "an integer >= 1"),
    (("nodes", "processes_per_node"), KeyError, "nodes.processes_per_node", "an integer >= 1, missing"),
    (("storage", "write", "sequential"), [], "storage.write.sequential", "a non-empty array"),
    (("storage", "read", "scattered", 1), [MIB, -3], "storage.read.scattered[1]", "[request bytes > 0, MB/s > 0]"),
    (("storage", "write", "scattered", 1), [4096, 3.0], "storage.write.scattered[1][0]", "more than 4096"),
    (("storage", "streams", "read"), KeyError, "storage.streams.read", "a non-empty array"),
    (("storage", "streams", "write", 0), [0, 5.0], "storage.streams.write[0]", "[streams >= 1, MB/s > 0]"),
    (("storage", "write_back", "absorbed_bytes"), -1, "storage.write_back.absorbed_bytes", "an integer >= 0"),
    (("storage", "reads_from"), "disk", "storage.reads_from", '"storage" or "page cache"'),
    (("memory", "copy_mbs"), "fast", "memory.copy_mbs", "a number > 0"),
    (("network",), KeyError, "network", "null (not measured) or an object"),
    (("network",), 5, "network", "null (not measured) or an object"),
])
def test_a_bad_profile_is_refused_with_the_file_the_key_and_what_was_expected(tmp_path, keys, value, key, expected):
    p = good_profile()
    set_key(p, keys, value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(p))
    with pytest.raises(ProfileError) as e:
        load_profile(path)
    assert len(e.value.errors) == 1, e.value.errors
    line = e.value.errors[0]
    assert line.startswith(f"iotame: profile {path}: {key}: expected "), line
    assert expected in line
    with pytest.raises(ValueError):
        save_profile(p, tmp_path / "never.json")
    assert not (tmp_path / "never.json").exists()


def test_unreadable_and_non_json_profiles(tmp_path):
    with pytest.raises(ProfileError, match=f"profile {tmp_path / 'none.json'}: cannot read"):
        load_profile(tmp_path / "none.json")
    (tmp_path / "x.json").write_text("{nope")
    with pytest.raises(ProfileError, match=f"profile {tmp_path / 'x.json'}: not JSON"):
        load_profile(tmp_path / "x.json")
    (tmp_path / "a.json").write_text("[1]")
    with pytest.raises(ProfileError, match=r"\(top level\): expected an object, got array"):
        load_profile(tmp_path / "a.json")


def test_judge_holds_within_the_tolerance_either_way():
    p = good_profile()          # 400 MB/s at 1 MiB, both directions
    rows = judge(p, {"write": 400 * 1.49, "read": 400 / 1.49}, MIB, 0.5)
    assert [r["holds"] for r in rows] == [True, True]
    rows = judge(p, {"write": 400 * 1.6, "read": 400 / 1.6}, MIB, 0.5)
    assert [r["holds"] for r in rows] == [False, False]
    rows = judge(p, {"write": 400.0, "read": 40.0}, MIB, 0.5)
    assert [(r["point"], r["holds"]) for r in rows] == [("write sequential", True), ("read sequential", False)]
    assert rows[1]["ratio"] == pytest.approx(0.1)


def test_check_request_prefers_one_mib_else_the_largest_common_size():
    p = good_profile()
    assert check_request(p) == MIB
    p["storage"]["read"]["sequential"] = [[4096, 1.0], [65536, 2.0]]
    p["storage"]["write"]["sequential"] = [[4096, 1.0], [65536, 2.0], [MIB, 3.0]]
    assert check_request(p) == 65536


def test_identity_problems_name_what_differs():
    p = good_profile()
    same = dict(p["filesystem"])
    assert identity_problems(p, same) == []
    other = dict(same, device="254:0", type="ext2/ext3")
    problems = identity_problems(p, other)
    assert any(s.startswith("filesystem.device: the profile has '0:52'") for s in problems)
    assert any(s.startswith("filesystem.type:") for s in problems)


def test_write_back_nothing_absorbed_when_buffered_writes_are_no_faster():
    wb = write_back_section(buffered_mbs=110.0, durable_mbs=100.0, written=16 * MIB, freerun=1 << 30)
    assert wb["absorbed_bytes"] == 0 and wb["absorbed_mbs"] == 0
    wb = write_back_section(buffered_mbs=3000.0, durable_mbs=100.0, written=16 * MIB, freerun=1 << 30)
    assert wb["absorbed_bytes"] == 1 << 30 and wb["absorbed_mbs"] == 3000.0
    wb = write_back_section(buffered_mbs=3000.0, durable_mbs=100.0, written=16 * MIB, freerun=None)
    assert wb["absorbed_bytes"] == 16 * MIB


def test_dirty_freerun_from_ratios_or_bytes(tmp_path):
    vm = tmp_path / "vm"
    vm.mkdir()
    for name, value in (("dirty_bytes", 0), ("dirty_ratio", 20), ("dirty_background_bytes", 0),
                        ("dirty_background_ratio", 10)):
        (vm / name).write_text(f"{value}\n")
    assert dirty_freerun_bytes(str(vm), available=1000 * MIB) == (200 * MIB + 100 * MIB) // 2
    (vm / "dirty_bytes").write_text(f"{64 * MIB}\n")
    (vm / "dirty_background_bytes").write_text(f"{32 * MIB}\n")
    assert dirty_freerun_bytes(str(vm), available=1000 * MIB) == 48 * MIB
    assert dirty_freerun_bytes(str(tmp_path / "none"), available=1000 * MIB) is None


def test_a_ceph_fuse_mount_is_known_by_its_mount_type(tmp_path, monkeypatch):
    """ceph-fuse's statfs says FUSE: the mount type names CephFS, and a new file's layout is read."""
    from iotame.calibrate import filesystem
    monkeypatch.setattr(filesystem, "mount_type", lambda path: "fuse.ceph-fuse")
    monkeypatch.setattr(filesystem, "ceph_layout", lambda path: (6, 65536))
    ident = filesystem.fs_identity(tmp_path)
    assert (ident["targets"], ident["stripe_unit"], ident["mount_type"]) == (6, 65536, "fuse.ceph-fuse")
    assert ident["layout_from"] == "ceph.file.layout of a new file"
    monkeypatch.setattr(filesystem, "mount_type", lambda path: "ext4")
    assert filesystem.fs_identity(tmp_path)["targets"] == 1


def test_filesystem_identity_and_layouts(tmp_path):
    assert parse_stat_f("ext2/ext3 ef53\n") == ("ext2/ext3", 0xef53)
    assert parse_stat_f("UNKNOWN (0xbd00bd0) bd00bd0") == ("UNKNOWN (0xbd00bd0)", 0xbd00bd0)
    assert parse_stat_f("") is None
    ident = fs_identity(tmp_path)
    st = os.stat(tmp_path)
    assert ident["device"] == f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    assert ident["path"] == str(tmp_path.resolve()) and ident["magic"].startswith("0x")
    assert (ident["targets"], ident["stripe_unit"]) == (1, 0)
    attrs = {"ceph.dir.layout.stripe_count": b"4", "ceph.dir.layout.stripe_unit": b"4194304",
             "ceph.file.layout.stripe_count": b"2", "ceph.file.layout.stripe_unit": b"65536"}

    def getxattr(path, name):
        if name not in attrs:
            raise OSError(61, "No data available")
        return attrs[name]
    assert ceph_layout(tmp_path, getxattr) == (4, 4194304)
    (tmp_path / "f").touch()
    assert ceph_layout(tmp_path / "f", getxattr) == (2, 65536)
    assert ceph_layout(tmp_path, lambda p, n: (_ for _ in ()).throw(OSError(61, "no"))) is None

    calls = []

    def lfs(argv, **kw):
        calls.append(argv)
        out = {"-c": "-1\n" if "-d" in argv else "3\n", "-S": "1048576\n"}.get(argv[-2], "")
        if argv[1] == "df":
            out = "UUID 1K-blocks\nfs-OST0000_UUID 1 [OST:0]\nfs-OST0001_UUID 1 [OST:1]\nfs-MDT0000_UUID 1 [MDT:0]\n"
        return subprocess.CompletedProcess(argv, 0, out, "")
    assert lustre_layout(tmp_path, lfs) == (2, MIB)              # a directory's default: -1, every OST
    assert lustre_layout(tmp_path / "f", lfs) == (3, MIB)        # a file's own layout
    assert ["lfs", "getstripe", "-c", str(tmp_path / "f")] in calls
    assert lustre_layout(tmp_path, lambda argv, **kw: subprocess.CompletedProcess(argv, 2, "", "no")) is None


needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def _scaled(profile, factor):
    p = copy.deepcopy(profile)
    st = p["storage"]
    for d in ("write", "read"):
        for pattern in ("sequential", "scattered"):
            st[d][pattern] = [[x, mbs * factor] for x, mbs in st[d][pattern]]
    return p


@needs_fio
def test_calibrate_quick_end_to_end_then_check(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "p.json"
    assert main(["calibrate", "--quick", "--dir", str(data), "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    profile = load_profile(out)
    assert printed == profile
    assert os.listdir(data) == []                       # the scratch files are gone
    fs = profile["filesystem"]
    assert fs["path"] == str(data.resolve()) and fs["targets"] >= 1
    st = profile["storage"]
    for d in ("write", "read"):
        for pattern in ("sequential", "scattered"):
            assert [x for x, _ in st[d][pattern]] == list(QUICK.sizes)
            assert all(mbs > 0 for _, mbs in st[d][pattern])
        assert [n for n, _ in st["streams"][d]] == [1, 2, 4, 8, 16]
    assert st["reads_from"] == ("storage" if os.geteuid() == 0 else "page cache")
    assert st["write_back"]["absorbed_bytes"] >= 0 and profile["memory"]["copy_mbs"] > 0
    assert profile["network"] is None and any("network" in n for n in profile["notes"])
    assert profile["nodes"] == {"count": 1, "processes_per_node": 1}

    absurd = tmp_path / "absurd.json"
    save_profile(_scaled(profile, 1e6), absurd)
    assert main(["calibrate", "--dir", str(data), "--check", str(absurd), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert not result["holds"] and all(not p["holds"] for p in result["points"])
    # a factor 100 either way: the same disk a minute later, whatever the noise of a tiny setting
    assert main(["calibrate", "--dir", str(data), "--check", str(out), "--tolerance", "99"]) == 0
    assert "holds" in capsys.readouterr().out
    moved = copy.deepcopy(profile)
    moved["filesystem"]["device"] = "999:999"
    save_profile(moved, tmp_path / "moved.json")
    assert main(["calibrate", "--dir", str(data), "--check", str(tmp_path / "moved.json"), "--tolerance", "99"]) == 1
    assert "filesystem.device: the profile has '999:999'" in capsys.readouterr().err
    assert os.listdir(data) == []


def test_stream_counts_reach_the_maximum():
    assert stream_counts() == (1, 2, 4, 8, 16) == QUICK.streams
    assert stream_counts(12) == (1, 2, 4, 8, 12)
    assert stream_counts(2) == (1, 2) and stream_counts(1) == (1,)
    with pytest.raises(ValueError, match="expected a count >= 1, got 0"):
        stream_counts(0)


@needs_fio
def test_streams_option_sets_the_counts_measured(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["calibrate", "--quick", "--streams", "3", "--dir", str(tmp_path), "--out", str(out)]) == 0
    st = load_profile(out)["storage"]["streams"]
    assert [n for n, _ in st["read"]] == [n for n, _ in st["write"]] == [1, 2, 3]
    capsys.readouterr()
    assert main(["calibrate", "--dir", str(tmp_path), "--check", str(out), "--streams", "4"]) == 2
    assert "drop --out, --quick, --streams and --no-strategies" in capsys.readouterr().err


def test_usage_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)
    assert main(["calibrate", "--dir", str(tmp_path)]) == 2           # nowhere to put it by default
    assert "neither XDG_CONFIG_HOME nor HOME is set: give --out" in capsys.readouterr().err
    assert main(["calibrate", "--dir", str(tmp_path), "--check", "p.json", "--out", "q.json"]) == 2
    assert main(["calibrate", "--dir", str(tmp_path), "--out", "q.json", "--tolerance", "1"]) == 2
    assert main(["calibrate", "--dir", str(tmp_path / "none"), "--out", "q.json"]) == 2
    assert main(["calibrate", "--dir", str(tmp_path), "--check", "p.json", "--tolerance", "0"]) == 2
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "iotame-machine-profile", "version": 7}))
    assert main(["calibrate", "--dir", str(tmp_path), "--check", str(bad)]) == 2
    assert f"iotame: profile {bad}: version: expected the integer 1 or 2, got 7" in capsys.readouterr().err


def test_fs_identity_takes_the_layout_a_new_file_gets(tmp_path, monkeypatch):
    from iotame.calibrate import filesystem
    seen = []

    def layout(path):
        seen.append(path)
        return None if path.is_dir() else (4, MIB)
    monkeypatch.setattr(filesystem, "_statfs", lambda path: ("lustre", filesystem.LUSTRE_MAGIC))
    monkeypatch.setattr(filesystem, "lustre_layout", layout)
    ident = fs_identity(tmp_path)
    assert (ident["type"], ident["magic"], ident["targets"], ident["stripe_unit"]) == ("lustre", "0xbd00bd0", 4, MIB)
    assert seen and seen[0].parent == tmp_path.resolve() and not seen[0].exists()   # the probe file is gone
    assert os.listdir(tmp_path) == []


@needs_fio
def test_without_dropping_the_cache_the_profile_says_reads_came_from_it(tmp_path, monkeypatch):
    from iotame.calibrate import calibrate, measure
    monkeypatch.setattr(measure, "drop_caches", lambda: "not root")
    profile = calibrate(tmp_path, QUICK, quick=True, drop="machine")
    assert validate_profile(profile) == []
    assert profile["storage"]["reads_from"] == "page cache"
    assert any("reads came from the page cache" in n for n in profile["notes"])
    assert profile["measurement"]["cache_drops"] == 0 and os.listdir(tmp_path) == []


def test_check_profile_judges_injected_measurements(tmp_path, monkeypatch):
    from iotame.calibrate import check, check_profile
    figures = {"write": 400.0, "read": 40.0}

    class Fake:
        def __init__(self, directory, settings, on_step=None, drop=True, env=None):
            self.drop_reason = None

        def layout(self):
            pass

        def point(self, direction, pattern, request):
            assert (pattern, request) == ("sequential", MIB)
            return figures[direction]

        def cleanup(self):
            pass
    monkeypatch.setattr(check, "Calibration", Fake)
    p = good_profile()
    p["filesystem"] = {k: v for k, v in fs_identity(tmp_path).items()}
    result = check_profile(p, tmp_path, tolerance=0.5)
    assert not result["holds"] and [r["holds"] for r in result["points"]] == [True, False]
    figures["read"] = 390.0
    assert check_profile(p, tmp_path, tolerance=0.5)["holds"]
    p["filesystem"]["magic"] = "0x1"
    result = check_profile(p, tmp_path, tolerance=0.5)
    assert not result["holds"] and result["identity"][0].startswith("filesystem.magic:")


# --- the network part -------------------------------------------------------------------------------------------

def _pair(latency=2.5, mbs=900.0):
    return {"latency_us": latency, "mbs": mbs, "ranks": [0, 1], "points": [[8, latency, 3.2], [4 << 20, 4661.0, mbs]]}


def networked_profile(count=2, ppn=2):
    p = good_profile()
    p["nodes"] = {"count": count, "processes_per_node": ppn}
    n = count * ppn
    p["network"] = {"intra": _pair() if ppn > 1 else None, "inter": _pair(20.0, 100.0) if count > 1 else None,
                    "allgather": [[n, 72, 15.0]], "alltoallv": [[n, 64, 20.0], [n, 65536, 900.0]]}
    return p


@pytest.mark.parametrize("count, ppn", [(1, 2), (2, 1), (2, 2)])
def test_a_measured_network_is_valid_for_its_node_layout(tmp_path, count, ppn):
    path = save_profile(networked_profile(count, ppn), tmp_path / "p.json")
    assert load_profile(path)["network"]["allgather"][0][1] == 72


@pytest.mark.parametrize("layout, keys, value, key, expected", [
    ((2, 2), ("network", "intra", "latency_us"), KeyError, "network.intra.latency_us", "a number >= 0"),
    ((2, 2), ("network", "intra", "mbs"), 0, "network.intra.mbs", "a number > 0 (MB/s), got 0"),
    ((2, 2), ("network", "intra"), None, "network.intra", "(null only with 1 process per node), got null"),
    ((2, 2), ("network", "inter"), None, "network.inter", "(null only with nodes.count 1), got null"),
    ((2, 2), ("network", "inter"), "fast", "network.inter", 'an object {latency_us, mbs}'),
    ((1, 2), ("network", "inter"), _pair(), "network.inter", "null (nodes.count is 1: no pair across nodes)"),
    ((2, 2), ("network", "allgather"), "x", "network.allgather", "an array of [processes, bytes, microseconds] rows"),
    ((2, 2), ("network", "alltoallv", 1), [4, 64], "network.alltoallv[1]", "[processes >= 1, bytes >= 0"),
    ((2, 2), ("network", "alltoallv", 0), [0, 64, 1.0], "network.alltoallv[0]", "got array"),
    ((2, 2), ("network", "allgather", 0), [4, 72, -1.0], "network.allgather[0]", "microseconds >= 0"),
])
def test_a_bad_network_section_is_refused_with_the_file_the_key_and_what_was_expected(tmp_path, layout, keys,
                                                                                     value, key, expected):
    p = networked_profile(*layout)
    set_key(p, keys, value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(p))
    with pytest.raises(ProfileError) as e:
        load_profile(path)
    (line,) = [line for line in e.value.errors if f": {key}: " in line]
    assert line.startswith(f"iotame: profile {path}: {key}: expected ") and expected in line


def test_network_job_uses_the_tuners_launchers(tmp_path):
    from iotame.calibrate import network_job
    from iotame.errors import UsageError
    kernel = tmp_path / "iotame-kernel"
    assert network_job(env={}, program=kernel) is None               # nothing asks for the network
    job = network_job(np=3, program=kernel, env={})
    assert job.nprocs == 3 and job.argv[:3] == ("mpiexec", "-n", "3") and job.argv[3:5] == (str(kernel), "netprobe")
    job = network_job(["mpiexec", "-n", "4"], program=kernel, env={})
    assert job.nprocs == 4 and job.argv[:4] == ("mpiexec", "-n", "4", str(kernel))
    testbed = ["scripts/testbed", "mpiexec", "-n", "4", "--"]          # a launcher the tuner does not name
    job = network_job(testbed, program=kernel, env={})
    assert job.nprocs == 4 and list(job.argv[:6]) == testbed + [str(kernel)]
    slurm = {"SLURM_JOB_ID": "7", "SLURM_NTASKS": "8", "SLURM_JOB_NUM_NODES": "2", "IOTAME_SRUN_MPI": "pmi2"}
    job = network_job(program=kernel, env=slurm)
    assert job.nprocs == 8 and job.argv[0] == "srun"
    with pytest.raises(UsageError, match="calibrate: --np 2 disagrees"):
        network_job(testbed, np=2, program=kernel, env={})
    with pytest.raises(UsageError, match="calibrate: .*give --np N"):
        network_job(["scripts/testbed", "run"], program=kernel, env={})


def test_without_mpi_the_network_stays_null_with_a_note(tmp_path):
    from iotame.calibrate import measure_network
    from iotame.tune.job import Job
    network, nodes, note = measure_network(None)
    assert network is None and nodes is None and "--np" in note
    job = Job(("no-such-mpiexec-here", "-n", "2", str(tmp_path / "iotame-kernel"), "netprobe"), 2, True)
    network, nodes, note = measure_network(job)
    assert network is None and nodes is None and "no-such-mpiexec-here not found" in note


needs_mpi = pytest.mark.skipif(shutil.which("mpiexec") is None, reason="no mpiexec")


@needs_fio
@needs_mpi
def test_calibrate_quick_with_two_processes_measures_the_network(tmp_path, capsys):
    from iotame.paths import kernel_path
    if not kernel_path().is_file():
        pytest.skip("iotame-kernel not built")
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "p.json"
    assert main(["calibrate", "--quick", "--dir", str(data), "--out", str(out), "--json", "--np", "2",
                 "--no-strategies"]) == 0                            # the strategies: test_calibrate_strategies.py
    printed = json.loads(capsys.readouterr().out)
    profile = load_profile(out)                                        # valid, network included
    assert printed == profile
    assert profile["nodes"] == {"count": 1, "processes_per_node": 2}
    net = profile["network"]
    assert net["inter"] is None                                        # one node
    assert net["intra"]["latency_us"] > 0 and net["intra"]["mbs"] > 0
    assert [row[:2] for row in net["allgather"]] == [[2, 72]]
    assert [row[0] for row in net["alltoallv"]] == [2] * len(net["alltoallv"]) and net["alltoallv"]
    assert not any("network" in n for n in profile["notes"])
    # --check re-measures one network point; a profile claiming a 10^6 times faster network does not hold
    fast = copy.deepcopy(profile)
    fast["network"]["intra"]["mbs"] *= 1e6
    save_profile(fast, tmp_path / "fast.json")
    assert main(["calibrate", "--dir", str(data), "--check", str(tmp_path / "fast.json"), "--tolerance", "99",
                 "--json", "--", "mpiexec", "-n", "2"]) == 1
    result = json.loads(capsys.readouterr().out)
    (row,) = [p for p in result["points"] if p["point"].startswith("network")]
    assert row["point"] == "network intra-node ping-pong" and not row["holds"] and row["measured_mbs"] > 0
    assert all(p["holds"] for p in result["points"] if p is not row)
    # without a launcher, --check says the network was not re-checked
    assert main(["calibrate", "--dir", str(data), "--check", str(out), "--tolerance", "99"]) == 0
    assert "network not re-checked" in capsys.readouterr().err


def _probe_result(count=2, ppn=1, inter_mbs=100.0):
    """What netprobe prints (only the keys the profile uses), on `count` nodes of `ppn` processes."""
    n = count * ppn

    def pair(ranks, latency, mbs):
        return {"ranks": ranks, "points": [[4 << 20, 4000.0, mbs], [8, latency, 0.5], [65536, 300.0, 200.0]]}

    return {"kernel": "netprobe", "nprocs": n, "params": {"reps": 5, "warmup": 2}, "verified": True,
            "nodes": {"count": count, "processes_per_node": ppn, "sizes": [ppn] * count},
            "pingpong": {"intra": pair([0, 1], 0.4, 6000.0) if ppn > 1 else None,
                         "inter": pair([0, ppn], 20.0, inter_mbs) if count > 1 else None},
            "allgather": [[n, 72, 12.5]], "alltoallv": [[n, 64, 15.0], [n, 1 << 20, 900.0]]}


def test_the_probes_answer_becomes_a_valid_network_section(tmp_path):
    from iotame.calibrate import network_section, nodes_section
    from iotame.tune.job import Job
    job = Job(("mpiexec", "-n", "2", "iotame-kernel", "netprobe"), 2, True)
    p = good_profile()
    p["network"], p["nodes"] = network_section(_probe_result(), job), nodes_section(_probe_result())
    assert p["nodes"] == {"count": 2, "processes_per_node": 1}
    inter = p["network"]["inter"]
    assert inter["latency_us"] == 20.0 and inter["mbs"] == 100.0      # the smallest message's time, the largest's rate
    assert [pt[0] for pt in inter["points"]] == [8, 65536, 4 << 20]
    assert p["network"]["intra"] is None and p["network"]["launch"] == list(job.argv)
    assert load_profile(save_profile(p, tmp_path / "p.json"))["network"]["allgather"] == [[2, 72, 12.5]]


def test_check_judges_the_network_point_and_the_layout(monkeypatch):
    from iotame.calibrate import network
    from iotame.tune.job import Job
    profile = networked_profile(2, 1)                                 # inter 100 MB/s
    job = Job(("mpiexec", "-n", "2", "iotame-kernel", "netprobe"), 2, True)
    monkeypatch.setattr(network, "run_netprobe", lambda job: _probe_result(inter_mbs=130.0))
    (row,), problems, note = network.check_point(profile, job, 0.5)
    assert row["point"] == "network inter-node ping-pong" and row["holds"] and row["ratio"] == 1.3
    assert problems == [] and note is None
    (row,), _, _ = network.check_point(profile, job, 0.2)
    assert not row["holds"]
    monkeypatch.setattr(network, "run_netprobe", lambda job: _probe_result(count=1, ppn=2))
    rows, problems, note = network.check_point(profile, job, 0.5)
    assert problems == ["nodes: the profile has 2 node(s) x 1 process(es), the job has 1 x 2"]
    assert rows == [] and "no inter-node pair" in note
    assert network.check_point(good_profile(), job, 0.5) == ([], [], None)    # no network in the profile
    assert "not re-checked" in network.check_point(profile, None, 0.5)[2]
