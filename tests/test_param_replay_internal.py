"""NOTE(replay-internal): a counterexample to induction that does not replay in the reference
semantics (an encoder bug) leaves its obligation unknown, with an internal-error line, and
the command reports it (exit 3) instead of a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import AUX, MUTEX

from coherence.cli import main
from coherence.smt import param
from coherence.spec.load import load_spec_text
from coherence.trace import TraceReplayError


def _failing_once(monkeypatch: pytest.MonkeyPatch, goal: str) -> list[str]:
    """``_settle`` raises as ``find_cti`` does on a mismatch, for the first query of ``goal``
    after the initial state's; the queries it raised on are listed."""
    real = param._settle
    raised: list[str] = []

    def settle(model, q, *a, **k):
        if q.goal == goal and q.what != "init" and not raised:
            raised.append(q.what)
            raise TraceReplayError("the step of a counterexample to induction is not enabled")
        return real(model, q, *a, **k)

    monkeypatch.setattr(param, "_settle", settle)
    return raised


def test_a_replay_mismatch_is_an_unknown_with_an_internal_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = load_spec_text(MUTEX + AUX)
    assert param.prove_all(model, jobs=1).verdict == "holds"  # the spec is proved without it
    raised = _failing_once(monkeypatch, "invariant:mutex")
    result = param.prove_all(model, jobs=1, refute_depth=2)
    assert raised, "no query of the goal was asked"
    assert result.verdict == "unknown" and result.exit_code == 3
    assert result.reason is not None and result.reason.startswith(
        f"internal error on invariant:mutex, {raised[0]}: the step of a counterexample")
    assert "a bug in coherence" in result.reason
    assert "invariant:mutex" not in result.proved
    assert {"invariant:owner", "invariant:grant_waits"} <= set(result.proved)


def test_the_command_prints_it_and_exits_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "mutex.coh"
    spec.write_text(MUTEX + AUX)
    _failing_once(monkeypatch, "invariant:mutex")
    code = main(["prove", str(spec), "--agents", "any", "--jobs", "1"])
    out, err = capsys.readouterr()
    assert code == 3, (out, err)
    assert "internal error on invariant:mutex" in out + err
    assert "Traceback" not in out + err
