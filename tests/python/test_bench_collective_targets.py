"""bench/collective.py's judgment of the issue's targets: the ratio of medians, its paired bootstrap interval, and
whether a miss lies beyond the noise of the trials."""
import math

import pytest

from .scripts import load_script



@pytest.fixture(scope="module")
def bench():
    return load_script("bench/collective.py", "bench_collective")


def trials(config, write, read):
    return [{"case": "noncontig-64B", "ranks": 2, "config": config, "repeat": i + 1, "write_mbs": w, "read_mbs": r}
            for i, (w, r) in enumerate(zip(write, read))]


def test_identical_cells_have_a_ratio_of_one_and_no_spread(bench):
    a = {1: 100.0, 2: 120.0, 3: 90.0, 4: 110.0}
    assert bench.ratio_interval(a, dict(a)) == (1.0, 1.0, 1.0)


def test_a_paired_drift_does_not_widen_the_interval(bench):
    """The machine slows down from repeat to repeat; auto is 0.8 of the reference in every repeat."""
    ref = {k: 1000.0 / k for k in range(1, 7)}
    auto = {k: 0.8 * v for k, v in ref.items()}
    r, lo, hi = bench.ratio_interval(auto, ref)
    assert math.isclose(r, 0.8) and math.isclose(lo, 0.8) and math.isclose(hi, 0.8)


def test_too_few_common_repeats_give_no_interval(bench):
    r, lo, hi = bench.ratio_interval({1: 50.0, 2: 60.0}, {1: 100.0, 2: 100.0, 3: 100.0})
    assert math.isclose(r, 0.55) and math.isnan(lo) and math.isnan(hi)


def test_targets_tell_a_miss_beyond_the_noise_from_one_within_it(bench):
    """Writes: auto is 0.7 of independent in every repeat (a real miss). Reads: auto's median is below the target
    but its repeats overlap the reference's (within the noise)."""
    runs = (trials("default", [300] * 5, [500, 520, 480, 510, 490])
            + trials("independent", [1000, 1010, 990, 1005, 995], [1000, 400, 1600, 900, 1100])
            + trials("cb_disable", [1000, 1010, 990, 1005, 995], [1000, 1000, 1000, 1000, 1000])
            + trials("auto", [700, 707, 693, 703, 696], [1200, 500, 900, 1300, 600]))
    table, counts = bench.target_table(runs)
    write, read = [line for line in table.splitlines() if "| noncontig-64B |" in line]
    assert "0.70** [0.70-0.70] (independent)" in write and "0.70** [0.70-0.70] (cb_disable)" in write
    assert "2.33 [" in write                                        # 2 x default on 64-byte chunks: met
    assert "~" in read.split("|")[4] and "**" not in read
    assert counts["met"] + counts["missed"] + counts["noise"] == 6 and counts["missed"] == 2


def test_a_baseline_library_is_compared_configuration_by_configuration(bench):
    """--baseline: each configuration against its run with the other library, in the same repeats; configurations
    without a baseline run (default: no preload) get no column."""
    runs = (trials("default", [300] * 4, [500] * 4)
            + trials("auto", [600, 660, 540, 600], [1000] * 4)
            + trials("auto@baseline", [300, 330, 270, 300], [1000] * 4))
    table = bench.baseline_table(runs).splitlines()
    assert table[0] == "| ranks | case | op | auto / auto@baseline |"
    assert table[2:] == ["| 2 | noncontig-64B | write | 2.00 [2.00-2.00] |",
                         "| 2 | noncontig-64B | read | 1.00 [1.00-1.00] |"]
    assert bench.baseline_table(trials("auto", [1] * 3, [1] * 3)) == ""
