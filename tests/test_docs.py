"""Every command shown with its output in README.md and docs/*.md is run, and its output
compared with what the doc shows; every relative link resolves inside the repository.

A doc shows a command in a fenced block whose lines start with ``$ coherence ...``, each
followed by its output (stdout and stderr, as a terminal shows them). The blocks are found
here, so a new one is checked without touching this file. What the doc may leave out or
cannot pin:

* a line ``...`` stands for any number of output lines (none included);
* times, rates, memory, thread counts and absolute paths are normalised on both sides
  (``NORMALISE``), so a doc keeps the figures of the run it was written from;
* ``<!-- slow -->`` on the line before the fence moves the block to the slow tier (the
  default tier's doc test stays well under a minute);
* ``<!-- file: NAME -->`` before a fence makes that block a file ``NAME`` in the commands'
  working directory (a litmus test or spec the doc then runs). Commands run in a fresh
  directory holding those files and links to the repository's ``specs/``, ``results/`` and
  ``examples/``, at 100 columns, with ``coherence`` meaning this checkout's
  ``python -m coherence.cli``.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED_DIRS = ("specs", "results", "examples")
COLUMNS = "100"
TIMEOUT_S = 120
SLOW_TIMEOUT_S = 900

FENCE = re.compile(r"^(```+|~~~+)\s*(\S*)")
MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")


@attrs.frozen
class Block:
    """One fenced block of a doc, with the markers in the comments right before it."""

    doc: Path
    line: int  # 1-based line of the opening fence
    info: str
    body: list[str]
    markers: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    def file_name(self) -> str | None:
        for m in self.markers:
            if m.startswith("file:"):
                return m[len("file:"):].strip()
        return None


@attrs.frozen
class Command:
    block: Block
    argv: list[str]
    text: str
    expected: list[str]


def blocks(doc: Path) -> list[Block]:
    lines = doc.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2), i
        markers: list[str] = []
        k = start - 1
        while k >= 0 and (not lines[k].strip() or MARKER.match(lines[k].strip())):
            mm = MARKER.match(lines[k].strip())
            if mm:
                markers.insert(0, mm.group(1))
            k -= 1
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(fence[:3]):
            body.append(lines[i])
            i += 1
        i += 1
        out.append(Block(doc, start + 1, info, body, tuple(markers)))
    return out


def commands(block: Block) -> list[Command]:
    """The ``$ coherence ...`` commands of a block and the output shown under each."""
    if not block.body or not block.body[0].startswith("$ "):
        return []
    out: list[Command] = []
    for line in block.body:
        if line.startswith("$ "):
            text = line[2:].strip()
            words = shlex.split(text)
            out.append(Command(block, words, text, []))
        else:
            out[-1].expected.append(line)
    return out


ALL_BLOCKS = [b for d in DOCS for b in blocks(d)]
ALL_COMMANDS = [c for b in ALL_BLOCKS for c in commands(b)]


def _param(c: Command) -> object:
    slow = "slow" in c.block.markers
    return pytest.param(c, id=f"{c.block.where} {c.text[:60]}",
                        marks=[pytest.mark.slow] if slow else [])


# ---------------------------------------------------------------- normalising

NORMALISE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"[\d,]+(?:\.\d+)? states/s"), "<rate> states/s"),
    (re.compile(r"[\d,]+(?:\.\d+)? bytes/state"), "<size> bytes/state"),
    (re.compile(r"\b[\d,]+(?:\.\d+)? ?(?:B|KiB|MiB|GiB|kB|MB|GB)\b"), "<size>"),
    (re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms|µs|min)\b"), "<time>"),
    (re.compile(r"\b\d+ threads?\b"), "<n> threads"),
]


def normalise(lines: list[str], paths: list[str]) -> list[str]:
    out = []
    for line in lines:
        for p in paths:
            line = line.replace(p + os.sep, "").replace(p, ".")
        for pattern, repl in NORMALISE:
            line = pattern.sub(repl, line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line; an expected line ``...`` matches any run of actual lines."""
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(expected):
            ok = j == len(actual)
        elif expected[i].strip() == "...":
            ok = go(i + 1, j) or (j < len(actual) and go(i, j + 1))
        else:
            ok = j < len(actual) and expected[i] == actual[j] and go(i + 1, j + 1)
        memo[(i, j)] = ok
        return ok

    return go(0, 0)


def test_matching_rules() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "b"], ["a", "b"])
    assert not matches(["a", "...", "d"], ["a", "b", "c"])
    assert not matches(["a", "b"], ["a", "b", "c"])
    assert normalise(["0.66 s; 69,271 states/s, peak memory 49 MiB, 264 bytes/state",
                      "engine compiled, 16 threads", "5 steps, 2 states"], []) == [
        "<time>; <rate> states/s, peak memory <size>, <size> bytes/state",
        "engine compiled, <n> threads", "5 steps, 2 states"]


