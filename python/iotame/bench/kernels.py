"""The kernels of iotame-kernel as `iotame bench` sees them: a name, an option table, and how `--set K=V`
becomes command-line options.

Every long-option kernel describes itself (`iotame-kernel KERNEL --describe`, see options.py): `--set K=V` gives
`--K V`, and for a flag V says whether it is present (1/true/yes/on gives `--K`, 0/false/no/off nothing). `ior`
keeps IOR's short options (`-K V`, flags `-K`) from a table written here. Keys and values are checked against
the table before anything runs.

For `--drop-caches` a kernel splits a run into a write run that keeps its files and a read run on those files
(split()), so that the page cache can be dropped in between.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from ..errors import IotameError, UsageError
from ..paths import require_kernel
from ..runner import runtime_env
from .options import FALSE, TRUE, Option, parse_description

__all__ = ["Kernel", "Ior", "LongKernel", "CacheSplit", "KERNELS", "get_kernel", "kernel_names", "list_kernels",
           "describe_kernel", "parse_set", "parse_sweep", "TRUE", "FALSE"]

QUERY_TIMEOUT = 60     # seconds for `--list` and `--describe`

Settings = list[tuple[str, str]]


def parse_set(items: Sequence[str], option: str = "--set") -> Settings:
    """["b=1m", "F=1"] -> [("b", "1m"), ("F", "1")]; a later K replaces an earlier one, keeping its place."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lstrip("-")
        if not sep or not key:
            raise UsageError(f"{option} {item}: expected KEY=VALUE")
        out[key] = value
    return list(out.items())


