"""Keeping a virtual machine's memory backed while a benchmark measures.

A virtual machine whose balloon device reports free pages to its host (Linux free page reporting, as on the
Firecracker machines we develop on) gives every page it frees back to the host, and touching the page again costs
a page fault in the host. A page cache filled after `drop_caches` is such fresh memory, so a write or a read that
fills the page cache measures the host's page faults as much as the I/O stack. Measured here (touching 8 GiB of
fresh memory): 0.49 GiB/s after 30 s idle, 1.2 to 1.3 right after another touch, 2.4 with reporting off and the
memory touched once; the first trial of a run was the slow one. HPC nodes report no free pages.

`steady_memory()` turns reporting off for the benchmark (`page_reporting_order` above the largest order of the
buddy allocator: no free block qualifies), touches the free memory once so that every page is backed, and puts the
order back at the end. It needs root and a kernel with free page reporting; elsewhere it does nothing and says why.
"""
from __future__ import annotations

import contextlib
import mmap
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["REPORTING_ORDER", "steady_memory", "touch_memory"]

REPORTING_ORDER = Path("/sys/module/page_reporting/parameters/page_reporting_order")
BUDDYINFO = Path("/proc/buddyinfo")
MEMINFO = Path("/proc/meminfo")
MARGIN = 2 << 30  # what the touch leaves free: the benchmark's own processes run meanwhile
CHUNK = 64 << 20


def touch_memory(size: int) -> None:
    """Writes every page of `size` bytes of fresh anonymous memory once, then frees it."""
    if size <= 0:
        return
    with mmap.mmap(-1, size) as m:
        ones = b"\1" * CHUNK
        for off in range(0, size, CHUNK):
            n = min(CHUNK, size - off)
            m[off:off + n] = ones[:n]


def _free_bytes(meminfo: Path) -> int:
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemFree:"):
            return int(line.split()[1]) * 1024
    raise ValueError(f"{meminfo}: no MemFree line")


def _orders(buddyinfo: Path) -> int:
    """How many block orders the buddy allocator has (the counts per order of the first zone)."""
    first = buddyinfo.read_text().splitlines()[0].split()
    return len(first) - 4  # "Node 0, zone DMA" then one count per order


@contextlib.contextmanager
def steady_memory(order_path: Path = REPORTING_ORDER, buddyinfo: Path = BUDDYINFO, meminfo: Path = MEMINFO,
                  touch: Callable[[int], None] = touch_memory) -> Iterator[str]:
    """Within the block free pages stay with this machine; yields what was done (or why not), for the report."""
    if not order_path.exists():
        yield "free page reporting: none on this machine"
        return
    try:
        before = order_path.read_text().strip()
        off = str(_orders(buddyinfo))
        order_path.write_text(off + "\n")
    except (OSError, ValueError, IndexError) as e:
        yield f"free page reporting left on ({order_path}: {getattr(e, 'strerror', None) or e})"
        return
    try:
        size = max(0, _free_bytes(meminfo) - MARGIN)
        touch(size)
        yield f"free page reporting off ({order_path.name} {before} -> {off}), {size >> 30} GiB touched once"
    finally:
        with contextlib.suppress(OSError):
            order_path.write_text(before + "\n")