# ---------------------------------------------------------------- the blocks themselves


def test_markers_and_commands_are_read(tmp_path: Path) -> None:
    doc = tmp_path / "d.md"
    doc.write_text("text\n\n<!-- slow -->\n\n```\n$ coherence check a.coh\nout 1\n...\n"
                   "$ coherence litmus 'a b.coh' MP\nout 2\n```\n<!-- file: t.litmus -->\n"
                   "```litmus\nlitmus T;\n```\n```\nplain\n```\n")
    first, second, third = blocks(doc)
    assert first.markers == ("slow",) and first.line == 5 and first.file_name() is None
    assert [(c.argv, c.expected) for c in commands(first)] == [
        (["coherence", "check", "a.coh"], ["out 1", "..."]),
        (["coherence", "litmus", "a b.coh", "MP"], ["out 2"])]
    assert second.file_name() == "t.litmus" and second.body == ["litmus T;"]
    assert third.markers == () and commands(third) == []


def test_the_docs_show_commands() -> None:
    """The block finder finds what is there (a broken finder would check nothing)."""
    where = {c.block.doc.name for c in ALL_COMMANDS}
    assert {"README.md", "fuzz.md", "litmus.md"} <= where
    assert len(ALL_COMMANDS) >= 8


def test_every_shown_command_is_one_this_test_runs() -> None:
    """A ``$`` line this test would not run (another program) is not allowed to sneak in."""
    for b in ALL_BLOCKS:
        for line in b.body:
            if line.startswith("$ "):
                assert line.startswith("$ coherence "), f"{b.where}: {line}"
        if any(line.startswith("$ ") for line in b.body):
            assert b.body[0].startswith("$ "), f"{b.where}: output before the first command"


def test_file_blocks_have_unique_names_and_are_used() -> None:
    for doc in DOCS:
        named = [b for b in blocks(doc) if b.file_name()]
        names = [b.file_name() for b in named]
        assert len(names) == len(set(names)), f"{doc.name}: a file name is used twice"
        text = " ".join(c.text for c in ALL_COMMANDS if c.block.doc == doc)
        for b in named:
            assert b.file_name() in text.split(), f"{b.where}: {b.file_name()} is never run"


def _workdir(tmp: Path, doc: Path) -> Path:
    for name in LINKED_DIRS:
        (tmp / name).symlink_to(ROOT / name, target_is_directory=True)
    for b in blocks(doc):
        name = b.file_name()
        if name:
            (tmp / name).write_text("\n".join(b.body) + "\n", encoding="utf-8")
    return tmp


def _needs(command: Command) -> str | None:
    """Why this command cannot run here (an external program its shown output needs)."""
    shown = "\n".join(command.expected)
    if "engine compiled" in shown and shutil.which("cc") is None and \
            shutil.which("gcc") is None and not os.environ.get("CC"):
        return "the shown output is the compiled engine's: needs a C compiler (cc)"
    return None


@pytest.mark.parametrize("command", [_param(c) for c in ALL_COMMANDS])
def test_command_prints_what_the_doc_shows(command: Command, tmp_path: Path) -> None:
    why = _needs(command)
    if why:
        pytest.skip(why)
    assert command.argv[0] == "coherence"
    cwd = _workdir(tmp_path, command.block.doc)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
           "COLUMNS": COLUMNS, "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("FORCE_COLOR", None)
    timeout = SLOW_TIMEOUT_S if "slow" in command.block.markers else TIMEOUT_S
    proc = subprocess.run([sys.executable, "-m", "coherence.cli", *command.argv[1:]],
                          cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, check=False)
    paths = [str(cwd), str(cwd.resolve()), str(ROOT)]
    actual = normalise(proc.stdout.splitlines(), paths)
    expected = normalise(command.expected, paths)
    if not matches(expected, actual):
        diff = "\n".join(difflib.unified_diff(expected, actual, "doc", "actual", lineterm=""))
        pytest.fail(f"{command.block.where}: `{command.text}` (exit {proc.returncode}) does not "
                    f"print what the doc shows:\n{diff}")


# ---------------------------------------------------------------- links

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`(\.\./[^`\s]*)`")


def _prose(doc: Path) -> str:
    """The doc without its fenced blocks (code there is relative to other places)."""
    lines, keep, fence = doc.read_text(encoding="utf-8").splitlines(), [], None
    for line in lines:
        m = FENCE.match(line)
        if m and fence is None:
            fence = m.group(1)[:3]
        elif fence is not None and line.startswith(fence):
            fence = None
        elif fence is None:
            keep.append(line)
    return "\n".join(keep)


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    text = _prose(doc)
    bad = []
    for target in LINK.findall(text) + CODE_PATH.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            bad.append(target)
    assert bad == [], f"{doc.name}: links that leave the repository or lead nowhere: {bad}"
