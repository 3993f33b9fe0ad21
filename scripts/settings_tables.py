#!/usr/bin/env python3
"""The tables of settings in docs/, generated from runtime/settings.json (the one description of every setting).

A block of a Markdown file between the two marker comments

    <!-- settings:NAME -->
    <!-- /settings:NAME -->

holds a generated table: NAME is a section of settings.json (`staging`, `throttle`, ...), `rule_keys` (the keys
of a rule besides its sections), `all` (every section, each under its own heading: docs/settings.md) or `tune`
(the tuner's built-in space by layer). Whatever is between the markers is replaced.

    .venv/bin/python scripts/settings_tables.py            rewrite every block of docs/**/*.md
    .venv/bin/python scripts/settings_tables.py --check    change nothing; list what differs, exit 1 if anything

Run it after a change to settings.json (with the checkout's .venv: the tuner's modules need its packages).

tests/python/test_docs_settings.py runs the check, so a table that disagrees with settings.json fails the tests.
The schema is read with iotame.settings (the reader the tuner and `iotame config check` use).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

from iotame.settings import Schema, Setting, load_schema  # noqa: E402
from iotame.tune.builtin import tunable_settings  # noqa: E402
from iotame.tune.layers import LAYERS, param_key  # noqa: E402

__all__ = ["BLOCK", "HEADER", "blocks", "check_text", "doc_files", "expected_rows", "main", "render", "update_text"]

BLOCK = re.compile(r"<!-- settings:([a-z_0-9]+) -->\n(.*?)<!-- /settings:\1 -->", re.S)
HEADER = ("setting", "type", "default", "meaning")
TUNE_HEADER = ("parameter", "section", "values searched", "file systems")
NOT_SET = "not set"


# ---- cells ----

def _code(v) -> str:
    """A JSON value as inline code: strings bare (`auto`), everything else as JSON (`false`, `0.5`)."""
    if isinstance(v, str):
        return f"`{v}`"
    return f"`{_num(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else json.dumps(v)}`"


def _num(v) -> str:
    """A number as written in settings.json, without an exponent (0.00001, not 1e-05)."""
    if isinstance(v, float):
        text = f"{v:.12f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return json.dumps(v)


def _range(s: Setting) -> str:
    if s.min is not None and s.max is not None:
        return f" {_num(s.min)}–{_num(s.max)}"
    if s.min is not None:
        return f" ≥ {_num(s.min)}"
    if s.max is not None:
        return f" ≤ {_num(s.max)}"
    return ""


def _type(s: Setting, raw: dict) -> str:
    """The type column: the type with its range or allowed values, and what is accepted besides ('also')."""
    if s.type in ("integer", "number"):
        text = s.type + _range(s)
    elif s.type == "enum":
        text = "one of " + ", ".join(_code(v) for v in s.values)
    elif s.type == "list":
        lo = s.min_items if s.min_items is not None else 0
        hi = s.max_items if s.max_items is not None else "…"
        n = f" of {lo}–{hi}" if s.min_items is not None or s.max_items is not None else ""
        text = f"list{n}: {_type(s.items, raw.get('items', {}))}" if s.items else "list"
    elif s.type == "rules":
        text = "rules: objects with `match` and " + ", ".join(f"`{k}`" for k in s.settings)
    else:
        text = s.type
    also = raw.get("also")
    if also:
        text += " or " + ", ".join(_code(v) for v in also)
    return text


def _default(s: Setting) -> str:
    if s.default is None:
        return NOT_SET
    if isinstance(s.default, list):
        return ", ".join(_code(v) for v in s.default) if s.default else "`[]`"
    return _code(s.default)


def _meaning(s: Setting, raw: dict) -> str:
    text = s.doc.rstrip()
    if s.fs is not None:
        text += f" (file systems: {', '.join(s.fs)})"
    if s.requires:
        conditions = [_condition(*r) for r in s.requires]
        text += ". Acts only when " + (conditions[0] if len(conditions) == 1 else
                                       "one of these holds: " + "; ".join(conditions))
    if raw.get("process"):
        text += ". Process-wide: in `defaults` only"
    return text


def _condition(section: str, name: str, values: tuple) -> str:
    """`staging.enabled` is `true`; `romio_ds_write` is `enable`, `automatic` or not set."""
    shown = [_code(v) for v in values if v != "unset"] + (["not set"] if "unset" in values else [])
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f"`{section}.{name}` is {listed}"


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|")


def _row(cells) -> str:
    return "| " + " | ".join(_escape(c) for c in cells) + " |"


def _table(header, rows) -> list[str]:
    return [_row(header), "| " + " | ".join("---" for _ in header) + " |", *(_row(r) for r in rows)]


# ---- rows ----

def _raw_settings(schema: Schema, section: str) -> dict:
    raw = schema.raw or {}
    if section == "rule_keys":
        return raw.get("rule_keys", {})
    return raw.get("sections", {}).get(section, {}).get("settings", {})


def _setting_rows(settings: dict, raws: dict, prefix: str = "") -> list[tuple[str, ...]]:
    rows = []
    for name, s in settings.items():
        raw = raws.get(name, {})
        rows.append((f"`{prefix}{name}`", _type(s, raw), _default(s), _meaning(s, raw)))
        if s.type == "rules":
            rows += _setting_rows(s.settings, raw.get("settings", {}), f"{prefix}{name}[].")
    return rows


def _tune_values(tune: dict) -> str:
    if "values" in tune:
        text = ", ".join(_code(v) for v in tune["values"])
    else:
        lo, hi = tune["pow2"]
        text = f"powers of 2 from {_num(lo)} to {hi if hi == 'nprocs' else _num(hi)}"
        if hi == "nprocs":
            text += " (the process count itself included)"
    also = tune.get("also")
    return text + ("" if not also else ", and " + ", ".join(_code(v) for v in also))


def expected_rows(schema: Schema, name: str) -> list[tuple[str, ...]]:
    """The rows of block NAME, each a tuple of cells (the first names the setting or parameter)."""
    if name == "tune":
        rows = []
        for layer, settings in tunable_settings(schema).items():
            for sname, (section, s) in settings.items():
                if s.tune:
                    rows.append((f"`{param_key(layer, section, sname)}`", f"`{section}`", _tune_values(s.tune),
                                 ", ".join(s.fs) if s.fs is not None else "all"))
        return rows
    if name == "all":
        return [r for sec in schema.sections for r in expected_rows(schema, sec)]
    if name == "rule_keys":
        return _setting_rows(schema.rule_keys, _raw_settings(schema, name))
    if name not in schema.sections:
        raise KeyError(name)
    return _setting_rows(schema.sections[name].settings, _raw_settings(schema, name))


def _section_lines(schema: Schema, name: str) -> list[str]:
    sec = schema.sections[name]
    doc = sec.doc.strip()
    doc = doc[:1].upper() + doc[1:] + ("" if doc.endswith(".") else ".")
    lines = [f"### `{name}`", "", doc, ""]
    if sec.process:
        lines += ["The whole section sets the process: in `defaults` only.", ""]
    if sec.free:
        lines += ["Any key; values are strings or integers, passed as they are.", ""]
    elif sec.reserved:
        lines += ["Reserved: only an empty object is accepted.", ""]
    else:
        lines += _table(HEADER, expected_rows(schema, name)) + [""]
    return lines


def render(schema: Schema, name: str) -> str:
    """The text of block NAME, between its two markers (starts after the opening marker's line)."""
    if name == "all":
        lines = []
        for sec in schema.sections:
            lines += _section_lines(schema, sec)
        return "\n".join(lines)
    if name == "tune":
        return "\n".join(_table(TUNE_HEADER, expected_rows(schema, name))) + "\n"
    return "\n".join(_table(HEADER, expected_rows(schema, name))) + "\n"


# ---- files ----

def blocks(text: str) -> list[tuple[str, str]]:
    """(name, content) of every block of a Markdown text."""
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(text)]


