"""NOTE(refute-deadline): past ``prove --timeout`` the proof for every N starts no search for
a concrete counterexample (its BMC encoding alone ran minutes past the deadline on MSI, and
the outer ``timeout`` of a device run then lost the whole result) and says so."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import ROOT

from coherence.smt import param
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

GERMAN = ROOT / "tests" / "specs" / "infer" / "german.coh"  # no aux lines: not inductive


def _german() -> Any:
    model = load_spec(GERMAN)
    return drop_properties(model, [p.name for p in model.properties])


def test_past_the_timeout_no_counterexample_search_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import coherence.smt.bmc as bmc_module
    searched: list[int] = []

    def bmc(model: Any, *args: Any, **kw: Any) -> Any:
        searched.append(model.agents)
        raise AssertionError("a counterexample search past the deadline")
    monkeypatch.setattr(bmc_module, "bmc", bmc)
    monkeypatch.setattr(param.Budget, "expired", lambda self: True)
    result = param.prove_all(_german(), timeout=1000.0)
    assert result.verdict == "unknown" and not searched
    assert "--timeout 1000 s reached" in result.reason
    assert any("no counterexample searched at 2-3 agents" in n for n in result.notes)


def test_before_the_timeout_the_search_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import coherence.smt.bmc as bmc_module
    searched: list[int] = []
    real = bmc_module.bmc

    def bmc(model: Any, *args: Any, **kw: Any) -> Any:
        searched.append(model.agents)
        return real(model, 2, **{k: v for k, v in kw.items() if k != "timeout"})
    monkeypatch.setattr(bmc_module, "bmc", bmc)
    result = param.prove_all(_german(), timeout=1000.0, rlimit=20_000_000)
    assert result.verdict == "unknown" and searched == [2, 3]
    assert not any("no counterexample searched" in n for n in result.notes)
