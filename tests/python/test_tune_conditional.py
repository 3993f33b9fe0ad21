"""The conditional space: settings.json's "requires" says which setting acts through which; the tuner draws a setting
only where it can act, writes only those into a configuration, and never credits an inactive setting with a gain."""
import copy
import json
from pathlib import Path

import optuna
import pytest

from iotame.errors import IotameError
from iotame.settings import load_schema, schema_from_dict
from iotame.tune.ablation import ablate, effect_line
from iotame.tune.builtin import builtin_space
from iotame.tune.measure import RunOutcome
from iotame.tune.samplers import SAMPLERS, get_sampler
from iotame.tune.space import UNSET, Space, apply_base

from .test_tune_study import job, knowledge_env  # noqa: F401 (fixtures: the stand-in job)

STAGING_WRITE_BEHIND = ("cache_mb", "flush_threshold", "flush_delay_ms", "sync_on_close")


@pytest.fixture(scope="module")
def raw():
    return json.loads(load_schema().path.read_text())


def _staging(config: dict) -> dict:
    return (config.get("defaults") or {}).get("staging") or {}


def _hints(config: dict) -> dict:
    return (config.get("defaults") or {}).get("mpiio_hints") or {}


# ---- settings.json ----

def test_settings_json_declares_what_acts_through_what():
    s = load_schema().sections
    staging = s["staging"].settings
    for name in ("flush_threshold", "flush_delay_ms", "sync_on_close"):
        assert staging[name].requires == (("staging", "enabled", (True, "auto")),)
    # the area serves prefetching too: it acts when either is on
    assert staging["cache_mb"].requires == (("staging", "enabled", (True, "auto")), ("staging", "prefetch", (True,)))
    assert staging["prefetch_kb"].requires == (("staging", "prefetch", (True,)),)
    assert not staging["enabled"].requires and not staging["prefetch"].requires
    hints = s["mpiio_hints"].settings
    sieving = ("enable", "automatic", "unset")
    assert hints["ind_wr_buffer_size"].requires == (("mpiio_hints", "romio_ds_write", sieving),)
    assert ("mpiio_hints", "romio_cb_write", ("enable", "automatic", "unset")) in hints["cb_nodes"].requires
    assert all(r[:2] == ("throttle", n) for r, n in zip(s["throttle"].settings["tolerance"].requires,
                                                         ("readers", "writers")))
    assert s["collective"].settings["exam_calls"].requires == (("collective", "strategy", ("auto",)),)


@pytest.mark.parametrize("change, message", [
    (lambda st: st["staging"]["settings"]["cache_mb"].update(requires={"staging.enabeld": [True]}),
     "sections.staging.settings.cache_mb.requires.staging.enabeld: no such setting"),
    (lambda st: st["staging"]["settings"]["cache_mb"].update(requires={"staging.enabled": ["true"]}),
     'sections.staging.settings.cache_mb.requires.staging.enabled: "true" is not a value of staging.enabled'),
    (lambda st: st["staging"]["settings"]["cache_mb"].update(requires={"staging.enabled": ["unset"]}),
     'sections.staging.settings.cache_mb.requires.staging.enabled: "unset" is not a value'),
    (lambda st: st["mpiio_hints"]["settings"]["cb_nodes"].update(requires={"mpiio_hints.romio_cb_write": ["off"]}),
     '"off" is not a value of mpiio_hints.romio_cb_write'),
    (lambda st: st["staging"]["settings"]["cache_mb"].update(requires={"staging.enabled": []}),
     "sections.staging.settings.cache_mb.requires.staging.enabled: expected a non-empty list of values"),
    (lambda st: st["staging"]["settings"]["cache_mb"].update(requires={"enabled": [True]}),
     'sections.staging.settings.cache_mb.requires: "enabled": expected "section.setting"'),
    (lambda st: st["staging"]["settings"]["enabled"].update(requires={"staging.cache_mb": [64]}),
     "sections.staging.settings.enabled.requires: it requires itself"),
])
def test_a_bad_requires_is_refused_naming_the_setting(raw, change, message):
    d = copy.deepcopy(raw)
    change(d["sections"])
    with pytest.raises(IotameError) as e:
        schema_from_dict(d, Path("settings.json"))
    assert message in str(e.value) and "settings.json" in str(e.value)


# ---- the space ----

def _space(nprocs=2) -> Space:
    return builtin_space("local", nprocs)


