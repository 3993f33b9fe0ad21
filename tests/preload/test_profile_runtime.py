"""The runtime's use of a machine profile (docs/calibrate.md, "Where the runtime finds the profile"): found by itself
in the user's profile directory, named by the setting or the environment, refused with the reason when invalid or
of another file system (the job runs on without it), and with one, the selector serves the model's first choice
from a signature's first call and the statistics show predicted against measured time."""
import json
import math
import os
import subprocess

from conftest import KERNEL, collective_config, write_json
from iotame.calibrate.basis import model_basis, profile_key
from iotame.calibrate.discover import find_profile
from test_collective import MATRIX_LONGER, run_kernel

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "unit", "data", "profile_sample.json")


def profile_for(directory, out, **changes):
    """The sample profile keyed to the file system of `directory` (what `iotame calibrate --dir` would key it by)."""
    prof = json.loads(open(SAMPLE).read())
    magic = subprocess.run(["stat", "-f", "-c", "%t", str(directory)], capture_output=True, text=True, check=True)
    st = os.stat(directory)
    prof["filesystem"].update(path=str(directory), type="test", magic="0x" + magic.stdout.strip(),
                              device=f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", targets=1, stripe_unit=0)
    prof["filesystem"].update(changes)
    return write_json(out, prof)


def auto_run(job, extra_env=None, **collective):
    config = collective_config(job.tmp / "c.json", strategy="auto", exam_budget=1, trace=4, **collective)
    stats = job.tmp / "stats.json"
    res, p = job.kernel(2, "matrix", *MATRIX_LONGER, "--keep", preload=True, config=config, stats=stats,
                        extra_env=extra_env)
    assert res["verified"], p.stderr
    (f,) = [f for f in json.loads(stats.read_text())["files"] if f["path"].endswith("matrix.dat")]
    return f, p.stderr


def test_a_profile_in_the_users_directory_predicts_from_the_first_call(job):
    profiles = job.xdg / "iotame" / "profiles"
    profiles.mkdir(parents=True)
    profile_for(job.tmp, profiles / "local.json")
    write_json(profiles / "a-other.json", {"version": 1, "kind": "iotame-machine-profile",
                                           "filesystem": {"magic": "0x1", "device": "0:1", "path": "/nowhere"}})
    f, _ = auto_run(job)
    assert f["profile"]["path"] == str(profiles / "local.json") and f["profile"]["found_by"] == "directory"
    found, _ = find_profile(job.tmp / "matrix.dat", env=job.env())   # `iotame info` says the same
    assert found == profiles / "local.json"
    assert "profile_refused" not in f     # another file system's profile in the directory is passed over
    for d in f["decisions"]:
        m = d["model"]
        assert set(m["predicted_s"]) >= {"passthrough", "two_phase", "node_local", "view_based"}
        assert m["first"] == min(m["predicted_s"], key=m["predicted_s"].get)
        # trusted (alone) or leading (what would serve without the profile beaten beyond the errors): the model's
        # first serves the first call; else the first candidate within the errors, in the configured order
        assert m["leads"] or not m["trusted"]
        assert d["trace"][0][0] == m["first"] if m["leads"] else d["trace"][0][0] in m["examined"]
        assert m["first"] in m["examined"] and set(m["measured_s"]) >= {m["first"]}


def test_of_two_profiles_of_the_file_system_the_one_of_the_nearer_directory_is_used(job):
    """Two layouts calibrated on one file system, each in its own directory: a file takes the profile of the
    deepest directory above it, whatever the names' order."""
    profiles = job.xdg / "iotame" / "profiles"
    profiles.mkdir(parents=True)
    profile_for(job.tmp, profiles / "b-here.json")
    profile_for(job.tmp, profiles / "a-above.json", path=str(job.tmp.parent))
    f, _ = auto_run(job)
    assert f["profile"]["path"] == str(profiles / "b-here.json")
    assert find_profile(job.tmp / "matrix.dat", env=job.env())[0] == profiles / "b-here.json"


def test_a_named_profile_of_another_file_system_is_refused(job):
    other = profile_for(job.tmp, job.tmp / "other.json", device="0:4242", path="/elsewhere")
    f, stderr = auto_run(job, profile=str(other))
    assert "profile" not in f and f"iotame: profile {other}: filesystem: expected the file system of" in f["profile_refused"]
    assert "filesystem: expected the file system of" in stderr
    assert all("model" not in d for d in f["decisions"])          # examined as without a profile
    assert len({d["trace"][0][0] for d in f["decisions"]}) == 1   # both start with the first candidate


def test_a_bad_profile_from_the_environment_is_refused_and_the_job_runs_on(job):
    bad = profile_for(job.tmp, job.tmp / "bad.json")
    prof = json.loads(bad.read_text())
    prof["memory"]["copy_mbs"] = "fast"
    write_json(bad, prof)
    f, stderr = auto_run(job, extra_env={"IOTAME_PROFILE": str(bad)})
    assert f"iotame: profile {bad}: memory.copy_mbs: expected" in f["profile_refused"] and "copy_mbs" in stderr
    assert "profile" not in f and all("model" not in d for d in f["decisions"])
    good = profile_for(job.tmp, job.tmp / "good.json")
    f, _ = auto_run(job, extra_env={"IOTAME_PROFILE": str(good)})
    assert f["profile"]["found_by"] == "environment" and all("model" in d for d in f["decisions"])


def test_the_knowledge_file_keeps_predicted_and_measured_times(job):
    profile_for(job.tmp, job.tmp / "p.json")
    knowledge = job.tmp / "k.json"
    auto_run(job, profile=str(job.tmp / "p.json"), knowledge=str(knowledge))
    entries = json.loads(knowledge.read_text())["modules"]["collective"]["entries"]
    assert entries and all(e["model"]["predicted_s"] and e["model"]["measured_s"] for e in entries)


def test_ranks_that_find_different_profiles_use_none_and_say_so(job):
    """The core finds a file's profile once per rank at the open and keeps it only when every rank found the same
    (a node whose profile directory differs must not make its ranks predict, and so decide, apart)."""
    good = profile_for(job.tmp, job.tmp / "good.json")
    config = collective_config(job.tmp / "c.json", strategy="auto", exam_budget=1, trace=4)
    stats = job.tmp / "stats.json"
    # rank 0 alone is given the profile (PMI_RANK: MPICH's and Open MPI's launchers set it, or OMPI_COMM_WORLD_RANK)
    script = (f'r=${{PMI_RANK:-$OMPI_COMM_WORLD_RANK}}; [ "$r" = 0 ] && export IOTAME_PROFILE={good}; '
              f'exec {KERNEL} matrix {" ".join(MATRIX_LONGER)} --keep')
    p = job.run(2, ["sh", "-c", script], preload=True, config=config, stats=stats)
    assert json.loads(p.stdout)["verified"], p.stderr
    (f,) = [f for f in json.loads(stats.read_text())["files"] if f["path"].endswith("matrix.dat")]
    assert "profile" not in f and "different machine profiles" in f["profile_refused"]
    assert f["decisions"] and all("model" not in d for d in f["decisions"])   # examined as without a profile
    f, _ = auto_run(job, extra_env={"IOTAME_PROFILE": str(good)})                # both ranks: it is used
    assert f["profile"]["found_by"] == "environment" and all("model" in d for d in f["decisions"])


def test_what_jobs_measured_corrects_the_next_jobs_predictions(job):
    """Every mean measured against its prediction is an observation: the knowledge file keeps the corrections under
    the profile's key, the next job's statistics and `iotame info` say how many measurements they rest on, and its
    predictions are the first job's times the correction."""
    prof = profile_for(job.tmp, job.tmp / "p.json")
    knowledge = job.tmp / "k.json"
    first, _ = auto_run(job, profile=str(prof), knowledge=str(knowledge))
    assert first["profile"]["fitted_strategies"] == 0      # the sample profile has no strategy measurements
    model = json.loads(knowledge.read_text())["modules"]["collective"]["model"]
    key = profile_key(prof.read_bytes())
    assert list(model) == [key]
    saved = sum(e["measurements"] for by_class in model[key].values() for e in by_class.values())
    measured = sum(len(d["model"]["measured_s"]) for d in first["decisions"])
    assert saved == measured > 0
    basis = model_basis(prof, knowledge)                     # `iotame info --knowledge` says the same
    assert basis["corrections"]["measurements"] == saved and basis["note"].startswith("no strategy measurements")
    second, _ = auto_run(job, profile=str(prof), knowledge=str(knowledge))
    # the statistics' profile is its last open's (the read phase's), which sees the write phase's close of this job
    seen = second["profile"]["corrections"]["measurements"]
    assert saved <= seen <= saved + sum(len(d["model"]["measured_s"]) for d in second["decisions"])
    # the second job predicted each corrected strategy at the first job's prediction times exp(correction) (the
    # engine strategies' first-call set-up is each job's own open time: not compared)
    compared = 0
    for d1, d2 in zip(first["decisions"], second["decisions"]):
        for name in set(d1["model"]["measured_s"]) - {"two_phase", "node_local", "target_aligned", "view_based"}:
            compared += 1
            corrections = [by_class[name]["correction"] for by_class in model[key].values() if name in by_class]
            ratio = d2["model"]["predicted_s"][name] / d1["model"]["predicted_s"][name]
            assert any(abs(ratio - math.exp(c)) < 1e-6 * ratio for c in corrections), (name, ratio, corrections)
    assert compared > 0, [d["model"]["measured_s"] for d in first["decisions"]]


def test_a_one_call_phase_the_library_serves_is_still_measured(job):
    """A signature's first call under a profile is gathered; served by a library strategy, its time is agreed after
    the call (posted, finished at the handle's next call or its close, so no rank waits for the others at the call's
    end): a phase of one call, closed at once, is measured all the same."""
    prof = profile_for(job.tmp, job.tmp / "p.json")
    config = collective_config(job.tmp / "c.json", strategy="auto", profile=str(prof), trace=4,
                               candidates=["independent", "passthrough"])
    stats = job.tmp / "stats.json"
    res, p = job.kernel(2, "ior", "-c", "-b", "1m", "-t", "1m", "-w", "-r", "-e", "-W", preload=True, config=config,
                        stats=stats)
    assert res and res["verified"], p.stderr
    (f,) = [f for f in json.loads(stats.read_text())["files"] if f["path"].endswith(".dat")]
    assert {d["signature"]["op"] for d in f["decisions"]} == {"write", "read"}
    assert [d["calls"] for d in f["decisions"] if d["signature"]["op"] == "write"] == [1]
    for d in f["decisions"]:
        m = d["model"]
        assert m["first"] in ("independent", "passthrough")
        assert set(m["measured_s"]) == {d["trace"][0][0]} and m["measured_s"][d["trace"][0][0]] > 0
