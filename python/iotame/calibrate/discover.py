"""Which machine profile applies to a data file: the rule the runtime follows (runtime/src/collective/, documented
in docs/calibrate.md, "Where the runtime finds the profile"), so that `iotame calibrate` writes where it is found
and `iotame info` says what the runtime would use.

1. the setting `collective.profile`, a profile file or a directory of profiles;
2. else $IOTAME_PROFILE, the same;
3. else the directories $XDG_CONFIG_HOME/iotame/profiles ($HOME/.config when unset) and
   <prefix>/share/iotame/profiles, <prefix> the parent of the directory holding libiotame.so.

In a directory, its `*.json` files in name order (bytes); the first valid profile that matches is used. A named
file is used only when valid and matching, else refused; the job then runs without a profile (no fallback).
A profile matches when its filesystem.magic is the statfs type of the directory holding the data file and either its
filesystem.device is that directory's st_dev or the file lies under its filesystem.path (network file systems,
whose device numbers differ from one client mount to another)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from ..paths import lib_path as located_lib_path
from .filesystem import _statfs
from .profile import ProfileError, load_profile

__all__ = ["ENV_PROFILE", "SETTING", "profile_dirs", "user_profile_dir", "default_profile_path", "profile_sources",
           "considered_profiles", "DEFAULT_SOURCE", "find_profile", "matches", "discovery_report"]

ENV_PROFILE = "IOTAME_PROFILE"
SETTING = "collective.profile"
DEFAULT_SOURCE = "default directories"


@dataclass(frozen=True)
class DataFs:
    """The file system of the directory holding a data file, as a profile is matched against it."""

    path: str            # the directory, absolute with symbolic links resolved
    magic: int           # statfs f_type
    device: tuple[int, int]

    def describe(self) -> str:
        return f"magic 0x{self.magic:x}, device {self.device[0]}:{self.device[1]}"


def user_profile_dir(env: Mapping[str, str] = os.environ) -> Path | None:
    """$XDG_CONFIG_HOME/iotame/profiles ($HOME/.config when XDG_CONFIG_HOME is unset or empty); None without
    either variable."""
    base = env.get("XDG_CONFIG_HOME") or (str(Path(env["HOME"]) / ".config") if env.get("HOME") else None)
    return Path(base) / "iotame" / "profiles" if base else None


def default_profile_path(profile: dict, env: Mapping[str, str] = os.environ) -> Path | None:
    """Where `iotame calibrate` puts a profile without --out: user_profile_dir()/<type>-<major>_<minor>.json, the
    type name reduced to letters, digits, `.`, `_` and `-` (ext2/ext3 -> ext2_ext3); on a striping file system
    <type>-<major>_<minor>-<targets>x<unit>.json (ceph-0_55-6x64K.json), so that a layout calibrated in its own
    directory does not replace another's. None without a user directory."""
    directory = user_profile_dir(env)
    if directory is None:
        return None
    fs = profile["filesystem"]
    kind = re.sub(r"[^A-Za-z0-9._-]+", "_", fs["type"]).strip("_.") or "unknown"
    unit = int(fs.get("stripe_unit") or 0)
    layout = ""
    if unit > 0:
        size = next((f"{unit >> shift}{suffix}" for shift, suffix in ((30, "G"), (20, "M"), (10, "K"))
                     if unit % (1 << shift) == 0), str(unit))
        layout = f"-{int(fs.get('targets') or 1)}x{size}"
    return directory / f"{kind}-{fs['device'].replace(':', '_')}{layout}.json"


def profile_dirs(lib_path: str | os.PathLike | None = None, env: Mapping[str, str] = os.environ) -> list[Path]:
    """The directories searched when neither the setting nor $IOTAME_PROFILE names a profile, in order (they may
    not exist): the user's, then the runtime's <prefix>/share/iotame/profiles (libiotame.so's, paths.lib_path()
    when `lib_path` is None)."""
    if lib_path is None:
        lib_path = located_lib_path()
    user = user_profile_dir(env)
    libdir = Path(os.path.realpath(lib_path)).parent
    if libdir.parent.name in ("lib", "lib64") and libdir.name not in ("lib", "lib64"):
        libdir = libdir.parent  # a multiarch libdir (lib/x86_64-linux-gnu) is still the prefix's lib
    prefix = libdir.parent
    return ([user] if user else []) + [prefix / "share" / "iotame" / "profiles"]


def profile_sources(setting: str | None = None, env: Mapping[str, str] = os.environ,
                    lib_path: str | os.PathLike | None = None) -> tuple[list[Path], str]:
    """(paths searched, where they come from): the setting's, else $IOTAME_PROFILE's (a file or a directory,
    alone), else profile_dirs()."""
    if setting:
        return [Path(setting)], SETTING
    if env.get(ENV_PROFILE):
        return [Path(env[ENV_PROFILE])], ENV_PROFILE
    return profile_dirs(lib_path, env), DEFAULT_SOURCE


def _discover_data_fs(data_dir: str | os.PathLike) -> DataFs:
    """The identity of `data_dir`'s file system; OSError when it cannot be stat'ed."""
    path = os.path.realpath(data_dir)
    st = os.stat(path)
    _, magic = _statfs(Path(path))
    return DataFs(path, magic, (os.major(st.st_dev), os.minor(st.st_dev)))


