"""Ctrl-C during ``coherence fuzz``: the runs tried so far and the command that repeats them,
exit 3 (a partial result, as ``check`` and ``prove`` give), not a bare 'interrupted'."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from coherence.cli import EXIT_INCOMPLETE, main

# the module, not the function the package re-exports under the same name
FUZZ_MODULE = importlib.import_module("coherence.testing.fuzz")
ROOT = Path(__file__).resolve().parent.parent
SPEC = str(ROOT / "specs" / "msi_snooping.coh")


def _interrupt_after(runs: int, found: bool) -> Any:
    def fake_fuzz(*_args: Any, progress: Any = None, **_kw: Any) -> Any:
        class Stats:
            examples = runs
            examples_to_failure = 3 if found else None
            undecided = 0
        assert progress is not None  # the command always follows the runs, progress or not
        progress(Stats(), 0.5)
        raise KeyboardInterrupt
    return fake_fuzz


@pytest.mark.parametrize("found", [False, True])
def test_ctrl_c_gives_the_runs_so_far_and_exit_3(found: bool, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(FUZZ_MODULE, "fuzz",
                        _interrupt_after(17, found))
    assert main(["fuzz", SPEC, "--seed", "5", "--budget", "100"]) == EXIT_INCOMPLETE
    out = capsys.readouterr().out
    assert "interrupted after 17 of 100 runs" in out
    assert ("a failure was found" in out) == found
    assert "reproduce: coherence fuzz" in out and "--seed 5 --budget 100" in out


def test_ctrl_c_under_json(monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(FUZZ_MODULE, "fuzz",
                        _interrupt_after(9, False))
    assert main(["fuzz", SPEC, "--json", "--progress", "jsonl"]) == EXIT_INCOMPLETE
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    schema = json.loads((ROOT / "coherence" / "schemas" / "fuzz.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["verdict"] == "interrupted" and doc["exit_code"] == 3
    assert doc["stats"]["examples"] == 9 and doc["failure_found"] is False
    last = json.loads(captured.err.splitlines()[-1])
    assert last["type"] == "summary" and last["verdict"] == "interrupted"
    assert last["exit_code"] == 3 and last["runs"] == 9
