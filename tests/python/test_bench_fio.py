"""`iotame bench fio`: the command line given to fio, parsing fio's JSON (a saved sample), errors. Pure Python:
fio itself is replaced by a script that prints the sample."""
import json
import sys

import pytest

from iotame.bench import fio as fiomod
from iotame.bench import fio_command, parse_fio_output, run_fio
from iotame.cli import main
from iotame.errors import IotameError

# `fio --output-format=json` of the three jobs (fio-3.33, ext4, 64 MiB), trimmed to the fields iotame reads.
SAMPLE = {
    "fio version": "fio-3.33", "timestamp": 1795322516, "time": "Sun Nov 22 04:41:56 2026",
    "global options": {"direct": "1", "ioengine": "psync", "filename": "/tmp/fiot/.iotame-fio.tmp",
                       "size": "67108864", "runtime": "2"},
    "jobs": [
        {"jobname": "seq-write-1m", "groupid": 0, "error": 0,
         "job options": {"name": "seq-write-1m", "rw": "write", "bs": "1m", "end_fsync": "1"},
         "read": {"io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "total_ios": 0},
         "write": {"io_bytes": 67108864, "io_kbytes": 65536, "bw_bytes": 246723764, "bw": 240941,
                   "iops": 235.294118, "runtime": 272, "total_ios": 64}, "job_runtime": 271},
        {"jobname": "seq-read-1m", "groupid": 1, "error": 0,
         "job options": {"name": "seq-read-1m", "rw": "read", "bs": "1m"},
         "read": {"io_bytes": 67108864, "io_kbytes": 65536, "bw_bytes": 573580034, "bw": 560136,
                  "iops": 547.008547, "runtime": 117, "total_ios": 64},
         "write": {"io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "total_ios": 0},
         "job_runtime": 116},
        {"jobname": "rand-read-4k", "groupid": 2, "error": 0,
         "job options": {"name": "rand-read-4k", "rw": "randread", "bs": "4k"},
         "read": {"io_bytes": 67108864, "io_kbytes": 65536, "bw_bytes": 44979131, "bw": 43924,
                  "iops": 10981.233244, "runtime": 1492, "total_ios": 16384},
         "write": {"io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "total_ios": 0},
         "job_runtime": 1491},
    ]}


def test_parse_fio_output_from_a_saved_sample():
    rows = parse_fio_output(SAMPLE)
    assert [(r["name"], r["label"], r["rw"], r["bs"]) for r in rows] == [
        ("seq-write-1m", "seq write 1 MiB", "write", "1m"), ("seq-read-1m", "seq read 1 MiB", "read", "1m"),
        ("rand-read-4k", "rand read 4 KiB", "randread", "4k")]
    assert [round(r["mbs"], 1) for r in rows] == [246.7, 573.6, 45.0]
    assert rows[2]["iops"] == pytest.approx(10981.2, abs=0.1)
    assert rows[0]["bytes"] == 67108864 and rows[1]["seconds"] == 0.117


def test_fio_command():
    argv = fio_command("/data/x:y", 64 << 20, 2, "fio")
    assert argv[:4] == ["fio", "--output-format=json", "--direct=1", "--ioengine=psync"]
    assert "--filename=/data/x\\:y/.iotame-fio.tmp" in argv and "--size=67108864" in argv and "--runtime=2" in argv
    jobs = " ".join(argv[argv.index("--name=seq-write-1m"):])
    assert jobs == ("--name=seq-write-1m --rw=write --bs=1m --end_fsync=1 "
                    "--name=seq-read-1m --rw=read --bs=1m --stonewall "
                    "--name=rand-read-4k --rw=randread --bs=4k --stonewall")


@pytest.fixture
def fake_fio(tmp_path, monkeypatch):
    """A `fio` on PATH that logs its arguments and prints SAMPLE (after a note, as some versions do)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fio = bin_dir / "fio"
    fio.write_text(f"#!{sys.executable}\nimport json, sys\n"
                   f"open({str(tmp_path / 'fio.log')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
                   f"print('note: something')\nprint(json.dumps({SAMPLE!r}))\n")
    fio.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return tmp_path / "fio.log"


def test_bench_fio_stores_fio_json(fake_fio, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    target, out = tmp_path / "target", tmp_path / "out"
    target.mkdir()
    assert main(["bench", "fio", "--dir", str(target), "--size", "64m", "--runtime", "2", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "seq write 1 MiB" in captured.out and "246.7" in captured.out and "10981" in captured.out
    assert f"stored in {out / 'fio.json'}" in captured.err
    stored = json.loads((out / "fio.json").read_text())
    assert stored["dir"] == str(target) and stored["size"] == 64 << 20 and stored["direct"] is True
    assert [round(r["mbs"]) for r in stored["results"]] == [247, 574, 45]
    assert stored["raw"]["fio version"] == "fio-3.33"
    assert f"--filename={target}/.iotame-fio.tmp" in json.loads(fake_fio.read_text())
    assert sorted(p.name for p in target.iterdir()) == []


def test_bench_fio_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))          # no fio
    assert main(["bench", "fio", "--dir", str(tmp_path)]) == 1
    assert "bench fio: fio not found (install the Debian package fio" in capsys.readouterr().err
    assert main(["bench", "fio", "--size", "lots"]) == 2
    assert main(["bench", "fio", "--size", "4k"]) == 2
    assert main(["bench", "fio", "--set", "b=1m"]) == 2
    with pytest.raises(IotameError, match="is not a directory"):
        run_fio(tmp_path / "none", program=sys.executable)


def test_bench_fio_without_o_direct(fake_fio, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(fiomod, "probe_direct", lambda d: f"{d} (tmpfs) does not support O_DIRECT")
    assert main(["bench", "fio", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"iotame: bench fio: {tmp_path} (tmpfs) does not support O_DIRECT; the device limit cannot be " \
           "measured without the page cache there" in err
    assert not fake_fio.exists()


def test_probe_direct_and_fs_type(tmp_path):
    assert fiomod.probe_direct(tmp_path) in (None, f"{tmp_path} ({fiomod.fs_type(tmp_path)}) does not support "
                                                   "O_DIRECT")
    assert list(tmp_path.iterdir()) == []
    assert fiomod.fs_type("/") is not None
    assert "cannot create a file" in fiomod.probe_direct(tmp_path / "none")