def _discover_device(text: str) -> tuple[int, int] | None:
    m = re.fullmatch(r"(\d+):(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _discover_under(path: str, top: str) -> bool:
    """Whether `path` is `top` or lies below it (whole components: /scratch2 is not under /scratch)."""
    top = os.path.normpath(top)
    return path == top or path.startswith(top.rstrip("/") + "/")


def _discover_mismatch(profile: dict, data: DataFs) -> str | None:
    fs = profile["filesystem"]
    magic, device = int(fs["magic"], 16), _discover_device(fs["device"])
    if magic == data.magic and (device == data.device or _discover_under(data.path, fs["path"])):
        return None
    return (f"filesystem: expected the file system of {data.path} ({data.describe()}), "
            f"got magic 0x{magic:x} device {fs['device']}")


def matches(profile: dict, data_dir: str | os.PathLike) -> str | None:
    """None when the valid profile `profile` applies to files in `data_dir`, else why not (the line after
    `iotame: profile FILE: `), also when `data_dir` cannot be stat'ed."""
    try:
        data = _discover_data_fs(data_dir)
    except OSError as e:
        return f"filesystem: cannot stat {data_dir}: {e.strerror or e}"
    return _discover_mismatch(profile, data)


def _discover_nearness(profile: dict, data: DataFs) -> int:
    """How near the profile's filesystem.path is to `data`: its length when `data` is that directory or lies below
    it, else 0 (the runtime's profile_find_nearness)."""
    top = os.path.normpath(profile["filesystem"]["path"])
    return len(top) if _discover_under(data.path, top) else 0


def _discover_check(path: Path, data: DataFs) -> tuple[str | None, int]:
    """(None when the file `path` is a valid profile matching `data`, else the refusal line(s); its nearness)."""
    try:
        profile = load_profile(path)
    except ProfileError as e:
        return "\n".join(e.errors), 0
    problem = _discover_mismatch(profile, data)
    return (None, _discover_nearness(profile, data)) if problem is None else (f"iotame: profile {path}: {problem}", 0)


def _discover_files(directory: Path) -> list[Path]:
    """The `*.json` files of a directory (not hidden ones), in byte order of their names."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    names = [n for n in names if n.endswith(".json") and not n.startswith(".")]
    return [directory / n for n in sorted(names, key=os.fsencode) if (directory / n).is_file()]


def considered_profiles(data_dir: str | os.PathLike, setting: str | None = None,
                        env: Mapping[str, str] = os.environ,
                        lib_path: str | os.PathLike | None = None) -> Iterator[tuple[Path, str | None]]:
    """(profile file, None when it would be used else why not) as the rule tries them: the sources in order, a
    directory's files in name order, the one used last. In a directory, of the valid profiles that match, the one
    whose filesystem.path is the deepest directory above the data is used (the first of equally near ones).
    OSError when `data_dir` cannot be stat'ed."""
    data = _discover_data_fs(data_dir)
    paths, source = profile_sources(setting, env, lib_path)
    for path in paths:
        named_file = source != DEFAULT_SOURCE and not path.is_dir()
        checked = [(c, *_discover_check(c, data)) for c in ([path] if named_file else _discover_files(path))]
        fits = [(c, near) for c, problem, near in checked if problem is None]
        used, _ = max(fits, key=lambda f: f[1], default=(None, 0))   # max keeps the first of equal ones
        for candidate, problem, _ in checked:
            if candidate != used:
                yield candidate, problem or (f"iotame: profile {candidate}: filesystem.path: a profile of a "
                                             f"directory nearer {data.path} applies: {used}")
        if used is not None:
            yield used, None
            return


def _discover_data_dir(data_path: Path) -> Path:
    """The directory holding a data file; a directory stands for a file in it."""
    return data_path if data_path.is_dir() else data_path.parent


def _discover_search(data_path: str | os.PathLike, setting: str | None, env: Mapping[str, str],
                     lib_path: str | os.PathLike | None) -> tuple[Path | None, str, list[tuple[Path, str | None]]]:
    """find_profile()'s answer and the files tried (considered_profiles())."""
    data_dir = _discover_data_dir(Path(data_path).absolute())
    paths, source = profile_sources(setting, env, lib_path)
    try:
        data = _discover_data_fs(data_dir)
        tried = list(considered_profiles(data_dir, setting, env, lib_path))
    except OSError as e:
        return None, f"cannot stat {data_dir}: {e.strerror or e}", []
    if tried and tried[-1][1] is None:
        used = tried[-1][0]
        how = f"named by {source}" if used in paths else f"the nearest in {used.parent} ({source})"
        return used, f"{used}: {how} that matches the file system of {data.path} ({data.describe()})", tried
    if source != DEFAULT_SOURCE and not paths[0].is_dir():
        return None, tried[0][1], tried
    where = " and ".join(str(p) for p in paths)
    return None, (f"no profile in {where} ({source}) matches the file system of {data.path} ({data.describe()}); "
                  f"{len(tried)} profile file(s) there"), tried


def find_profile(data_path: str | os.PathLike, setting: str | None = None, env: Mapping[str, str] = os.environ,
                 lib_path: str | os.PathLike | None = None) -> tuple[Path | None, str]:
    """(the profile the runtime uses for the data file `data_path`, or None; why). `data_path` need not exist;
    an existing directory stands for a file in it. `setting` is collective.profile's value when given."""
    used, reason, _ = _discover_search(data_path, setting, env, lib_path)
    return used, reason


def discovery_report(data_dir: str | os.PathLike, setting: str | None = None, env: Mapping[str, str] = os.environ,
                     lib_path: str | os.PathLike | None = None) -> dict:
    """What `iotame info --json` prints under "profile": the paths searched and where they come from, and for a
    file in `data_dir` the profile used (or null), why, and every profile file tried up to it with why not."""
    paths, source = profile_sources(setting, env, lib_path)
    used, reason, tried = _discover_search(data_dir, setting, env, lib_path)
    return {"source": source,
            "searched": [{"path": str(p), "exists": p.exists()} for p in paths],
            "dir": str(Path(data_dir).absolute()),
            "used": str(used) if used else None,
            "reason": reason,
            "considered": [{"path": str(p), "problem": problem} for p, problem in tried]}
