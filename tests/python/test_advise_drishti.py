"""Drishti (drishti-io 0.8, in .venv-drishti: scripts/setup.sh) and `iotame advise` side by side on every log of
../shared/darshan-logs/ and the darshan wheel's: a trigger Drishti fires must be answered by one of the iotame
findings python/iotame/advise/drishti.json names for it, or have a written reason there (for the trigger, when no
finding should answer it; for the log, where iotame disagrees). A reason that no longer applies fails too, so the
file (and docs/advise.md's table made from it) stays true."""
import csv
import json
import subprocess
from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

from iotame.advise import advise_loaded                        # noqa: E402
from iotame.advise._worker import worker_read                  # noqa: E402
from iotame.advise.records import FINDING_IDS                  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DRISHTI = ROOT / ".venv-drishti" / "bin" / "drishti"
TABLE = json.loads((ROOT / "python" / "iotame" / "advise" / "drishti.json").read_text())
SHARED = ROOT.parent / "shared" / "darshan-logs"
WHEEL = Path(darshan.__file__).resolve().parent


def _logs() -> list[Path]:
    """The shared logs and the wheel's, each log once (the wheel ships some twice, in examples/ and tests/)."""
    seen, out = set(), []
    for p in sorted(SHARED.glob("*.darshan")) + sorted(WHEEL.glob("**/*.darshan")):
        if p.name not in seen:
            seen.add(p.name)
            out.append(p)
    return out


LOGS = _logs()


@pytest.fixture(autouse=True)
def no_profile_found(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


def drishti(log: Path, out: Path) -> tuple[list[str], list[str]] | None:
    """(every trigger code of Drishti's CSV, the codes that fired) for a log; None when Drishti fails on it."""
    if not DRISHTI.exists():
        pytest.fail(f"{DRISHTI}: missing; scripts/setup.sh (make setup) installs drishti-io 0.8 there")
    p = subprocess.run([str(DRISHTI), "--csv", "--export_dir", str(out), str(log)], capture_output=True, text=True,
                       timeout=300, cwd=out)
    csvs = list(out.glob("*.csv"))
    if p.returncode != 0 or not csvs:
        return None
    header, row = list(csv.reader(csvs[0].open()))[:2]
    codes = header[1:]                       # the first column is the job id
    return codes, [c for c, v in zip(codes, row[1:]) if v == "True"]


def test_the_table_names_every_drishti_trigger_once(tmp_path):
    got = drishti(WHEEL / "examples" / "example_logs" / "sample-badost.darshan", tmp_path)
    assert got is not None
    codes, _ = got
    assert sorted(codes) == sorted(TABLE["triggers"]) and len(codes) >= 30
    for code, t in TABLE["triggers"].items():
        assert t["level"] in ("HIGH", "WARN", "INFO", "OK") and t["what"] and t["why"], code
        assert set(t["answers"]) <= set(FINDING_IDS), code


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name[:40])
def test_drishti_and_iotame_side_by_side(tmp_path, log):
    got = drishti(log, tmp_path)
    disagreements = TABLE["disagreements"].get(log.name[:-len(".darshan")], {})
    if got is None:                          # Drishti 0.8 fails on a few logs (dxt.darshan: no executable name)
        assert not disagreements, f"{log.name}: reasons recorded for a log Drishti cannot read"
        return
    _, fired = got
    data = worker_read(str(log))
    data["path"] = str(log)
    ids = {f.id for f in advise_loaded(data, str(log), top=1000).findings}
    missing = []
    for code in fired:
        t = TABLE["triggers"].get(code)
        assert t is not None, f"{log.name}: Drishti trigger {code} is not in python/iotame/advise/drishti.json"
        answered = bool(set(t["answers"]) & ids)
        if t["answers"] and not answered and code not in disagreements:
            missing.append(f"{code} ({t['what']}): none of {t['answers']} fired; iotame: {sorted(ids)}")
        if answered and code in disagreements:
            missing.append(f"{code}: iotame answers it now ({sorted(set(t['answers']) & ids)}); remove the reason")
    for code in disagreements:
        if code not in fired:
            missing.append(f"{code}: a reason is recorded but Drishti does not fire it; remove the reason")
    assert not missing, f"{log.name}: " + "; ".join(missing)
