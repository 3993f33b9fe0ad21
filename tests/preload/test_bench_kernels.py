"""End to end: `iotame bench` driving real kernels under the real runtime (sweeps, flags, --drop-caches, option
checks against `--describe`) and `iotame bench fio`. Small sizes, 2 ranks; no timing is asserted."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import KERNEL, LIBIOTAME, Job

pytestmark = pytest.mark.skipif(not (LIBIOTAME.is_file() and KERNEL.is_file()),
                                reason=f"needs {LIBIOTAME} and {KERNEL} (run make setup)")

PNG = b"\x89PNG\r\n\x1a\n"


def iotame(tmp_path, *args, timeout=600):
    """Runs the CLI of this Python environment (`python -m iotame`) in tmp_path with a clean environment."""
    env = Job(tmp_path).env(extra={"COLUMNS": "160"})
    return subprocess.run([sys.executable, "-m", "iotame", *map(str, args)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def listed():
    if not KERNEL.is_file():
        return []
    p = subprocess.run([str(KERNEL), "--list"], capture_output=True, text=True, timeout=60)
    return p.stdout.split() if p.returncode == 0 else []


def need(kernel):
    if kernel not in listed():
        pytest.skip(f"`iotame-kernel --list` has no {kernel} kernel yet")


def runs_in(out):
    (jsonl,) = out.glob("*.jsonl")
    return [json.loads(line) for line in jsonl.read_text().splitlines()]


def test_ior_sweep_gives_results_table_and_plot(tmp_path):
    out = tmp_path / "out"
    p = iotame(tmp_path, "bench", "ior", "--np", "2", "--sweep", "t=64k,256k", "--repeat", "2", "--out", out)
    assert p.returncode == 0, p.stderr
    runs = runs_in(out)
    assert len(runs) == 4 and all(r["ok"] for r in runs)
    assert [r["swept"]["t"] for r in runs] == ["64k", "256k", "64k", "256k"]      # interleaved
    assert [r["result"]["params"]["transfer"] for r in runs] == [65536, 262144] * 2
    assert "median MB/s" in p.stdout and "t=64k" in p.stdout and "t=256k" in p.stdout
    (png,) = out.glob("*.png")
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 1000
    (summary,) = out.glob("*.summary.json")
    rows = json.loads(summary.read_text())["phases"]
    assert {(r["point"]["t"], r["name"]) for r in rows} >= {("64k", "write"), ("256k", "read")}
    assert len(list(out.glob("*.stats.json"))) == 4
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out"]          # the kernel removed its files


def test_noncontig_with_a_flag(tmp_path):
    need("noncontig")
    out = tmp_path / "out"
    p = iotame(tmp_path, "bench", "noncontig", "--np", "2", "--repeat", "1", "--set", "collective=1",
               "--set", "elmtcount=16", "--set", "veclen=8", "--out", out)
    assert p.returncode == 0, p.stderr
    (run,) = runs_in(out)
    assert run["ok"], run["error"]
    assert "--collective" in run["argv"] and run["result"]["params"]["collective"] is True
    assert run["result"]["verified"] is True


def test_drop_caches_ior(tmp_path):
    out = tmp_path / "out"
    p = iotame(tmp_path, "bench", "ior", "--np", "2", "--repeat", "1", "--set", "b=1m", "--set", "R=1",
               "--drop-caches", "--out", out)
    assert p.returncode == 0, p.stderr
    (run,) = runs_in(out)
    assert run["ok"], run["error"]
    assert run["argv"][-2:] == ["-w", "-k"] and run["read_argv"][-1] == "-r" and "-R" in run["read_argv"]
    assert [ph["name"] for ph in run["result"]["phases"]] == ["write", "read"]
    assert run["result"]["verified"] is True
    if os.geteuid() == 0:
        assert run["caches_dropped"] is True, p.stderr
        assert "page cache dropped before reads" in p.stdout
    else:
        assert run["caches_dropped"] is False
        assert "cannot drop the page cache" in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out"]          # kept files removed


def test_drop_caches_long_option_kernel(tmp_path):
    need("noncontig")
    p = iotame(tmp_path, "bench", "noncontig", "--np", "2", "--repeat", "1", "--set", "elmtcount=16",
               "--set", "veclen=8", "--drop-caches", "--json")
    assert p.returncode == 0, p.stderr
    (run,) = json.loads(p.stdout)["runs"]
    assert run["ok"], run["error"]
    assert "--keep" in run["argv"] and "--skip-write" in run["read_argv"]
    assert [ph["name"] for ph in run["result"]["phases"]] == ["write", "read"]
    assert run["caches_dropped"] is (os.geteuid() == 0)
    (out,) = tmp_path.iterdir()                  # the default output directory, and no kernel file left
    assert out.name.startswith("iotame-bench-noncontig-")


def test_unknown_key_is_rejected_before_launching(tmp_path):
    out = tmp_path / "out"
    p = iotame(tmp_path, "bench", "ior", "--set", "x=1", "--out", out)
    assert p.returncode == 2
    assert p.stderr == "iotame: --set x: ior has no option 'x' (valid: a, b, t, s, F, c, z, e, C, w, r, W, R, o, " \
                       "i, k, G)\n"
    assert not out.exists()
    if "noncontig" in listed():
        p = iotame(tmp_path, "bench", "noncontig", "--sweep", "elmcount=1,2", "--out", out)
        assert p.returncode == 2
        assert "--sweep elmcount: noncontig has no option 'elmcount' (valid: elmtcount, veclen" in p.stderr
        assert not out.exists()


def test_every_listed_kernel_describes_its_options():
    from iotame.bench import get_kernel
    for name in listed():
        kernel = get_kernel(name, KERNEL)
        assert kernel.table, name
        # ior takes IOR's own options; netprobe touches no file; sigprobe (calibrate's) makes and removes its own
        # files in --dir; replay's files and calls come from its spec
        if name not in ("ior", "netprobe", "sigprobe", "replay"):
            assert {"file", "seed", "keep", "skip-write"} <= set(kernel.table), name
    assert {"from", "dir", "scale", "seed", "keep"} <= set(get_kernel("replay", KERNEL).table)


def test_fio_limit(tmp_path):
    from iotame.bench import probe_direct
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    why = probe_direct(tmp_path)
    if why:
        pytest.skip(why)
    out = tmp_path / "out"
    p = iotame(tmp_path, "bench", "fio", "--size", "64m", "--runtime", "2", "--out", out)
    assert p.returncode == 0, p.stderr
    stored = json.loads((out / "fio.json").read_text())
    assert [r["name"] for r in stored["results"]] == ["seq-write-1m", "seq-read-1m", "rand-read-4k"]
    assert all(r["mbs"] > 0 for r in stored["results"])
    assert "seq write 1 MiB" in p.stdout and "rand read 4 KiB" in p.stdout
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out"]          # fio's file removed
    # a sweep plotted into the same directory draws the limit (the plot still is a PNG)
    p = iotame(tmp_path, "bench", "ior", "--np", "2", "--sweep", "t=256k,1m", "--repeat", "1", "--out", out)
    assert p.returncode == 0, p.stderr
    (png,) = out.glob("*.png")
    assert png.read_bytes()[:8] == PNG
