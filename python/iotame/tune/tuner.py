"""The tuning loop: measure the default, search the space with real runs, re-run the best few beside the default,
and write the best configuration and a summary.

    1. the default trial (every parameter unset: the empty configuration) runs first in every study; its
       statistics describe the workload, which prunes the space and finds similar workloads in the knowledge base
    2. the study is seeded (iotame.tune.seeding): the configurations given with --first, the cost model's
       recommendation for the workload with a machine profile, then up to 3 best configurations of similar workloads
    3. the sampler proposes the rest; a configuration measured before is not run again (iotame.tune.trials)
    4. the race: the default, the best few and the best's reductions in paired, rotated rounds, until the simplest
       configuration as fast as the best is known (iotame.tune.race, iotame.tune.race_study); its settings are
       weighed by their removal in the same rounds
    5. best.json, summary.json, and the workload's best configuration in the knowledge base (iotame.tune.output)

An interrupted study resumes where it stopped (same storage and study name): trials a killed tuner left running are
marked failed and do not count against --trials, and the default is run again only if the study has none.

Several tuners may run one study at once (a PostgreSQL storage shared by nodes; docs/design/shared-study.md):
the default, each configuration and the final re-run are measured once, by the tuner that claims them
(iotame.tune.shared), while the others wait for the result; --trials is the study's total, whoever runs the trials.
"""
from __future__ import annotations

import dataclasses
import json
import random

import optuna
from optuna.trial import FrozenTrial, TrialState

from .budget import Budget, StudyPlan
from .final import FinalResult, pick_candidates
from .race_study import race_best
from .noise import too_noisy
from .output import choose_best, write_results, write_stored_results
from .page_cache import PageCache
from .recommend import Recommendation
from .records import TuneError, TuneEvents, TuneResult
from .samplers import get_sampler
from .seeding import recommendation, seed_study
from .shared import SharedStudy
from .space import Space, apply_base
from .spec import TuneSpec
from .study import ATTR_ERROR, ATTR_ROLE, is_default
from .trials import Trials
from .workload import prune, recorded_workload

__all__ = ["Tuner", "run_tune", "TIMEOUT_FACTOR", "TIMEOUT_MIN"]

TIMEOUT_FACTOR = 10      # without --timeout, a run may take this many times the default's slowest run …
TIMEOUT_MIN = 60.0       # … and at least this many seconds


