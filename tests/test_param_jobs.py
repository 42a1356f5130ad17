"""NOTE(forked-shares): a proof for every N settled by several processes says what one
process says: the same verdict, proved properties, counterexamples to induction and settled
obligations, read in the order one process meets them."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from helpers import AUX, MUTEX, PROOF_RLIMIT, SPECS, counted_forks

from coherence.smt import forked, param
from coherence.smt.param import ParamResult, obligations, prove_all
from coherence.spec.load import load_spec, load_spec_text
from coherence.spec.select import drop_properties

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="fork is used on Linux only")


def _same(a: ParamResult, b: ParamResult) -> None:
    assert (a.verdict, a.proved, a.ctis, a.instance, a.reason) == \
        (b.verdict, b.proved, b.ctis, b.instance, b.reason)
    assert a.settled == b.settled
    assert [c.summary for c in a.cti_details] == [c.summary for c in b.cti_details]
    assert [f.name for f in a.failures] == [f.name for f in b.failures]


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The workers forked (counted in this process)."""
    return counted_forks(monkeypatch)


def test_german_is_proved_by_two_processes_as_by_one(forks: list[int]) -> None:
    model = drop_properties(load_spec(SPECS / "german.coh"), ["coherent"])
    one = prove_all(model, rlimit=PROOF_RLIMIT)
    assert not forks
    two = prove_all(model, rlimit=PROOF_RLIMIT, jobs=2)
    assert len(forks) == 1
    assert two.verdict == "holds"
    _same(one, two)
    # every obligation, the worker's among them, is settled once
    assert sorted(two.settled) == sorted({q.key for q in obligations(model)[2]})
    assert not any("worker" in n for n in two.notes)


def test_a_counterexample_to_induction_comes_back_from_a_worker(tmp_path: Path,
                                                                forks: list[int]) -> None:
    model = load_spec_text(MUTEX, str(tmp_path / "mutex.coh"))
    one = prove_all(model, rlimit=PROOF_RLIMIT)
    three = prove_all(model, rlimit=PROOF_RLIMIT, jobs=3)
    assert len(forks) == 2
    assert three.verdict == "unknown" and three.cti_details
    _same(one, three)
    cti = next(c for c in three.cti_details if "invariant:mutex" in c.summary)
    assert "receives Grant" in cti.step.event  # replayed, pickled and read back whole


def test_a_refuted_spec_is_refuted_alike() -> None:
    model = load_spec(SPECS / "broadcast_invalidate.coh")
    one = prove_all(model, rlimit=PROOF_RLIMIT)
    two = prove_all(model, rlimit=PROOF_RLIMIT, jobs=2)
    assert two.verdict == "fails" and two.instance == 2
    _same(one, two)


def test_reuse_skips_what_an_earlier_proof_settled_in_every_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = load_spec_text(MUTEX + AUX, str(tmp_path / "mutex.coh"))
    whole = prove_all(model, rlimit=PROOF_RLIMIT, jobs=2)
    assert whole.verdict == "holds"

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("a reused obligation was settled again")
    monkeypatch.setattr(param, "_settle", never)
    again = prove_all(model, rlimit=PROOF_RLIMIT, jobs=2, reuse=whole.settled)
    _same(whole, again)


def test_a_worker_that_fails_costs_time_not_the_verdict(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    model = load_spec_text(MUTEX + AUX, str(tmp_path / "mutex.coh"))
    one = prove_all(model, rlimit=PROOF_RLIMIT)
    parent = os.getpid()
    share = param._share

    def broken(*args: object, **kwargs: object) -> object:
        if os.getpid() != parent:
            raise MemoryError("a worker out of memory")
        return share(*args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(param, "_share", broken)
    two = prove_all(model, rlimit=PROOF_RLIMIT, jobs=2)
    _same(one, two)
    assert any("MemoryError: a worker out of memory" in n for n in two.notes)


@pytest.mark.parametrize("fail", [False, True])
def test_without_rlimit_the_actions_go_to_whichever_process_is_free(
        monkeypatch: pytest.MonkeyPatch, forks: list[int], fail: bool) -> None:
    # wall-clock mode (no --rlimit): actions are claimed as processes free up (forked.Claims);
    # a worker that fails after claiming some has them settled again here
    model = drop_properties(load_spec(SPECS / "german.coh"), ["coherent"])
    one = prove_all(model, timeout=600)
    parent = os.getpid()
    share = param._share
    started = forked.Tally(1)  # the worker has claimed its first action
    taken: list[tuple[int, list[int]]] = []

    def watched(model_: object, ob: object, groups: Iterable[int], budget: object,
                reuse: object, k: int, *args: object) -> object:
        seen: list[int] = []

        def claimed() -> Iterator[int]:
            for g in groups:
                seen.append(g)
                if os.getpid() != parent:
                    started.set(0, 1, 1)
                    if fail and len(seen) > 1:
                        raise MemoryError("a worker out of memory")
                else:
                    deadline = time.monotonic() + 20
                    while started.sums()[0] == 0 and time.monotonic() < deadline:
                        time.sleep(0.01)
                yield g
        out = share(model_, ob, claimed(), budget, reuse, k, *args)  # type: ignore[arg-type]
        if os.getpid() == parent:
            taken.append((k, seen))
        return out
    monkeypatch.setattr(param, "_share", watched)
    two = prove_all(model, timeout=600, jobs=2)
    assert len(forks) == 1 and two.jobs == 2
    _same(one, two)
    assert sorted(two.settled) == sorted({q.key for q in obligations(model)[2]})
    groups = len(param.Obligations(model).acts) + 1
    mine = taken[0][1]
    assert mine == sorted(mine) and 0 < len(mine) < groups  # the worker took some
    if fail:  # what the worker claimed, settled here again: every action once in all
        assert taken[1][0] == 1 and taken[1][1]
        assert sorted(mine + taken[1][1]) == list(range(groups))
        assert any("MemoryError" in n for n in two.notes)
    else:
        assert len(taken) == 1