def test_canonical_leaves_out_what_cannot_act():
    space = _space()
    point = {"iotame.staging.enabled": False, "iotame.staging.flush_delay_ms": 20, "iotame.staging.prefetch": False,
             "iotame.staging.cache_mb": 64, "mpiio.romio_ds_write": "disable", "mpiio.ind_wr_buffer_size": 65536,
             "mpiio.romio_cb_write": "disable", "mpiio.cb_buffer_size": 1048576}
    # staging off (False is its default: not written either), its settings with it; sieving off, its buffer too;
    # cb_buffer_size still acts through collective reads (romio_cb_read unset: the library's automatic)
    assert space.config(point)["defaults"] == {"mpiio_hints": {"romio_ds_write": "disable",
                                                               "romio_cb_write": "disable",
                                                               "cb_buffer_size": 1048576}}
    on = space.config({**point, "iotame.staging.prefetch": True})["defaults"]["staging"]
    assert on == {"prefetch": True, "cache_mb": 64}          # the area serves the prefetcher
    both = {**point, "mpiio.romio_cb_read": "disable"}
    assert "cb_buffer_size" not in _hints(space.config(both))
    assert _hints(space.config({**both, "iotame.collective.strategy": "two_phase"}))["cb_buffer_size"] == 1048576
    assert sorted(space.inactive(point)) == ["iotame.staging.cache_mb", "iotame.staging.flush_delay_ms",
                                             "mpiio.ind_wr_buffer_size"]


def test_a_base_configuration_decides_what_can_act():
    space = _space()
    point = {"iotame.staging.flush_delay_ms": 20}
    assert "staging" not in (space.config(point).get("defaults") or {})
    over = apply_base(space, {"version": 1, "defaults": {"staging": {"enabled": True}}})
    assert _staging(over.config(point)) == {"flush_delay_ms": 20}
    ruled = apply_base(space, {"version": 1, "files": [{"match": "*.h5", "staging": {"enabled": True}}]})
    assert _staging(ruled.config(point)) == {"flush_delay_ms": 20}
    assert apply_base(space, None) is space


def _draw(space: Space, sampler: str, trials: int, seed: int) -> list[tuple[dict, dict]]:
    """(the trial's parameters as optuna drew them, the configuration written) for `trials` trials."""
    study = optuna.create_study(direction="maximize", sampler=get_sampler(sampler).create(space, seed))
    out = []
    for i in range(trials):
        t = study.ask()
        point = space.sample(lambda p: t.suggest_categorical(p.key, p.choices))
        config = space.config(point)
        study.tell(t, float(len(json.dumps(config)) % 7 + i % 3))   # any values: the search must move
        out.append((dict(t.params), config))
    return out


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_no_inactive_setting_is_drawn_or_written(sampler):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = _space()
    draws = _draw(space, sampler, 90, seed=7)  # the grid walks in its own order: 90 points reach staging on and off
    for params, config in draws:
        staging = _staging(config)
        if staging.get("enabled") is not True:
            assert not set(staging) & set(STAGING_WRITE_BEHIND) - ({"cache_mb"} if staging.get("prefetch") else set())
        if staging.get("prefetch") is not True:
            assert "prefetch_kb" not in staging
        hints = _hints(config)
        if hints.get("romio_ds_write") == "disable":
            assert "ind_wr_buffer_size" not in hints
        if hints.get("romio_ds_read") == "disable":
            assert "ind_rd_buffer_size" not in hints
        # what was not written was not drawn either (the sampler never saw a choice that could not act)
        assert not space.inactive(params)
        if params.get("iotame.staging.enabled") in (UNSET, False) and params.get("iotame.staging.prefetch") in \
                (UNSET, False):
            assert not {k for k in params if k.startswith("iotame.staging.")} - \
                {"iotame.staging.enabled", "iotame.staging.prefetch"}
    # the space was searched, staging off and on both
    assert any(_staging(c).get("enabled") is True for _, c in draws)
    assert any(p.get("iotame.staging.enabled") in (UNSET, False) for p, _ in draws)


def test_the_grid_visits_each_distinct_configuration_once():
    schema = load_schema()
    full = builtin_space("local", 2, schema)
    space = Space(tuple(full.get(k) for k in ("iotame.staging.enabled", "iotame.staging.flush_delay_ms",
                                              "iotame.staging.prefetch", "iotame.staging.prefetch_kb")
                        if full.get(k) is not None))
    # prefetch_kb has no "tune" entry: enabled unset or false (2) x prefetch (3), and enabled true x
    # flush_delay_ms (4) x prefetch (3)
    assert space.size() == 2 * 3 + 1 * 4 * 3
    sampler = get_sampler("grid")
    study = optuna.create_study(sampler=sampler.create(space, 3))
    seen = []
    while not sampler.exhausted(study.sampler, study):
        t = study.ask()
        seen.append(json.dumps(space.sample(lambda p: t.suggest_categorical(p.key, p.choices)), sort_keys=True))
        study.tell(t, 1.0)
        assert len(seen) <= space.size()
    assert len(seen) == len(set(seen)) == space.size()


# ---- the ablation and its report ----

def config_writer(space, root: Path):
    """The ablation's config_of: writes a point's configuration in root/LABEL/config.json."""
    def config_of(p, label):
        path = root / label / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(space.config(p)))
        return path
    return config_of


