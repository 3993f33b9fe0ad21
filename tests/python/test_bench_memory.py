"""bench/memory.py: free page reporting turned off for a benchmark, the memory touched once, the order put back."""
from __future__ import annotations

import pytest

from iotame.bench.memory import steady_memory

BUDDY = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n" \
        "Node 0, zone   Normal    938   1490   1373   1807   1953   1562   1213    996    824    742   3791 \n"


@pytest.fixture
def machine(tmp_path):
    order, buddy, meminfo = tmp_path / "page_reporting_order", tmp_path / "buddyinfo", tmp_path / "meminfo"
    order.write_text("9\n")
    buddy.write_text(BUDDY)
    meminfo.write_text("MemTotal:       24684084 kB\nMemFree:        10485760 kB\nMemAvailable:   9000000 kB\n")
    return order, buddy, meminfo


def test_reporting_is_off_within_the_block_and_back_after_it(machine):
    order, buddy, meminfo = machine
    touched = []
    with steady_memory(order, buddy, meminfo, touched.append) as note:
        assert order.read_text().strip() == "11"  # orders 0..10: no free block reaches order 11
        assert touched == [(10 << 30) - (2 << 30)]  # MemFree less the margin
        assert "off" in note and "9 -> 11" in note and "8 GiB" in note
    assert order.read_text().strip() == "9"


def test_the_order_is_put_back_when_the_benchmark_fails(machine):
    order, buddy, meminfo = machine
    with pytest.raises(RuntimeError):
        with steady_memory(order, buddy, meminfo, lambda n: None):
            raise RuntimeError("a trial failed")
    assert order.read_text().strip() == "9"


def test_a_machine_without_reporting_is_left_alone(tmp_path):
    touched = []
    with steady_memory(tmp_path / "none", tmp_path / "b", tmp_path / "m", touched.append) as note:
        assert "none" in note
    assert touched == []


def test_an_unreadable_buddy_allocator_leaves_reporting_on(machine, tmp_path):
    order, buddy, meminfo = machine
    touched = []
    with steady_memory(order, tmp_path / "no-buddyinfo", meminfo, touched.append) as note:
        assert "left on" in note
    assert order.read_text().strip() == "9" and touched == []
