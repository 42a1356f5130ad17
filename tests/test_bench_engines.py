"""``coherence bench engines`` (coherence/engines/bench.py): the table's structure, state counts
that agree across the tools that explore the same state space, and missing or slow tools.

No timed assertions: only the structure and the counts, which do not depend on the machine.
Rows are tiny (msi_snooping at 2 caches: 16 states without the coherence monitor, as
docs/rumur.md's table pins for ours and Rumur's).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.engines.bench import (
    DEFAULT_ROWS,
    TOOLS,
    Row,
    bench,
    parse_row,
    run_cell,
    speedup,
    table,
)
from coherence.engines.compiled import CompiledEngine

SPECS = Path(__file__).resolve().parent.parent / "specs"
TINY = Row(str(SPECS / "msi_snooping.coh"), 2, False)
TINY_STATES = 16  # msi_snooping, 2 caches, symmetry off, monitor skipped (docs/rumur.md)
CELL_KEYS = {"tool", "row", "status", "states", "model_states", "seconds", "build_seconds",
             "states_per_second", "peak_rss_bytes", "bytes_per_state", "verdict", "threads",
             "speedup"}

needs_cc = pytest.mark.skipif(CompiledEngine().available() is not None,
                              reason="the compiled engine needs a C compiler")


def test_default_rows_parse_and_name_the_issue_rows() -> None:
    rows = [parse_row(r) for r in DEFAULT_ROWS]
    assert [(Path(r.spec).stem, r.agents, r.symmetry) for r in rows] == [
        ("german", 4, False), ("german", 5, False), ("german", 6, True),
        ("broadcast_invalidate_acked", 4, False), ("mesi_directory", 4, False)]
    assert all(Path(r.spec).is_file() for r in rows)


@pytest.mark.parametrize("text", ["german", "german:x", "german:4:maybe", "nosuchspec:2"])
def test_bad_rows_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="--rows"):
        parse_row(text)


def test_bad_rows_exit_2_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "engines", "--rows", "german:many"]) == 2
    assert "german:many" in capsys.readouterr().err


def test_speedups_from_times_bounds_and_rates() -> None:
    mine = {"status": "ok", "seconds": 2.0, "stopped": None, "model_states_per_second": 50.0}
    assert speedup(mine, {"status": "ok", "seconds": 6.0, "stopped": None}) == "3.0x"
    assert speedup(mine, {"status": "timeout", "limit_s": 300.0}) == ">150.0x"
    capped = {"status": "ok", "seconds": 1.0, "stopped": "state limit",
              "model_states_per_second": 10.0}
    assert speedup(mine, capped) == "~5.0x"
    assert speedup(mine, {"status": "not run", "reason": "no rumur"}) is None
    assert speedup(capped, {"status": "ok", "seconds": 6.0, "stopped": None}) is None


@needs_cc
def test_table_and_counts_of_our_engines() -> None:
    tools = ["reference", "compiled-1", "compiled-all"]
    doc = bench([TINY], tools, timeout=120, threads=2)
    assert doc["tools"] == tools and len(doc["rows"]) == 1
    row = doc["rows"][0]
    assert row["row"] == "msi_snooping:2" and row["symmetry"] == "off"
    cells = row["cells"]
    assert [c["tool"] for c in cells] == tools
    for c in cells:
        assert c["status"] == "ok", c
        assert set(c) >= CELL_KEYS, CELL_KEYS - set(c)
        assert c["states"] == c["model_states"] == TINY_STATES
        assert c["verdict"] == "holds" and c["peak_rss_bytes"] > 0
        assert set(c["speedup"]) == set(tools) - {c["tool"]}
    assert [c["threads"] for c in cells] == [1, 1, 2]
    text = table(doc)
    lines = text.splitlines()
    title = lines.index(row["title"])
    assert lines[title + 1].split()[:3] == ["tool", "states", "seconds"]
    for i, tool in enumerate(tools):
        fields = lines[title + 2 + i].split()
        assert fields[0] == tool and fields[1] == str(TINY_STATES)
    assert json.loads(json.dumps(doc)) == doc  # the --json document is plain JSON


def test_a_search_past_its_time_limit_says_so() -> None:
    # the reference engine needs several seconds for German at 3 caches (58,077 states)
    cell = run_cell(Row(str(SPECS / "german.coh"), 3, False), "reference", timeout=0.5,
                    threads=1)
    assert cell["status"] == "timeout" and cell["reason"] == "timed out after 0.5 s"
    assert table({"tools": ["reference"], "threads": 1, "rows": [
        {"title": "german", "cells": [cell]}]}).splitlines()[3] == \
        "reference     timeout: timed out after 0.5 s"


def _path_without(tmp_path: Path, missing: set[str]) -> str:
    """A PATH holding the usual tools but ``missing``."""
    keep = tmp_path / "bin"
    keep.mkdir()
    for name in ("cc", "gcc", "rumur", "spin"):
        found = shutil.which(name)
        if found is not None and name not in missing:
            (keep / name).symlink_to(found)
    return str(keep)


@needs_cc
def test_missing_rumur_and_spin_give_not_run_cells(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", _path_without(tmp_path, {"rumur", "spin"}))
    monkeypatch.delenv("CC", raising=False)
    code = main(["bench", "engines", "--rows", "msi_snooping:2",
                 "--tools", "compiled-1,rumur,spin", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    cells = {c["tool"]: c for c in doc["rows"][0]["cells"]}
    assert cells["compiled-1"]["status"] == "ok"
    assert cells["compiled-1"]["states"] == TINY_STATES
    assert cells["rumur"] == {"tool": "rumur", "row": "msi_snooping:2", "status": "not run",
                              "reason": "rumur and cc are needed on the PATH",
                              "speedup": {"compiled-1": None, "spin": None}}
    assert cells["spin"]["status"] == "not run" and "spin" in cells["spin"]["reason"]
    assert cells["compiled-1"]["speedup"] == {"rumur": None, "spin": None}


def test_no_compiler_gives_not_run_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", _path_without(tmp_path, {"cc", "gcc", "rumur", "spin"}))
    monkeypatch.delenv("CC", raising=False)
    assert main(["bench", "engines", "--rows", "msi_snooping:2",
                 "--tools", ",".join(t for t in TOOLS if t != "reference")]) == 0
    out = capsys.readouterr().out
    for tool in ("compiled-1", "compiled-all", "rumur", "spin"):
        line = next(ln for ln in out.splitlines() if ln.startswith(tool + " "))
        assert line.split()[1:3] == ["not", "run:"], line


@pytest.mark.slow
@needs_cc
@pytest.mark.skipif(shutil.which("rumur") is None or shutil.which("spin") is None,
                    reason="needs rumur and spin")
def test_rumur_and_spin_count_the_same_state_space() -> None:
    # symmetry off and the monitor skipped: Rumur's count is ours; Spin stores READY + 1 of
    # its states per state of ours (plus the one before initialisation)
    doc = bench([TINY], ["compiled-1", "rumur", "spin"], timeout=300, threads=2)
    cells = {c["tool"]: c for c in doc["rows"][0]["cells"]}
    assert all(c["status"] == "ok" for c in cells.values()), cells
    assert cells["rumur"]["states"] == cells["compiled-1"]["states"] == TINY_STATES
    spin = cells["spin"]
    assert spin["model_states"] == TINY_STATES
    assert spin["states"] == spin["spin_states_per_state"] * TINY_STATES + 1
    assert spin["threads"] == 2