def update_text(text: str, schema: Schema) -> str:
    return BLOCK.sub(lambda m: f"<!-- settings:{m.group(1)} -->\n{render(schema, m.group(1))}"
                               f"<!-- /settings:{m.group(1)} -->", text)


def _table_rows(content: str) -> dict[str, list[str]]:
    """The rows of every Markdown table in a block's text: first cell -> cells (header and rule lines left out)."""
    rows = {}
    for line in content.splitlines():
        if not line.startswith("|") or re.fullmatch(r"\|( *-+ *\|)+", line.strip()):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells and cells[0] not in (HEADER[0], TUNE_HEADER[0]):
            rows[cells[0]] = cells
    return rows


def _check_rows(at: str, content: str, want_rows, header) -> list[str]:
    problems = []
    want = {r[0]: list(r) for r in want_rows}
    have = _table_rows(content)
    for key in want.keys() - have.keys():
        problems.append(f"{at}: {key} is missing (settings.json has it)")
    for key in have.keys() - want.keys():
        problems.append(f"{at}: {key} is not in settings.json")
    for key in sorted(want.keys() & have.keys()):
        w, h = want[key], have[key]
        if len(h) != len(w):
            problems.append(f"{at}: {key}: {len(h)} columns, expected {len(w)} ({', '.join(header)})")
            continue
        for col, (wc, hc) in enumerate(zip(w, h)):
            if wc != hc:
                problems.append(f"{at}: {key}: {header[col]} is {hc!r}, settings.json says {wc!r}")
    return problems


