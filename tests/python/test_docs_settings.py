"""The documentation agrees with the code it describes.

- Every table of settings in docs/ is a block generated from runtime/settings.json by scripts/settings_tables.py;
  a block that disagrees with settings.json (a setting missing or extra, a wrong type, range, allowed values,
  default or meaning) fails here, naming the file, the setting and the column.
- Papers are cited by authors and title (docs/references.md), never by a number or by a folder outside the
  repository, and every link to a paper's anchor in references.md resolves.
"""
import copy
import json
import re
from pathlib import Path

import pytest

from iotame.settings import load_schema, schema_from_dict

from .scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "runtime" / "settings.json"


def _load_script():
    return load_script("scripts/settings_tables.py", "settings_tables")


st = _load_script()
DOCS_WITH_BLOCKS = [p for p in st.doc_files(ROOT) if st.blocks(p.read_text(encoding="utf-8"))]
# the guide of each section holds its table; docs/settings.md holds them all
GUIDES = {"collective": "collective.md", "throttle": "throttle.md", "staging": "staging.md", "hdf5": "hdf5.md",
          "emulate": "emulate.md", "all": "settings.md", "rule_keys": "settings.md", "tune": "tuning.md"}


@pytest.fixture(scope="module")
def schema():
    return load_schema(SETTINGS)


@pytest.fixture(scope="module")
def raw():
    return json.loads(SETTINGS.read_text(encoding="utf-8"))


def _doc(name):
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


# ---- the tables agree with settings.json ----

