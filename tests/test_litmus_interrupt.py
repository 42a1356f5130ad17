"""Ctrl-C during ``coherence litmus``: the programs finished so far, a note saying so, exit 3
(a partial result, as ``check`` gives), not a bare 'interrupted'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import coherence.litmus.model as litmus_model
from coherence.cli import EXIT_INCOMPLETE, main

SPEC = str(Path(__file__).resolve().parent.parent / "specs" / "gpu_write_through.coh")


def _interrupt_on_call(n: int) -> Any:
    real = litmus_model.run_on_model
    calls = {"n": 0}

    def run_on_model(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(*args, **kw)
    return run_on_model


def test_ctrl_c_keeps_the_finished_programs(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(litmus_model, "run_on_model", _interrupt_on_call(2))
    code = main(["litmus", SPEC, "MP", "-V", "weak", "-V", "fence.sys", "--json"])
    assert code == EXIT_INCOMPLETE
    doc = json.loads(capsys.readouterr().out)
    assert [(r["test"], r["variant"]) for r in doc["results"]] == [("MP", "weak")]
    assert doc["notes"][0].startswith("interrupted (Ctrl-C) after 1 of 2 programs")
    assert doc["exit_code"] == 3


def test_ctrl_c_before_any_program_finishes(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(litmus_model, "run_on_model", _interrupt_on_call(1))
    assert main(["litmus", SPEC, "MP", "-V", "weak"]) == EXIT_INCOMPLETE
    assert "note: interrupted (Ctrl-C) after 0 of 1 programs" in capsys.readouterr().out
