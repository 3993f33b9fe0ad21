"""Kernel option tables (`--describe`), checking `--set`/`--sweep` against them, the --drop-caches split, and
merging the results of the two jobs. Pure Python."""
import pytest

from iotame.bench import (CacheSplit, LongKernel, Option, drop_caches, get_kernel, merge_results, parse_description,
                          parse_size, parse_sweep)
from iotame.errors import IotameError, UsageError
from .test_bench import NONCONTIG


def test_parse_size():
    assert parse_size("4096") == 4096
    assert parse_size("64k") == 65536 and parse_size("1M") == 1 << 20 and parse_size("2g") == 2 << 30
    for bad in ("", "1.5m", "-1", "1t", "k", "1 m"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_parse_description():
    name, summary, table = parse_description(NONCONTIG)
    assert name == "noncontig" and summary.startswith("ROMIO")
    assert list(table) == ["elmtcount", "veclen", "collective", "file", "seed", "keep", "skip-write"]
    assert table["elmtcount"] == Option("elmtcount", "integer", "64", "1", "268435456", [], "ints")
    assert table["veclen"].max is None and table["collective"].type == "flag"
    with pytest.raises(ValueError, match="not a kernel description"):
        parse_description({"kernel": "x"})
    with pytest.raises(ValueError, match=r"options\[0\]"):
        parse_description({"options": [{"name": "x", "type": "float"}]})
    with pytest.raises(IotameError, match="kernel description"):
        LongKernel({"options": "no"})


@pytest.mark.parametrize("option,good,bad", [
    (Option("n", "integer", min="1", max="8"), ["1", "8", " 4 "], ["0", "9", "x", "1.5", ""]),
    (Option("s", "size", min="4k"), ["4k", "1m", "8192"], ["4095", "1x", "-4k"]),
    (Option("x", "number", min="0"), ["0", "0.5", "1e3"], ["-0.1", "nan", "x"]),
    (Option("f", "flag"), ["1", "0", "true", "OFF", "yes"], ["2", "maybe", ""]),
    (Option("e", "enum", choices=["posix", "mpiio"]), ["posix", "MPIIO"], ["hdf5", ""]),
    (Option("t", "string"), ["anything", ""], []),
])
def test_option_check(option, good, bad):
    for v in good:
        assert option.check(v) is None, v
    for v in bad:
        assert option.check(v) == option.expected(), v


def test_option_wording():
    assert Option("n", "integer", min="1", max="8").expected() == "an integer from 1 to 8"
    assert Option("s", "size", min="1").expected() == \
        "a size >= 1 (bytes, or with a k, m or g suffix: 4096, 64k, 1m, 2g)"
    assert Option("e", "enum", choices=["a", "b"]).expected() == "one of a, b"


def test_parse_sweep():
    assert parse_sweep(["t=64k,256k", "F=0,1", "t=1m"]) == [("t", ["1m"]), ("F", ["0", "1"])]
    assert parse_sweep(["b = 1m, 2m"]) == [("b", ["1m", "2m"])]
    for bad in (["t"], ["t="], ["t=1,,2"], ["=1,2"]):
        with pytest.raises(UsageError):
            parse_sweep(bad)


def test_long_kernel_options_and_checks():
    k = LongKernel(NONCONTIG)
    assert k.name == "noncontig" and k.flags == {"collective", "keep", "skip-write"}
    assert k.options([("elmtcount", "16"), ("collective", "1"), ("keep", "0")]) == ["--elmtcount", "16",
                                                                                      "--collective"]
    k.check([("veclen", "8"), ("file", "/x/y")])
    with pytest.raises(UsageError, match=r"--sweep veclen=0: --veclen of noncontig expects an integer >= 1"):
        k.check([("veclen", "8"), ("veclen", "0")], "--sweep")
    with pytest.raises(UsageError, match=r"--set nope: noncontig has no option 'nope' \(valid: elmtcount, "):
        k.check([("nope", "1")])


def test_ior_split_for_drop_caches():
    ior = get_kernel("ior")
    s = ior.split([("b", "1m"), ("W", "1"), ("R", "1"), ("e", "1"), ("k", "1")])
    assert s == CacheSplit([("b", "1m"), ("W", "1"), ("e", "1"), ("w", "1"), ("k", "1")],
                           [("b", "1m"), ("R", "1"), ("r", "1")])
    assert ior.options(s.write) == ["-b", "1m", "-W", "-e", "-w", "-k"]
    assert ior.options(s.read) == ["-b", "1m", "-R", "-r"]
    assert ior.split([("w", "1")]) is None                       # nothing read: nothing to drop
    assert ior.split([("r", "1"), ("o", "f")]) == CacheSplit(None, [("r", "1"), ("o", "f")])   # read only
    assert ior.split([("w", "1"), ("r", "1")]).write == [("w", "1"), ("k", "1")]


def test_long_kernel_split_for_drop_caches():
    k = LongKernel(NONCONTIG)
    s = k.split([("veclen", "8"), ("keep", "0")])
    assert k.options(s.write) == ["--veclen", "8", "--keep"]
    assert k.options(s.read) == ["--veclen", "8", "--skip-write"]
    assert k.split([("skip-write", "1")]) == CacheSplit(None, [("skip-write", "1")])     # read only
    bare = LongKernel({"kernel": "old", "options": [{"name": "file", "type": "string"}]})
    with pytest.raises(UsageError, match="old has no --keep or --skip-write"):
        bare.split([])


def test_merge_replaces_the_warm_reads():
    # MADbench: dSdC writes, invD and W read; a --skip-write job has only invD and W.
    write = {"kernel": "k", "params": {"a": 1}, "verified": True, "errors": [],
             "phases": [{"name": "dSdC", "mbs": 1}, {"name": "invD", "mbs": 999}, {"name": "rewrite", "mbs": 2},
                        {"name": "W", "mbs": 998}]}
    read = {"kernel": "k", "verified": False, "errors": [{"rank": 0}],
            "phases": [{"name": "invD", "mbs": 3}, {"name": "W", "mbs": 4}]}
    merged = merge_results(write, read)
    assert [(p["name"], p["mbs"]) for p in merged["phases"]] == [("dSdC", 1), ("rewrite", 2), ("invD", 3), ("W", 4)]
    assert merged["verified"] is False and merged["errors"] == [{"rank": 0}] and merged["params"] == {"a": 1}
    assert merge_results({"phases": [], "verified": None}, {"phases": [], "verified": True})["verified"] is True
    assert merge_results({"phases": []}, {"phases": []})["verified"] is None


def test_drop_caches(tmp_path, monkeypatch):
    target = tmp_path / "drop_caches"
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert drop_caches(target) is None and target.read_text() == "3\n"
    assert drop_caches(tmp_path / "no" / "such").startswith("cannot write")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert drop_caches(target) == "not root"
