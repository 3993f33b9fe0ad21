"""Every `iotame ...` command line in the README and the manual (docs/*.md, code blocks and inline code) names a
command that exists and only options its parser accepts (issue 50, item 6): the docs cannot drift from the CLI
unnoticed. Options are checked, not values: a page may show `--dir /scratch` on a machine that has none."""
import argparse
import re
import shlex
from pathlib import Path

import pytest

from iotame.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_STOP = {"--", "|", "&&", ";", "||", ">", ">>", "2>", "&", "<"}
_INLINE = re.compile(r"^(?:[\w./~-]*/)?iotame (?:-|[a-z]+\b)")


def _command_lines(text: str) -> list[str]:
    """The shell lines of code blocks (continuations joined, comments dropped) and inline code spans that run the
    `iotame` command."""
    lines = []
    for block in _shell_blocks(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#(?!SBATCH).*$", "", line)
            if re.search(r"(^|[\s/])iotame\s", line):
                lines.append(line)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    spans = prose.split("`")[1::2]           # the inside of each `code span`
    lines += [span for span in spans if _INLINE.match(span) and _is_command(span.split()[1])]
    return lines


def _is_command(word: str) -> bool:
    """A span such as `iotame tests PASSED` is output, not a command line; `iotame --version` is one."""
    return word.startswith("-") or word in _subparsers(build_parser())


def _shell_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks marked sh, bash or console, or not marked."""
    blocks, body, lang = [], None, None
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            if body is None:
                body, lang = [], line.strip()[3:].strip()
            else:
                if lang in ("", "sh", "bash", "console"):
                    blocks.append("\n".join(body) + "\n")
                body = None
        elif body is not None:
            body.append(line)
    return blocks


def _argv(line: str) -> list[str] | None:
    """The words after `iotame` up to the end of its own arguments (`--`, a pipe, a redirection), or None."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    for i, w in enumerate(words):
        if w == "iotame" or (w.endswith("/iotame") and "=" not in w):
            rest = []
            for x in words[i + 1:]:
                if x in _STOP:
                    break
                rest.append(x)
            return rest
    return None


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return a.choices
    return {}


def _problems(argv: list[str]) -> list[str]:
    """What the parser would refuse in argv's options: an unknown command, action or option."""
    parser = build_parser()
    rest = list(argv)
    while rest and not rest[0].startswith("-") and _subparsers(parser):
        choices = _subparsers(parser)
        word = rest.pop(0)
        if word not in choices:
            return [f"no command {word!r}"]
        parser = choices[word]
    known = set(parser._option_string_actions)
    bad = []
    for w in rest:
        if w.startswith("-") and len(w) > 1 and not w[1].isdigit():
            name = w.split("=", 1)[0]
            if name not in known:
                bad.append(f"{parser.prog}: no option {name}")
    return bad


def _cases():
    for page in PAGES:
        for line in _command_lines(page.read_text()):
            argv = _argv(line)
            if argv:
                yield pytest.param(argv, id=f"{page.relative_to(ROOT)}: {' '.join(argv)[:60]}")


CASES = list(_cases())


def test_the_pages_hold_command_lines():
    assert len(CASES) > 40
    assert any(c.values[0][:1] == ["tune"] for c in CASES) and any(c.values[0][:2] == ["stats", "show"] for c in CASES)


@pytest.mark.parametrize("argv", CASES)
def test_a_documented_command_line_parses(argv):
    assert _problems(argv) == []


def test_the_check_finds_an_unknown_option_and_command():
    assert _problems(["tune", "--trails", "3"]) == ["iotame tune: no option --trails"]
    assert _problems(["stats", "shwo", "s.json"]) == ["no command 'shwo'"]
    assert _problems(["report", "s.json", "--out", "p.html"]) == []