class Tuner:
    """One tuner of a study, through its phases: `start` (open the study, the default trial, `prepare`), `search`,
    `finish` (the final re-run, the ablation and the output, or another tuner's). `shared` and `trials` exist once
    the study is open."""

    def __init__(self, spec: TuneSpec, events: TuneEvents | None = None, plan: StudyPlan | None = None,
                 budget: Budget | None = None):
        self.spec = spec
        self.plan, self.budget = plan, budget
        self.events = events or TuneEvents()
        self.page_cache = PageCache(spec.runs.drop_caches, self.events.note)
        self.full_space = apply_base(spec.space.space, spec.space.base)   # what acts depends on the base too
        self.sampler = get_sampler(spec.study.sampler)
        self.shared: SharedStudy | None = None
        self.trials: Trials | None = None
        self.default: FrozenTrial | None = None
        self._token = random.getrandbits(31)      # this tuner in claims that belong to no trial
        self.race_cap: int | None = None          # the race's most runs (--budget), set by the caller
        self.race_ablation = None

    def open(self) -> optuna.Study:
        self.shared = SharedStudy.open(self.spec, self.full_space, self.events.note)
        self.trials = Trials(self.spec, self.shared, self.full_space, self.sampler, self.page_cache, self.events)
        return self.shared.study

    def close(self) -> None:
        """Stops the heartbeats (the trials still held, if any, then go stale and are failed by others)."""
        if self.shared is not None:
            self.shared.close()

    def run_default(self) -> FrozenTrial:
        return self.trials.run_default()

    def prepare(self, default: FrozenTrial, searching: bool = True) -> None:
        """Timeout, pruned space, seeds and the sampler, once the default is known. A job too noisy to tune stops a
        search (TuneError); without one (searching False: --recommend, which measures nothing to rank) it is only
        noted."""
        spec, study, trials = self.spec, self.shared.study, self.trials
        w = recorded_workload(default.user_attrs)
        if spec.study.objective != "wall-time" and (w is None or w.data_ops == 0):
            raise TuneError("tune: the command made no MPI-IO data calls under the runtime, so there is nothing "
                            "to tune for " + spec.study.objective + " (--objective wall-time tunes its run time)")
        if w is not None and w.nprocs and w.nprocs != spec.job.nprocs:
            # e.g. MPICH under srun without --mpi=pmi2: every rank starts alone, as a job of one, without an error
            raise TuneError(f"tune: the default run's statistics describe a job of {w.nprocs} process"
                            f"{'es' if w.nprocs > 1 else ''}, not {spec.job.nprocs}: the ranks did not start as one "
                            f"MPI job (under srun, give the plugin your MPI needs, e.g. --mpi=pmi2 for MPICH: "
                            f"docs/slurm.md), or --np is wrong")
        runs = default.user_attrs.get("runs", [])
        noisy = too_noisy([r["value"] for r in runs if r.get("value") is not None], spec.runs.repeat,
                          spec.runs.max_noise, [r["io_seconds"] for r in runs if r.get("io_seconds") is not None])
        if noisy is not None and searching:
            raise TuneError(f"tune: {noisy}")
        if noisy is not None:
            self.events.note(noisy)
        if trials.timeout is None:
            slowest = max((r.get("seconds") or 0) for r in default.user_attrs.get("runs", [{}]))
            trials.timeout = max(TIMEOUT_MIN, TIMEOUT_FACTOR * slowest)
        stored = study.user_attrs.get("space")
        if stored is not None:
            trials.space = Space.from_json(stored)
        else:
            trials.space = (prune(self.full_space, w) if w is not None else self.full_space).never_acting()
            study.set_user_attr("space", trials.space.to_json())
            for n in trials.space.notes[len(self.full_space.notes):]:
                self.events.note(n)
        if w is not None and not study.user_attrs.get("seeded") \
                and self.shared.claims.claim("seeded", self._token) == self._token:      # one tuner seeds
            seed_study(study, spec, trials.space, w, lambda: self.recommendation(default), self.events.note)
        study.sampler = self.sampler.create(trials.space, spec.study.seed)

    def recommendation(self, default: FrozenTrial) -> Recommendation:
        """The cost model's recommendation for the default's workload (iotame.tune.seeding.recommendation)."""
        return recommendation(self.shared.study, self.spec, self.trials.space, default, self.trials.timeout,
                              self.page_cache)

    def start(self) -> FrozenTrial:
        """Opens (or resumes) the study, runs the default trial and prepares the search; returns the default."""
        self.open()
        self.default = self.run_default()
        self.prepare(self.default)
        self.fit_budget(self.default)
        return self.default

    def fit_budget(self, default: FrozenTrial) -> None:
        """With a plan: says roughly how long the study takes at the default's run time; with a budget too, cuts
        the search's trials and the race's runs to fit it (iotame.tune.budget)."""
        if self.plan is None:
            return
        seconds = sorted(r.get("seconds") or 0.0 for r in default.user_attrs.get("runs", [])) or [0.0]
        per_run = seconds[len(seconds) // 2]
        if self.trials.space is not None and self.plan.race_entrants:   # the race reduces only what can act
            self.plan = dataclasses.replace(self.plan, race_entrants=self.plan.top + len(self.trials.space) + 3)
        total = self.plan.total
        if self.budget is not None:
            trials, self.race_cap = self.plan.within(self.budget.runs_for(per_run))
            if trials < self.spec.study.trials:
                self.events.note(f"--budget {self.budget}: {trials} search trials instead of "
                                 f"{self.spec.study.trials}, the race at most {self.race_cap} runs")
                self.spec.study.trials = trials
            total = min(total, self.budget.runs_for(per_run))
        self.events.note(f"at most {total} runs at about {per_run:.1f} s each: roughly "
                         f"{total * per_run / 60:.1f} minutes")

    def search(self) -> None:
        self.trials.search()

    def final(self, default: FrozenTrial) -> FinalResult | None:
        """The race of the best few search trials, their reductions and the default (iotame.tune.race), which
        replaces the final re-run and the ablation; its ablation-shaped result is kept for results()."""
        complete = [t for t in self.shared.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                    if not is_default(t)]
        picked = pick_candidates(complete, default, self.spec.study.direction, self.spec.final.top)
        raced = race_best(self.spec, self.full_space, recorded_workload(default.user_attrs), default, picked,
                          self.events, self.trials.timeout, self.page_cache, self.race_cap)
        if raced is None:
            return None
        final, self.race_ablation, _ = raced
        return final

    def results(self, default: FrozenTrial, final: FinalResult | None) -> TuneResult:
        """The best (the race's answer, else the search's best), its settings weighed, and the study's output."""
        study = self.shared.study
        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        best = choose_best(study.get_trials(deepcopy=False), default, final, self.spec.study.direction,
                           study.best_trial if complete else default)
        # the race weighs the answer's settings; without a race (--final-repeat 0) the search's best is kept whole
        ablation = self.race_ablation if getattr(final, "race", None) is not None else None
        return write_results(self.spec, study, (self.full_space, self.trials.space), default, final, best,
                             ablation, self.page_cache.status, self.trials.timeout, self.events.note)

    def finish(self) -> TuneResult:
        """The final re-run, best.json, summary.json and the knowledge base: done by the tuner whose trial claims
        the final first; the others wait for it and write the same best.json and summary.json (taking the final
        over when that tuner stops)."""
        shared = self.shared
        while True:
            shared.check()
            key = shared.final_key()
            stored = shared.study.user_attrs.get(key)
            if stored is not None:
                return write_stored_results(self.spec, stored, self.events.note)
            owner = shared.claims.owner(key)
            o = shared.trial(owner) if owner is not None else None
            if o is not None and o.state == TrialState.RUNNING:
                shared.note_once(f"final:{owner}", f"another tuner is doing the final re-run (trial {owner}): "
                                                   f"waiting for its result")
                shared.wait()
                continue
            if o is not None and not shared.dead(o):
                shared.wait()        # finished: its result is being stored
                continue
            marker = shared.new_trial({ATTR_ROLE: "final",
                                       ATTR_ERROR: "not a search trial: the final re-run and the ablation"})
            if not shared.take(key, owner, marker.number):
                shared.release(marker, "another tuner does the final re-run")
                continue
            try:
                result = self.results(self.default, self.final(self.default))
                shared.study.set_user_attr(key, {"summary": result.summary,
                                                 "best": json.loads(result.best_path.read_text()),
                                                 "out": str(self.spec.out.resolve()), "trial": marker.number})
            except BaseException:
                shared.abandon(marker)
                raise
            shared.done_with(marker)
            return result

    def run(self) -> TuneResult:
        try:
            self.start()
            self.search()
            return self.finish()
        finally:
            self.close()


def run_tune(spec: TuneSpec, events: TuneEvents | None = None, plan: StudyPlan | None = None,
             budget: Budget | None = None) -> TuneResult:
    """Runs (or resumes) a study and returns its summary; `plan` and `budget` as Tuner.fit_budget."""
    return Tuner(spec, events, plan, budget).run()