def _sections_of(content: str) -> dict[str, str]:
    """The text under each `### `SECTION`` heading of an `all` block."""
    parts = re.split(r"^### `([a-z_0-9]+)`$", content, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def check_text(text: str, schema: Schema, where: str = "") -> list[str]:
    """What disagrees with settings.json in the blocks of `text`, one message per problem (empty: all agree)."""
    problems = []
    for name, content in blocks(text):
        at = f"{where}: settings:{name}"
        if name == "all":
            have = _sections_of(content)
            mine = [f"{at}: section {s} is missing" for s in schema.sections if s not in have]
            mine += [f"{at}: section {s} is not in settings.json" for s in have if s not in schema.sections]
            for sec in schema.sections.keys() & have.keys():
                mine += _check_rows(f"{at}.{sec}", have[sec], expected_rows(schema, sec), HEADER)
        elif name == "tune" or name == "rule_keys" or name in schema.sections:
            mine = _check_rows(at, content, expected_rows(schema, name), TUNE_HEADER if name == "tune" else HEADER)
        else:
            problems.append(f"{at}: no section {name!r} in settings.json")
            continue
        if not mine and content != render(schema, name):
            mine.append(f"{at}: the block differs from the generated text")
        problems += mine
    if text.count("<!-- settings:") != len(blocks(text)):
        problems.append(f"{where}: a settings marker without its closing marker (<!-- /settings:NAME -->)")
    return problems


def doc_files(root: Path = ROOT) -> list[Path]:
    return sorted((root / "docs").rglob("*.md"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing: list what differs, exit 1 if anything")
    ap.add_argument("--settings", help="the settings description (default: runtime/settings.json of this checkout)")
    ap.add_argument("files", nargs="*", type=Path, help="Markdown files (default: docs/**/*.md)")
    args = ap.parse_args(argv)
    schema = load_schema(args.settings or ROOT / "runtime" / "settings.json")
    problems, changed = [], []
    for path in args.files or doc_files():
        text = path.read_text(encoding="utf-8")
        if args.check:
            problems += check_text(text, schema, str(path))
            continue
        new = update_text(text, schema)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    for p in problems:
        print(p, file=sys.stderr)
    for p in changed:
        print(f"updated {p}")
    if problems:
        print(f"{len(problems)} difference(s): run .venv/bin/python scripts/settings_tables.py to regenerate",
              file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
