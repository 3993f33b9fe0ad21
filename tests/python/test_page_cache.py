"""Polite cache control: tune and calibrate evict the files their jobs touched (fdatasync + POSIX_FADV_DONTNEED,
checked with mincore) and leave another process's cached file in the page cache; the machine's page cache is
emptied only on request (drop_caches is made to fail loudly here, so a call to it is a test failure)."""
import json
import shutil
import subprocess
import sys

import pytest

from iotame.bench import caches
from iotame.bench.caches import evict, resident
from iotame.cli import main

from .fakes import make_stats

MIB = 1 << 20

JOB = r'''#!{python}
"""Writes and reads back data.bin (1 MiB) beside itself, then statistics that list it (as the runtime does)."""
import json, os
here = os.path.dirname(os.path.abspath(__file__))
data = os.path.join(here, "data.bin")
with open(data, "wb") as f:
    f.write(os.urandom(1 << 20))
open(data, "rb").read()
stats = json.load(open(os.path.join(here, "stats-template.json")))
stats["files"][0]["path"] = data
json.dump(stats, open(os.environ["IOTAME_STATS"], "w"))
'''


def cached_by_another_process(path):
    """A file written and read by a separate process: its pages stay in the page cache."""
    subprocess.run([sys.executable, "-c", f"import os; open({str(path)!r}, 'wb').write(os.urandom({MIB})); "
                                          f"open({str(path)!r}, 'rb').read()"], check=True)
    return path


def still_cached(path, control) -> bool:
    """Whether `path` is all in the page cache; skips the test when `control`, a file nothing in the test touches
    and cached just before `path`, left it too: the machine's page cache was emptied from outside (another user's
    drop_caches; any such drop after `path` was cached also hits `control`)."""
    if resident(path)[0] == resident(path)[1]:
        return True
    if resident(control)[0] < resident(control)[1]:
        pytest.skip("the machine's page cache was emptied from outside during the test")
    return False


def evictable(tmp_path) -> bool:
    """Whether this file system lets a clean file's pages go on POSIX_FADV_DONTNEED (tmpfs does not)."""
    probe = cached_by_another_process(tmp_path / "probe")
    evict([probe])
    gone = resident(probe)[0] == 0
    probe.unlink()
    return gone


@pytest.fixture
def no_machine_drop(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("drop_caches was called: the machine's page cache must only be emptied on request")
    monkeypatch.setattr(caches, "drop_caches", refuse)
    from iotame.calibrate import measure
    from iotame.tune import page_cache
    monkeypatch.setattr(measure, "drop_caches", refuse)
    monkeypatch.setattr(page_cache, "drop_caches", refuse)


def test_evict_and_resident(tmp_path):
    f = cached_by_another_process(tmp_path / "f")
    assert resident(f) == (MIB // 4096, MIB // 4096) or resident(f)[0] > 0
    if not evictable(tmp_path):
        pytest.skip("this file system keeps pages on POSIX_FADV_DONTNEED")
    done = evict([tmp_path])          # a directory: every file under it
    assert done.files == 1 and done.bytes == MIB and done.errors == []
    assert resident(f)[0] == 0
    assert evict([tmp_path / "missing"]).files == 0


def test_tune_evicts_the_jobs_files_and_leaves_others_cached(tmp_path, fake_lib, no_machine_drop, monkeypatch):
    if not evictable(tmp_path):
        pytest.skip("this file system keeps pages on POSIX_FADV_DONTNEED")
    monkeypatch.setenv("IOTAME_KNOWLEDGE", str(tmp_path / "kb.sqlite"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    d = tmp_path / "job"
    d.mkdir()
    prog = d / "job"
    prog.write_text(JOB.format(python=sys.executable))
    prog.chmod(0o755)
    (d / "stats-template.json").write_text(json.dumps(dict(make_stats(), nprocs=1)))
    control = cached_by_another_process(tmp_path / "control.bin")     # first: see still_cached
    other = cached_by_another_process(d / "other.bin")        # beside the job's own file, in its directory
    (tmp_path / "space.toml").write_text('[mpiio]\nromio_cb_write = ["enable", "disable"]\n')
    assert main(["tune", "--space", str(tmp_path / "space.toml"), "--out", str(tmp_path / "out"), "--study", "s",
                 "--trials", "2", "--final-repeat", "1", "--max-noise", "10", "--", str(prog)]) == 0
    assert resident(d / "data.bin")[0] == 0                       # the job's own file: evicted
    assert still_cached(other, control)                           # another process's: still cached
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "evicted" in summary["page_cache"]


needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


@needs_fio
def test_calibrate_evicts_its_files_and_leaves_others_cached(tmp_path, no_machine_drop, monkeypatch):
    if not evictable(tmp_path):
        pytest.skip("this file system keeps pages on POSIX_FADV_DONTNEED")
    from iotame.calibrate import QUICK, calibrate, measure
    checked = []

    def evict_and_check(paths):
        done = evict(paths)
        for p in paths:
            for f in (p.rglob("*") if p.is_dir() else [p]):
                if f.is_file():
                    checked.append(resident(f)[0])
        return done
    monkeypatch.setattr(measure, "evict", evict_and_check)
    control = cached_by_another_process(tmp_path / "control.bin")     # first: see still_cached
    other = cached_by_another_process(tmp_path / "other.bin")
    work = tmp_path / "work"
    work.mkdir()
    profile = calibrate(work, QUICK, quick=True, strategies=False)
    assert profile["storage"]["reads_from"] == "storage"
    assert checked and all(n == 0 for n in checked)               # calibration's own files: evicted each time
    assert still_cached(other, control)                           # another process's: still cached


def test_calibrate_cache_option_parses():
    from iotame.cli import build_parser
    p = build_parser()
    assert p.parse_args(["calibrate", "--dir", ".", "--cache", "off"]).cache == "off"
    with pytest.raises(SystemExit):
        p.parse_args(["calibrate", "--dir", ".", "--cache", "all"])


def test_bench_files_mode_evicts_the_write_jobs_directory_only(tmp_path, no_machine_drop):
    if not evictable(tmp_path):
        pytest.skip("this file system keeps pages on POSIX_FADV_DONTNEED")
    from iotame.bench import BenchSpec
    from iotame.bench.execute import _dropper
    work = tmp_path / "work"
    work.mkdir()
    written = cached_by_another_process(work / "data")
    control = cached_by_another_process(tmp_path / "control.bin")     # first: see still_cached
    other = cached_by_another_process(tmp_path / "other.bin")
    assert _dropper(BenchSpec("ior", drop_caches="files"))([work]) is True
    assert resident(written)[0] == 0 and still_cached(other, control)
    assert _dropper(BenchSpec("ior", drop_caches=True))([]) is False     # nothing known to evict: not dropped