@pytest.mark.parametrize("path", DOCS_WITH_BLOCKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_tables_agree_with_settings_json(path, schema):
    problems = st.check_text(path.read_text(encoding="utf-8"), schema, str(path.relative_to(ROOT)))
    assert not problems, "\n".join(problems) + "\n(regenerate: .venv/bin/python scripts/settings_tables.py)"


def test_each_guide_holds_its_sections_table():
    for name, guide in GUIDES.items():
        assert name in dict(st.blocks(_doc(guide))), f"docs/{guide} has no <!-- settings:{name} --> block"


def test_settings_md_lists_every_section(schema):
    content = dict(st.blocks(_doc("settings.md")))["all"]
    assert list(st._sections_of(content)) == list(schema.sections)


def test_the_check_command_passes():
    assert st.main(["--check"]) == 0


# ---- the check fails when a table is wrong (edits of the table) ----

def _row_line(text, setting):
    return next(line for line in text.splitlines() if line.startswith(f"| `{setting}` |"))


def test_a_missing_setting_is_found(schema):
    text = _doc("staging.md")
    bad = text.replace(_row_line(text, "prefetch_kb") + "\n", "")
    assert any("`prefetch_kb` is missing" in p for p in st.check_text(bad, schema))


def test_an_extra_setting_is_found(schema):
    text = _doc("throttle.md")
    line = _row_line(text, "readers")
    bad = text.replace(line, line + "\n" + line.replace("`readers`", "`max_streams`"))
    assert any("`max_streams` is not in settings.json" in p for p in st.check_text(bad, schema))


def test_a_wrong_default_is_found(schema):
    text = _doc("staging.md")
    line = _row_line(text, "cache_mb")
    bad = text.replace(line, line.replace("| `256` |", "| `512` |"))
    assert bad != text
    problems = st.check_text(bad, schema)
    assert any("`cache_mb`: default is '`512`'" in p for p in problems), problems


def test_a_wrong_type_or_range_is_found(schema):
    text = _doc("throttle.md")
    line = _row_line(text, "tolerance")
    bad = text.replace(line, line.replace("| number 0–0.5 |", "| number 0–1 |"))
    assert bad != text
    assert any("`tolerance`: type is 'number 0–1'" in p for p in st.check_text(bad, schema))


def test_wrong_allowed_values_are_found(schema):
    text = _doc("collective.md")
    line = _row_line(text, "strategy")
    bad = text.replace(line, line.replace(", `view_based` |", " |", 1))
    assert bad != text
    assert any("`strategy`: type is" in p for p in st.check_text(bad, schema))


def test_a_changed_meaning_is_found(schema):
    text = _doc("staging.md")
    line = _row_line(text, "enabled")
    bad = text.replace(line, line[:-2] + " (and more) |")
    assert any("`enabled`: meaning is" in p for p in st.check_text(bad, schema))


def test_a_wrong_setting_in_settings_md_is_found(schema):
    text = _doc("settings.md")
    bad = text.replace("| `malloc_threshold` | integer 0–33550336 |", "| `malloc_threshold` | integer 0–1 |")
    assert bad != text
    assert any("settings:all.memory: `malloc_threshold`: type" in p for p in st.check_text(bad, schema))


def test_a_missing_closing_marker_is_found(schema):
    bad = _doc("throttle.md").replace("<!-- /settings:throttle -->", "")
    assert any("without its closing marker" in p for p in st.check_text(bad, schema))


# ---- the check fails when settings.json changes and the docs were not regenerated ----

def _schema_with(raw, edit):
    d = copy.deepcopy(raw)
    edit(d)
    return schema_from_dict(d)


def test_a_new_setting_in_settings_json_is_found(raw):
    def add(d):
        d["sections"]["staging"]["settings"]["direct"] = {"type": "boolean", "default": False, "doc": "O_DIRECT"}
    problems = st.check_text(_doc("staging.md"), _schema_with(raw, add))
    assert any("`direct` is missing" in p for p in problems), problems
    problems = st.check_text(_doc("settings.md"), _schema_with(raw, add))
    assert any("settings:all.staging: `direct` is missing" in p for p in problems), problems


def test_a_new_default_or_enum_value_in_settings_json_is_found(raw):
    def edit(d):
        d["sections"]["throttle"]["settings"]["stall_seconds"]["default"] = 30
        d["sections"]["hdf5"]["settings"]["alloc_time"]["values"].append("never")
    assert any("`stall_seconds`: default" in p for p in st.check_text(_doc("throttle.md"), _schema_with(raw, edit)))
    assert any("`alloc_time`: type" in p for p in st.check_text(_doc("hdf5.md"), _schema_with(raw, edit)))


def test_a_new_tune_entry_in_settings_json_is_found(raw):
    def edit(d):
        d["sections"]["staging"]["settings"]["sync_on_close"]["tune"] = {"values": [True, False]}
    problems = st.check_text(_doc("tuning.md"), _schema_with(raw, edit))
    assert any("`iotame.staging.sync_on_close` is missing" in p for p in problems), problems


def test_a_removed_section_is_found(raw):
    problems = st.check_text(_doc("settings.md"), _schema_with(raw, lambda d: d["sections"].pop("memory")))
    assert any("section memory is not in settings.json" in p for p in problems), problems


def test_regenerating_fixes_a_wrong_table(raw):
    def add(d):
        d["sections"]["staging"]["settings"]["direct"] = {"type": "boolean", "default": False, "doc": "O_DIRECT"}
    changed = _schema_with(raw, add)
    fixed = st.update_text(_doc("staging.md"), changed)
    assert st.check_text(fixed, changed) == []
    assert "| `direct` | boolean | `false` | O_DIRECT |" in fixed


# ---- papers ----

# Text a user or a developer reads: the manual, the README, the settings' descriptions, the command's help, the
# benchmarks, the kernels and the runtime's sources.
CITING = ["README.md", "docs", "runtime", "python", "bench", "kernels", "scripts", "packaging"]
SUFFIXES = {".md", ".py", ".json", ".c", ".h", ".txt", ".toml", ".sh", ".cmake", ".f90", ".lua"}
BY_NUMBER = re.compile(r"\bpapers?\s*\(?0\d\d\b|\b0\d\d_[0-9a-f]{16}\b|shared/papers|\.\./papers\b", re.I)


def _citing_files():
    for top in CITING:
        path = ROOT / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for p in files:
            rel = p.relative_to(ROOT).as_posix()
            if p.suffix in SUFFIXES and "__pycache__" not in rel:
                yield rel, p


def test_papers_are_cited_by_authors_and_title():
    hits = [f"{rel}:{n}: {line.strip()}" for rel, p in _citing_files()
            for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if BY_NUMBER.search(line)]
    assert not hits, "cite papers by authors and title (docs/references.md):\n" + "\n".join(hits)


def test_the_pattern_finds_numbered_citations():
    for line in ("stream throttling (paper 000): how many", "Paper 001's trade-off", "(`../shared/papers/004_*`)",
                 "see papers/002_ade7d2562d06853d.txt"):
        assert BY_NUMBER.search(line), line
    assert not BY_NUMBER.search("Seelam, Kerstens and Teller, UTEP-CS-07-22, 2007")


def test_links_to_references_resolve():
    anchors = set(re.findall(r'<a id="([a-z0-9]+)"></a>', _doc("references.md")))
    assert {"seelam2007", "zhang2014", "isaila2009", "saini2007", "behzad2013"} <= anchors
    texts = [(p, p.read_text(encoding="utf-8")) for p in [ROOT / "README.md", *st.doc_files(ROOT)]]
    link = re.compile(r"\]\((?:\.\./)*references\.md#([^)]*)\)")
    links = [(p.relative_to(ROOT), a) for p, t in texts for a in link.findall(t)]
    assert links
    assert [(p, a) for p, a in links if a not in anchors] == []
