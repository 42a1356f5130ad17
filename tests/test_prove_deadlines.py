"""What the proof for every N does past ``--timeout``.

NOTE(refute-deadline): past ``prove --timeout`` the proof for every N starts no search for
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


def test_past_the_timeout_an_action_handed_out_is_not_built_and_its_goals_are_unknown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # NOTE(group-deadline): every key the action's queries would have had gets an unknown
    # outcome (a goal left out would read as proved), and no action is built
    import time

    from coherence.smt.forked import Tally
    model = _german()
    ob = param.Obligations(model)
    every = {q.key for g in range(ob.groups) for q in ob.group(g)}
    ob = param.Obligations(model)
    built: list[int] = []
    group = ob.group

    def counted(g: int) -> Any:
        built.append(g)
        return group(g)
    monkeypatch.setattr(ob, "group", counted)
    budget = param.Budget(1000.0, None, time.perf_counter())
    monkeypatch.setattr(param.Budget, "expired", lambda self: True)
    out = param._share(model, ob, iter(range(ob.groups)), budget, frozenset(), 0, Tally(1),
                       None)
    # a list of groups (one process, or --rlimit's fixed shares) is built up front: the same
    listed = param._share(model, ob, list(range(ob.groups)), budget, frozenset(), 0,
                          Tally(1), None)
    assert [(o.key, o.kind) for o in listed] == [(o.key, o.kind) for o in out]
    assert not built
    assert all(o.kind == "unknown" and "--timeout 1000 s reached" in o.message for o in out)
    assert every <= {o.key for o in out}
    assert len({o.at for o in out}) == len(out)


def test_past_the_timeout_no_goal_reads_as_proved(monkeypatch: pytest.MonkeyPatch) -> None:
    # two processes, each taking the next action when free (what --jobs does without
    # --rlimit); the deadline passes once the initial state's queries are asked
    asked: list[int] = []
    settled = param._settled

    def first_only(model: Any, q: Any, *args: Any) -> Any:
        asked.append(1)
        return settled(model, q, *args)
    monkeypatch.setattr(param, "_settled", first_only)
    monkeypatch.setattr(param.Budget, "expired", lambda self: bool(asked))
    result = param.prove_all(_german(), timeout=1000.0, jobs=2)
    assert result.verdict == "unknown" and result.proved == []
