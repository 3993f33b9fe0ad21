"""Which file system a directory is on: lustre, gpfs, cephfs, or local (anything else), from /proc/mounts (the
longest mount point holding the directory) and, failing that, `stat -f -c %T DIR`."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["detect_fs", "fs_of_type", "mount_type"]

# stat -f prints the name, or "UNKNOWN (0xMAGIC)" when it does not know it
_MAGIC = {"0x0bd00bd0": "lustre", "0xbd00bd0": "lustre", "0x47504653": "gpfs", "0x00c36400": "cephfs",
          "0xc36400": "cephfs"}
# CephFS's clients as /proc/mounts names them: the kernel's, and ceph-fuse (FUSE's "fuse.<program>"); stat -f
# calls a FUSE mount "fuseblk" or "fuse" whatever program serves it, so only /proc/mounts tells ceph-fuse apart.
_CEPHFS = ("ceph", "fuse.ceph-fuse", "fuse.ceph")


def fs_of_type(fstype: str) -> str:
    """lustre, gpfs, cephfs or local for a file-system type name (`lustre`, `gpfs`, `fuse.ceph-fuse`, `ext2/ext3`,
    `UNKNOWN (0x47504653)`)."""
    t = fstype.strip().lower()
    for magic, name in _MAGIC.items():
        if magic in t:
            return name
    if t in _CEPHFS:
        return "cephfs"
    if "lustre" in t:
        return "lustre"
    if "gpfs" in t or "spectrum" in t:
        return "gpfs"
    return "local"


def _unescape(field: str) -> str:
    """/proc/mounts escapes spaces and the like as octal (\\040)."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def mount_type(path: str | Path, mounts: str | None = None) -> str | None:
    """The type of the mount holding `path` per /proc/mounts (or the given text), None when unknown: the longest mount
    point over it, and of mounts on the same point the last (the one on top, e.g. ceph-fuse over a directory of the
    root file system)."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text()
        except OSError:
            return None
    target = os.path.realpath(path)
    best, best_type = -1, None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = _unescape(fields[1])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= best:
            best, best_type = len(point), fields[2]
    return best_type


def detect_fs(path: str | Path = ".", mounts: str | None = None) -> str:
    """lustre, gpfs, cephfs or local for the file system holding `path`."""
    t = mount_type(path, mounts)
    if t is not None and fs_of_type(t) != "local":
        return fs_of_type(t)
    if mounts is None:
        try:
            out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True, timeout=10)
            if out.returncode == 0:
                return fs_of_type(out.stdout)
        except (OSError, subprocess.TimeoutExpired):
            pass
    return "local" if t is None else fs_of_type(t)
