"""The identity of the file system holding a directory, as a machine profile keys it: statfs type name and magic
(`stat -f`), the device (st_dev as major:minor), the path, and the layout a new file there gets (targets, stripe
unit) from CephFS's or Lustre's layout attributes when present, else 1 target and unit 0."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..tune.fsdetect import mount_type

__all__ = ["fs_identity", "ceph_layout", "lustre_layout", "parse_stat_f"]

LUSTRE_MAGIC = 0x0BD00BD0
CEPH_MAGIC = 0x00C36400


def parse_stat_f(text: str) -> tuple[str, int] | None:
    """(type name, magic) from `stat -f -c '%T %t'` output such as `ext2/ext3 ef53` or `UNKNOWN (0xbd00bd0) bd00bd0`."""
    fields = text.split()
    if len(fields) < 2:
        return None
    try:
        magic = int(fields[-1], 16)
    except ValueError:
        return None
    return " ".join(fields[:-1]), magic


def _statfs(path: Path) -> tuple[str | None, int]:
    try:
        p = subprocess.run(["stat", "-f", "-c", "%T %t", str(path)], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None, 0
    parsed = parse_stat_f(p.stdout) if p.returncode == 0 else None
    return parsed if parsed else (None, 0)


def ceph_layout(path: Path, getxattr=os.getxattr) -> tuple[int, int] | None:
    """(stripe count, stripe unit) from CephFS's virtual attributes ceph.file.layout.* (ceph.dir.layout.* for a
    directory), or None when there are none."""
    kind = "dir" if Path(path).is_dir() else "file"
    try:
        count = int(getxattr(path, f"ceph.{kind}.layout.stripe_count"))
        unit = int(getxattr(path, f"ceph.{kind}.layout.stripe_unit"))
    except (OSError, ValueError):
        return None
    return max(count, 1), unit


def lustre_layout(path: Path, run=subprocess.run) -> tuple[int, int] | None:
    """(stripe count, stripe size) from `lfs getstripe -c` and `-S` (with -d for a directory's default layout),
    or None. A count of -1 (every OST) is returned as the number of OSTs `lfs df` lists."""
    if shutil.which("lfs") is None and run is subprocess.run:
        return None
    default = ["-d"] if Path(path).is_dir() else []
    try:
        count = run(["lfs", "getstripe", *default, "-c", str(path)], capture_output=True, text=True, timeout=30)
        size = run(["lfs", "getstripe", *default, "-S", str(path)], capture_output=True, text=True, timeout=30)
        stripes, unit = int(count.stdout.split()[0]), int(size.stdout.split()[0])
        if stripes == -1:
            df = run(["lfs", "df", str(path)], capture_output=True, text=True, timeout=30)
            stripes = sum(1 for line in df.stdout.splitlines() if "[OST:" in line)
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    return max(stripes, 1), unit


def _new_file_layout(directory: Path, layout) -> tuple[int, int] | None:
    """The layout a new file in `directory` gets (Lustre and CephFS fix it at creation), from an empty probe file;
    the directory's default layout when no file can be made."""
    probe = directory / f".iotame-calibrate-layout-{os.getpid()}"
    try:
        probe.touch()
    except OSError:
        return layout(directory)
    try:
        return layout(probe) or layout(directory)
    finally:
        probe.unlink(missing_ok=True)


def fs_identity(directory: str | os.PathLike) -> dict:
    """The `filesystem` section of a profile for the file system holding `directory`."""
    path = Path(directory).resolve()
    name, magic = _statfs(path)
    mounted = mount_type(path) or ""
    name = name or mounted or "unknown"
    st = os.stat(path)
    layout, source = None, None
    if magic == CEPH_MAGIC or "ceph" in name.lower() or "ceph" in mounted.lower():  # ceph-fuse: statfs says fuse
        layout, source = _new_file_layout(path, ceph_layout), "ceph.file.layout of a new file"
    elif magic == LUSTRE_MAGIC or "lustre" in name.lower():
        layout, source = _new_file_layout(path, lustre_layout), "lfs getstripe of a new file"
    targets, unit = layout if layout else (1, 0)
    return {"path": str(path), "type": name, "magic": f"0x{magic:x}", "mount_type": mounted or None,
            "device": f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", "targets": targets, "stripe_unit": unit,
            "layout_from": source if layout else "none (1 target, no striping)"}