def test_the_ablation_never_weighs_an_inactive_setting(tmp_path, monkeypatch):
    """The best point sets staging's write-behind settings with staging off, prefetch=false (its default), and a
    sieving buffer with sieving off: none of them is run without, none appears in the ranking; the runs' values
    jump around, so a setting weighed would have been credited with a gain."""
    space = _space()
    point = {"iotame.staging.enabled": False, "iotame.staging.flush_delay_ms": 20, "iotame.staging.prefetch": False,
             "iotame.staging.cache_mb": 1024, "mpiio.romio_ds_write": "disable", "mpiio.ind_wr_buffer_size": 65536,
             "mpiio.romio_cb_write": "disable", "mpiio.cb_buffer_size": 4194304}
    runs: list[dict] = []

    def run_once(argv, config_path, out, objective, **kw):
        config = json.loads(Path(config_path).read_text())
        runs.append(config)
        hints = _hints(config)
        value = 100.0 * (3 if hints.get("romio_cb_write") == "disable" else 1) * (1.25 if len(runs) % 2 else 1)
        return RunOutcome(str(out), value, None, 0, 1.0)

    monkeypatch.setattr("iotame.tune.ablation.run_once", run_once)
    r = ablate(["job"], space, point, config_writer(space, tmp_path), tmp_path, "io-bandwidth", "maximize", 2, 0.02)
    weighed = {e.key for e in r.effects}
    assert weighed == {"mpiio.romio_ds_write", "mpiio.romio_cb_write", "mpiio.cb_buffer_size"}
    assert not [label for label in r.runs if "staging" in label or "ind_wr" in label]
    assert all("staging" not in (c.get("defaults") or {}) and "ind_wr_buffer_size" not in _hints(c) for c in runs)
    line = effect_line(r.effects, r.noise)
    assert "staging" not in line and "prefetch" not in line and "ind_wr_buffer_size" not in line
    assert line.startswith("romio_cb_write=disable: +")
    assert all(r.point[k] == UNSET for k in space.inactive(point))


# ---- a study end to end ----

def test_a_study_never_writes_reports_or_ranks_a_setting_that_cannot_act(tmp_path, job, capsys):
    """The stand-in job's bandwidth depends on romio_cb_write only. Staging's flush_delay_ms cannot act with staging
    at most false, and false is the default of enabled and prefetch: no trial draws or writes any of them, and
    the best configuration, its summary and what is printed hold romio_cb_write alone."""
    from .test_tune_study import load, search_trials, tune
    space = '[mpiio]\nromio_cb_write = ["disable"]\n[iotame.staging]\nenabled = [false]\nprefetch = [false]\n' \
            'flush_delay_ms = [20]\n'
    assert tune(tmp_path, job, "--sampler", "grid", "--trials", "20", "--final-repeat", "1", space=space) == 0
    trials = search_trials(load(tmp_path))
    assert len(trials) == 2 * 2 * 2          # romio_cb_write x enabled (unset, false) x prefetch (unset, false)
    assert not any("iotame.staging.flush_delay_ms" in t.params for t in trials)
    assert not any("staging" in (t.user_attrs["config"].get("defaults") or {}) for t in trials)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["space"]["size"] == 8
    assert summary["best"]["params"] == {"mpiio.romio_cb_write": "disable"}
    assert json.loads((tmp_path / "out" / "best.json").read_text())["defaults"] == {
        "mpiio_hints": {"romio_cb_write": "disable"}}
    assert "staging" not in capsys.readouterr().out.split("best")[-1]


def test_a_parameter_nothing_lets_act_is_left_out_with_a_note():
    """A space with staging's write-behind settings but not staging.enabled (a space file, or a read-only job
    whose pruning took enabled out): they never act, so they are left out, each named in a note."""
    full = _space()
    space = full.without(["iotame.staging.enabled"])
    left = space.never_acting()
    assert "iotame.staging.flush_delay_ms" not in left.keys() and "iotame.staging.flush_threshold" not in left.keys()
    assert "iotame.staging.cache_mb" in left.keys()                     # prefetch may still turn the area on
    assert "flush_delay_ms left out: it acts only when staging.enabled is true, auto, which no configuration of " \
           "the space sets" in left.notes
    assert full.never_acting() is full
    over = apply_base(space, {"version": 1, "defaults": {"staging": {"enabled": True}}})
    assert over.never_acting() is over                                  # the base turns staging on
    auto = apply_base(space, {"version": 1, "defaults": {"staging": {"enabled": "auto"}}})
    assert auto.never_acting() is auto                                  # auto may turn it on too


def test_a_job_that_only_reads_keeps_what_prefetching_acts_through():
    from iotame.tune.workload import prune, workload_from_stats

    from .fakes import make_stats
    stats = make_stats(bytes_written=0)
    stats["files"][0]["ops"] = {"read_at": {"count": 4, "bytes": 2097152}}
    pruned = prune(_space(), workload_from_stats(stats)).never_acting()
    staging = [k for k in pruned.keys() if k.startswith("iotame.staging.")]
    assert staging == ["iotame.staging.cache_mb", "iotame.staging.prefetch"]
    point = {"iotame.staging.prefetch": True, "iotame.staging.cache_mb": 64}
    assert _staging(pruned.config(point)) == {"prefetch": True, "cache_mb": 64}
    assert "staging" not in (pruned.config({**point, "iotame.staging.prefetch": UNSET}).get("defaults") or {})
