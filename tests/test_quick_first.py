"""NOTE(quick-first): under --timeout, a query whose quick tries give up waits for its long
tries until every query of the share has had its quick ones; the verdict, the settled
obligations and the counterexamples are what asking each query whole gives, and a query still
waiting at --timeout is unknown, never settled. Without --timeout each query is asked whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import z3
from helpers import AUX, MUTEX, PROOF_RLIMIT

from coherence.smt import param
from coherence.smt.param import prove_all
from coherence.spec.load import load_spec_text

GOAL = "invariant:mutex"
LATER = 3600.0  # a --timeout never reached: only the order of the tries changes


def _deferring(monkeypatch: pytest.MonkeyPatch, goal: str,
               deferred: list[Any] | None = None) -> list[tuple[str, str, str]]:
    """Every step query of ``goal`` is deferred at once (as if its quick tries gave up);
    each quick and late call is logged, in order, as (stage, goal, action), and each
    deferred query's key added to ``deferred``."""
    settle, late = param._settle, param._settle_late
    calls: list[tuple[str, str, str]] = []

    def quick(model: Any, q: Any, shared: Any, budget: Any, grounded: Any = None,
              core: Any = None, defer: bool = False) -> Any:
        calls.append(("quick", q.goal, q.what))
        if defer and q.goal == goal and q.what != "init":
            if deferred is not None:
                deferred.append(q.key)
            return param.Deferred((z3.unknown, "deferred by the test")), None, ""
        return settle(model, q, shared, budget, grounded, core, defer)

    def long(model: Any, q: Any, *rest: Any) -> Any:
        calls.append(("late", q.goal, q.what))
        return late(model, q, *rest)
    monkeypatch.setattr(param, "_settle", quick)
    monkeypatch.setattr(param, "_settle_late", long)
    return calls


def test_deferred_queries_get_their_long_tries_after_every_quick_try(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = load_spec_text(MUTEX + AUX, str(tmp_path / "mutex.coh"))
    whole = prove_all(model, rlimit=PROOF_RLIMIT)
    assert whole.verdict == "holds"
    calls = _deferring(monkeypatch, GOAL)
    cache = str(tmp_path / "mutex.proof-cache")
    split = prove_all(model, rlimit=PROOF_RLIMIT, cache=cache, timeout=LATER)
    assert (split.verdict, split.proved, sorted(split.settled)) == \
        (whole.verdict, whole.proved, sorted(whole.settled))
    stages = [stage for stage, _goal, _what in calls]
    deferred = [(g, w) for s, g, w in calls if s == "quick" and g == GOAL and w != "init"]
    assert deferred, "no query of the goal was deferred"
    # each deferred query has its long tries once, after the last quick try of the share
    assert stages.index("late") == stages.count("quick")
    assert [(g, w) for s, g, w in calls if s == "late"] == deferred
    # and what they settled was recorded: a second run asks Z3 nothing
    calls.clear()
    again = prove_all(model, rlimit=PROOF_RLIMIT, cache=cache, timeout=LATER)
    assert again.verdict == "holds" and again.cached == len(again.settled) - _unchanged(model)
    assert not calls


def _unchanged(model: Any) -> int:
    """The obligations settled without Z3 (NOTE(frame-unchanged)), so without the cache."""
    return sum(q.unchanged for q in param.obligations(model)[2])


def test_a_counterexample_to_induction_is_found_by_the_long_tries(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = load_spec_text(MUTEX, str(tmp_path / "mutex.coh"))
    whole = prove_all(model, rlimit=PROOF_RLIMIT)
    assert whole.verdict == "unknown" and any(GOAL in c for c in whole.ctis)
    calls = _deferring(monkeypatch, GOAL)
    split = prove_all(model, rlimit=PROOF_RLIMIT, timeout=LATER)
    assert any(s == "late" for s, _g, _w in calls)
    assert (split.verdict, split.ctis, split.proved) == (whole.verdict, whole.ctis, whole.proved)
    assert [c.summary for c in split.cti_details] == [c.summary for c in whole.cti_details]


def test_a_query_still_waiting_at_the_timeout_is_unknown_not_settled(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = load_spec_text(MUTEX + AUX, str(tmp_path / "mutex.coh"))
    asked = sum(not q.unchanged for q in param.obligations(model)[2])
    deferred: list[Any] = []
    calls = _deferring(monkeypatch, GOAL, deferred)
    # --timeout passes once every query has had its quick tries: the deferred ones are
    # never asked
    expired = param.Budget.expired
    monkeypatch.setattr(param.Budget, "expired", lambda self: expired(self) or sum(
        s == "quick" for s, _g, _w in calls) >= asked)
    result = prove_all(model, timeout=LATER, refute_depth=0)
    assert not any(s == "late" for s, _g, _w in calls)
    assert result.verdict == "unknown" and GOAL not in result.proved
    assert "--timeout" in (result.reason or "")
    assert deferred and not set(deferred) & set(result.settled)


def test_without_a_timeout_each_query_is_asked_whole(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    model = load_spec_text(MUTEX + AUX, str(tmp_path / "mutex.coh"))
    calls = _deferring(monkeypatch, GOAL)
    assert prove_all(model, rlimit=PROOF_RLIMIT).verdict == "holds"
    assert any(g == GOAL for _s, g, _w in calls)
    assert not any(s == "late" for s, _g, _w in calls)  # nothing was deferred