def parse_sweep(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    """["t=64k,256k", "F=0,1"] -> [("t", ["64k", "256k"]), ("F", ["0", "1"])]."""
    sweep = []
    for key, values in parse_set(items, "--sweep"):
        vs = [v.strip() for v in values.split(",")]
        if not all(vs):
            raise UsageError(f"--sweep {key}={values}: expected KEY=V1,V2,... with no empty value")
        sweep.append((key, vs))
    return sweep


@dataclass
class CacheSplit:
    """How to run one trial with the page cache dropped before its reads: `write` (None: no write job, the
    reads use files that already exist), then drop the caches, then `read`. The phases of the read job replace
    those of the same name in the write job (a long-option kernel's `--keep` job reads too, from a warm cache)."""

    write: Settings | None
    read: Settings


class Kernel:
    """One kernel of iotame-kernel: `name`, `summary`, `table` ({name: Option}) and `file_option`, the option
    that names its file (or file prefix)."""

    name = ""
    summary = ""
    file_option = "file"
    table: dict[str, Option] = {}

    @property
    def flags(self) -> frozenset[str]:
        return frozenset(k for k, o in self.table.items() if o.type == "flag")

    def dash(self, key: str) -> str:
        return f"--{key}"

    def option(self, key: str, where: str = "--set") -> Option:
        """The option `key`, or UsageError naming the key and listing the valid ones."""
        try:
            return self.table[key]
        except KeyError:
            raise UsageError(f"{where} {key}: {self.name} has no option {key!r} "
                             f"(valid: {', '.join(self.table)})") from None

    def check(self, settings: Settings, where: str = "--set") -> None:
        """UsageError for the first unknown key or bad value."""
        for key, value in settings:
            problem = self.option(key, where).check(value)
            if problem:
                raise UsageError(f"{where} {key}={value}: {self.dash(key)} of {self.name} expects {problem}")

    def on(self, settings: Settings, key: str) -> bool:
        """Whether flag `key` is asked for in `settings`."""
        return any(k == key and str(v).strip().lower() in TRUE for k, v in settings)

    def option_args(self, key: str, value: str) -> list[str]:
        """The kernel arguments for one `--set key=value` (checked: see check())."""
        self.check([(key, value)])
        o = self.table[key]
        if o.type == "flag":
            return [self.dash(key)] if o.is_on(value) else []
        return [self.dash(key), str(value)]

    def default_options(self, settings: Settings) -> list[str]:
        """Options added before the user's, given the user's settings (none by default)."""
        return []

    def options(self, settings: Settings) -> list[str]:
        """All kernel options (after the kernel name) for these settings."""
        args = list(self.default_options(settings))
        for key, value in settings:
            args += self.option_args(key, value)
        return args

    def argv(self, program: str | Path, settings: Settings) -> list[str]:
        """`iotame-kernel NAME options…`"""
        return [str(program), self.name, *self.options(settings)]

    def split(self, settings: Settings) -> CacheSplit | None:
        """The runs for --drop-caches, or None when the run reads nothing (no cache to drop)."""
        raise NotImplementedError

    @staticmethod
    def _replace(settings: Settings, drop: set[str], add: Settings) -> Settings:
        return [(k, v) for k, v in settings if k not in drop] + list(add)


class LongKernel(Kernel):
    """A kernel with `--name value` options, built from its `--describe` output. Its standard options --file,
    --keep and --skip-write give the drop-caches split: `--keep`, then `--skip-write`."""

    def __init__(self, description: dict):
        try:
            self.name, self.summary, self.table = parse_description(description)
        except ValueError as e:
            raise IotameError(f"kernel description: {e}") from None

    def split(self, settings: Settings) -> CacheSplit:
        missing = [k for k in ("keep", "skip-write") if k not in self.table]
        if missing:
            raise UsageError(f"--drop-caches: {self.name} has no --{' or --'.join(missing)}, so its write and read "
                             "phases cannot run apart")
        if self.on(settings, "skip-write"):
            return CacheSplit(None, list(settings))
        return CacheSplit(self._replace(settings, {"keep", "skip-write"}, [("keep", "1")]),
                          self._replace(settings, {"keep", "skip-write"}, [("skip-write", "1")]))


def _ior_table() -> dict[str, Option]:
    flag = lambda name, text: Option(name, "flag", help=text)  # noqa: E731
    opts = [
        Option("a", "enum", "MPIIO", choices=["POSIX", "MPIIO"], help="API"),
        Option("b", "size", "1m", "1", help="block size: contiguous bytes per rank and segment"),
        Option("t", "size", "256k", "1", help="transfer size: bytes per request, divides -b"),
        Option("s", "integer", "1", "1", help="segments"),
        flag("F", "file per process"), flag("c", "collective I/O (MPIIO only)"),
        flag("z", "random order of the transfers within each block"), flag("e", "fsync after writing"),
        flag("C", "reorder tasks: rank r reads the data of rank (r+1)%N"), flag("w", "write"), flag("r", "read"),
        flag("W", "check the data after writing"), flag("R", "check the data while reading"),
        Option("o", "string", "iotame-ior.dat", help="file name"),
        Option("i", "integer", "1", "1", help="repetitions"), flag("k", "keep the file"),
        Option("G", "integer", "42", "0", help="data pattern seed"),
    ]
    return {o.name: o for o in opts}


class Ior(Kernel):
    """IOR's own short options for what the kernel supports (-a -b -t -s -F -c -z -e -C -w -r -W -R -o -i -k -G).
    As in IOR, neither -w nor -r means both."""

    name = "ior"
    summary = "IOR: each rank writes then reads blocks of a shared file or a file per process"
    file_option = "o"
    table = _ior_table()

    def dash(self, key: str) -> str:
        return f"-{key}"

    def default_options(self, settings: Settings) -> list[str]:
        return [] if self.on(settings, "w") or self.on(settings, "r") else ["-w", "-r"]

    def split(self, settings: Settings) -> CacheSplit | None:
        both = not (self.on(settings, "w") or self.on(settings, "r"))
        writes, reads = both or self.on(settings, "w"), both or self.on(settings, "r")
        if not reads:
            return None
        if not writes:
            return CacheSplit(None, list(settings))
        return CacheSplit(self._replace(settings, {"w", "r", "R", "k"}, [("w", "1"), ("k", "1")]),
                          self._replace(settings, {"w", "r", "W", "e", "k"}, [("r", "1")]))


KERNELS: dict[str, type[Kernel]] = {"ior": Ior}   # kernels with a table written here; the others describe themselves


@lru_cache(maxsize=64)
def _query(program: str, mtime_ns: int, args: tuple[str, ...]) -> str:
    argv = [program, *args]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=QUERY_TIMEOUT,
                           env=runtime_env(None))
    except (OSError, subprocess.TimeoutExpired) as e:
        raise IotameError(f"{' '.join(argv)}: {e}") from None
    if p.returncode != 0:
        tail = " | ".join(p.stderr.strip().splitlines()[-3:])
        raise IotameError(f"{' '.join(argv)}: exit status {p.returncode}" + (f": {tail}" if tail else ""))
    return p.stdout


def _ask(program: str | Path, *args: str) -> str:
    program = str(program)
    try:
        mtime = Path(program).stat().st_mtime_ns
    except OSError:
        mtime = 0
    return _query(program, mtime, tuple(args))


def list_kernels(program: str | Path) -> list[str]:
    """The kernels `iotame-kernel --list` names."""
    return [line.strip() for line in _ask(program, "--list").splitlines() if line.strip()]


def describe_kernel(program: str | Path, name: str) -> dict:
    """The parsed output of `iotame-kernel NAME --describe`."""
    text = _ask(program, name, "--describe")
    try:
        return json.loads(text)
    except ValueError:
        raise IotameError(f"{program} {name} --describe: not JSON: {text[:200]!r}") from None


def kernel_names(program: str | Path | None = None) -> list[str]:
    """Every kernel `iotame bench` can run: those with a table here and those the program lists."""
    names = list_kernels(program or require_kernel())
    return list(dict.fromkeys([*KERNELS, *names]))


def get_kernel(name: str, program: str | Path | None = None) -> Kernel:
    """A kernel by name: a class of KERNELS, else one that iotame-kernel (`program`, default the built one)
    lists and describes. UsageError for a kernel it does not have."""
    if name in KERNELS:
        return KERNELS[name]()
    program = program or require_kernel()
    names = kernel_names(program)
    if name not in names:
        raise UsageError(f"unknown kernel {name!r} (expected one of: {', '.join(names + ['fio'])})")
    return LongKernel(describe_kernel(program, name))
