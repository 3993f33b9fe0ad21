"""The kernels of iotame-kernel as `iotame bench` sees them: a name and how `--set K=V` becomes options.

Mapping: a one-letter K gives `-K V` (IOR's short options), a longer K gives `--K V`. For a flag (an option
without a value) V says whether it is present: 1/true/yes/on gives `-K`, 0/false/no/off gives nothing.
Adding a kernel: subclass Kernel, set `name` and `flags`, register it in KERNELS.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import UsageError

__all__ = ["Kernel", "Ior", "KERNELS", "get_kernel", "parse_set", "TRUE", "FALSE"]

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def parse_set(items: Sequence[str], option: str = "--set") -> list[tuple[str, str]]:
    """["b=1m", "F=1"] -> [("b", "1m"), ("F", "1")]; a later K replaces an earlier one, keeping its place."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"{option} {item}: expected KEY=VALUE")
        out[key.lstrip("-")] = value
    return list(out.items())


class Kernel:
    """One kernel of iotame-kernel. `flags` are its options that take no value."""

    name = ""
    flags: frozenset[str] = frozenset()
    doc = ""

    @staticmethod
    def dash(key: str) -> str:
        return f"-{key}" if len(key) == 1 else f"--{key}"

    def option_args(self, key: str, value: str) -> list[str]:
        """The kernel arguments for one `--set key=value`."""
        if key in self.flags:
            v = value.strip().lower()
            if v in TRUE:
                return [self.dash(key)]
            if v in FALSE:
                return []
            raise UsageError(f"--set {key}={value}: {self.dash(key)} is a flag of {self.name}; give 1 or 0")
        return [self.dash(key), value]

    def default_options(self, settings: Sequence[tuple[str, str]]) -> list[str]:
        """Options added before the user's, given the user's settings (none by default)."""
        return []

    def options(self, settings: Sequence[tuple[str, str]]) -> list[str]:
        """All kernel options (after the kernel name) for these settings."""
        args = list(self.default_options(settings))
        for key, value in settings:
            args += self.option_args(key, value)
        return args

    def argv(self, program: str, settings: Sequence[tuple[str, str]]) -> list[str]:
        """`iotame-kernel NAME options…`"""
        return [str(program), self.name, *self.options(settings)]


class Ior(Kernel):
    """IOR's own short options for what the kernel supports (-a -b -t -s -F -c -w -r -W -R -e -z -C -o)."""

    name = "ior"
    flags = frozenset("FcwrWRezC")
    doc = "IOR: each rank writes then reads blocks of a shared file or a file per process"

    def default_options(self, settings: Sequence[tuple[str, str]]) -> list[str]:
        # As IOR does: neither -w nor -r asked for means both.
        keys = {k for k, _ in settings}
        return [] if keys & {"w", "r"} else ["-w", "-r"]


KERNELS: dict[str, type[Kernel]] = {"ior": Ior}


def get_kernel(name: str) -> Kernel:
    """A kernel by name (see KERNELS)."""
    try:
        return KERNELS[name]()
    except KeyError:
        raise UsageError(f"unknown kernel {name!r} (expected one of: {', '.join(KERNELS)})") from None
