"""Adding a collective strategy touches its own file and runtime/settings.json, nothing else
(docs/design/adding-a-strategy.md): the tree is copied into a temporary directory, a toy strategy is added there as one
new file (every collective call through the engine with one aggregator, which its own option names) and two edits of
settings.json, the runtime is built from the copy, and an IOR job under `collective.strategy` toy is served by it,
verifies its data, and leaves the file the library leaves."""
import json
import shutil
import subprocess
import sys

import pytest

from conftest import KERNEL, ROOT, file_stats, write_json

# The whole strategy: its hooks, its option (read from its own settings.json entry), its state of a handle, no model
# term (never predicted). Serves every call through the engine (collective/engine.c) with one aggregator that owns
# the accessed range.
TOY_C = r"""/* toy: every collective call through the engine with one aggregator, rank collective.toy_aggregator (modulo the
 * ranks), which owns the call's whole accessed range: the smallest strategy the engine serves (tests/preload/
 * test_adding_a_strategy.py; docs/design/adding-a-strategy.md). */
#include <errno.h>
#include <stdlib.h>

#include "strategy.h"

/* The strategy's state of a handle: its option. */
typedef struct {
    int64_t aggregator;
} toy_t;

static int toy_open(const iotame_coll_options_t *o, void **state)
{
    toy_t *t = malloc(sizeof *t);
    if (!t) return -ENOMEM;
    t->aggregator = iotame_coll_option_int(o, "toy_aggregator", 0);
    *state = t;
    return 0;
}

static void toy_close(void *state) { free(state); }

static int toy_run(iotame_coll_call_t *c)
{
    const toy_t *t = c->state;
    const iotame_coll_env_t *e = c->env;
    const int agg = (int)(t->aggregator % e->nprocs);
    const int64_t bounds[2] = {c->gmin, c->gmax};
    iotame_plan_t plan = {
        .nagg = 1,
        .agg_rank = &agg,
        .kind = IOTAME_DOMAINS_EVEN,
        .bounds = bounds,
        .window = e->cb_buffer_size < 4096 ? 4096 : e->cb_buffer_size > ((int64_t)1 << 30) ? (int64_t)1 << 30 : e->cb_buffer_size,
        .fill_holes = 1,
    };
    return iotame_coll_engine(c, &plan);
}

const iotame_strategy_t iotame_strategy_toy = {
    .name = "toy",
    .summary = "the engine with one aggregator (collective.toy_aggregator) owning the whole range",
    .number = 6,
    .options = (const char *const[]){"toy_aggregator", NULL},
    .open = toy_open,
    .close = toy_close,
    .setup = iotame_coll_engine_setup,
    .teardown = iotame_coll_engine_teardown,
    .write_all = toy_run,
    .read_all = toy_run,
    .write_at_all = toy_run,
    .read_at_all = toy_run,
};
"""

TOY_OPTION = {"type": "integer", "min": 0, "default": 0, "strategy": "toy",
              "requires": {"collective.strategy": ["auto", "toy"]},
              "doc": "toy: the rank that aggregates (modulo the ranks)"}


def _copy_tree(dest):
    """The checkout's source files as they are on disk (tracked and new ones; no build, no virtual environment)."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _add_toy(tree):
    """The toy strategy: its file, and its name and option in settings.json. Returns the paths touched."""
    toy = tree / "runtime" / "src" / "collective" / "toy.c"
    toy.write_text(TOY_C)
    settings_path = tree / "runtime" / "settings.json"
    settings = json.loads(settings_path.read_text())
    coll = settings["sections"]["collective"]["settings"]
    coll["strategy"]["values"].append("toy")
    coll["candidates"]["items"]["values"].append("toy")
    coll["toy_aggregator"] = TOY_OPTION
    settings_path.write_text(json.dumps(settings, indent=1))
    return {toy, settings_path}


@pytest.fixture(scope="module")
def toy_build(tmp_path_factory):
    if shutil.which("cmake") is None or shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs cmake and a git checkout")
    tree = tmp_path_factory.mktemp("tree")
    _copy_tree(tree)
    touched = _add_toy(tree)
    build = tree / "build"
    for cmd in (["cmake", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DIOTAME_HDF5=OFF"],
                ["cmake", "--build", build, "--target", "iotame", "-j2"]):
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, f"{' '.join(map(str, cmd))}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    return tree, touched, build / "runtime" / "libiotame.so"


def test_the_toy_touches_its_file_and_settings_alone(toy_build):
    tree, touched, _ = toy_build
    assert {p.relative_to(tree).as_posix() for p in touched} == {"runtime/src/collective/toy.c",
                                                                 "runtime/settings.json"}


def test_the_registry_lists_the_toy_at_its_number(toy_build):
    _, _, lib = toy_build
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); lib.iotame_registry.restype = ctypes.c_char_p; "
            "print(lib.iotame_registry().decode())")
    registry = json.loads(subprocess.run([sys.executable, "-c", code, str(lib)], capture_output=True, text=True,
                                         check=True).stdout)
    (coll,) = [m for m in registry["modules"] if m["name"] == "collective"]
    by_name = {s["name"]: s for s in coll["strategies"]}
    assert [s["name"] for s in coll["strategies"]][:6] == ["passthrough", "two_phase", "node_local", "target_aligned",
                                                           "independent", "view_based"]  # the old numbers kept
    assert by_name["toy"] == {"name": "toy", "number": 6, "model": None, "options": ["toy_aggregator"]}


def test_the_toy_serves_an_ior_job(toy_build, job):
    _, _, lib = toy_build
    config = write_json(job.tmp / "toy.json", {"version": 1, "files": [
        {"match": "*/toy.dat", "collective": {"strategy": "toy", "toy_aggregator": 1}}]})
    stats = job.tmp / "stats.json"
    ior = ["-a", "MPIIO", "-c", "-w", "-r", "-W", "-R", "-b", "64k", "-t", "16k", "-s", "3", "-k"]
    env = {"LD_PRELOAD": str(lib), "IOTAME_CONFIG": str(config), "IOTAME_STATS": str(stats)}
    p = job.run(2, [KERNEL, "ior", *ior, "-o", job.tmp / "toy.dat"], extra_env=env)
    result = json.loads(p.stdout)
    assert result["verified"] is True
    served = file_stats(stats, "toy.dat")["strategies"]
    assert set(served) == {"toy"}
    # every collective call: the write, its check (-W) and the read, each 3 segments of 4 transfers, on 2 ranks
    assert served["toy"]["calls"] == 3 * 3 * 4
    assert served["toy"]["bytes"] == 3 * 2 * 3 * 65536
    assert "offset_list_bytes" in served["toy"]  # an engine strategy's
    # the library's own file of the same job, byte for byte
    job.run(2, [KERNEL, "ior", *ior, "-o", job.tmp / "ref.dat"])
    assert (job.tmp / "toy.dat").read_bytes() == (job.tmp / "ref.dat").read_bytes()
