"""NOTE(forked-shares): shares of work in forked workers come back whole, in share order; a
worker that raises or dies costs time, never the answer; Z3's timers work in a worker."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest
import z3

from coherence.smt import forked
from coherence.smt.forked import Shares, Tally

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="fork is used on Linux only")


def test_each_share_runs_in_its_own_process_and_comes_back_in_order() -> None:
    parent = os.getpid()
    shares = Shares(3, lambda k: (k, os.getpid()))
    out = shares.results()
    assert [k for k, _pid in out] == [0, 1, 2]
    assert out[0][1] == parent
    assert len({pid for _k, pid in out}) == 3
    assert shares.failures == []


def test_a_share_whose_worker_raises_is_run_again_here() -> None:
    parent = os.getpid()

    def run(k: int) -> int:
        if os.getpid() != parent:
            raise ValueError("only in the worker")
        return k * 10
    shares = Shares(2, run)
    assert shares.results() == [0, 10]
    assert len(shares.failures) == 1 and "ValueError: only in the worker" in shares.failures[0]


def test_a_share_whose_worker_dies_is_run_again_here() -> None:
    parent = os.getpid()

    def run(k: int) -> str:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"share {k}"
    shares = Shares(3, run)
    assert shares.results() == ["share 0", "share 1", "share 2"]
    assert len(shares.failures) == 2


def test_an_error_here_stops_the_workers() -> None:
    parent = os.getpid()
    tally = Tally(2)

    def run(k: int) -> int:
        if os.getpid() == parent:
            while tally.sums()[1] == 0:  # until the worker has said who it is
                time.sleep(0.01)
            raise KeyError("here")
        tally.set(k, 0, os.getpid())
        signal.pause()  # a worker that would never end on its own
        return k
    with pytest.raises(KeyError):
        Shares(2, run).results()
    worker = tally.sums()[1]
    assert worker not in (0, parent)
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(worker, 0)


def test_without_fork_every_share_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "can_fork", lambda: False)
    parent = os.getpid()
    assert Shares(3, lambda k: (k, os.getpid())).results() == [(0, parent), (1, parent),
                                                               (2, parent)]


def test_z3_timeouts_fire_in_a_worker_after_the_parent_used_them() -> None:
    """Z3's timer threads are a pool in the parent; a forked worker has none of them. A
    worker whose timer never fired would hang: the alarm kills it, and the share would come
    back as a failure."""
    def hard(ms: int) -> str:
        x, y, z = z3.Ints("x y z")
        s = z3.Solver()
        s.set("timeout", ms)
        s.add(x * x * x + y * y * y + z * z * z == 42, x > 10**6)
        return str(s.check())
    assert hard(50) == "unknown"  # the parent's pool now has a timer thread

    def run(k: int) -> list[str]:
        signal.alarm(60)
        try:
            return [hard(50) for _ in range(3)]
        finally:
            signal.alarm(0)
    shares = Shares(2, run)
    assert shares.results() == [["unknown"] * 3] * 2
    assert shares.failures == []


def test_tally_sums_what_every_worker_wrote() -> None:
    tally = Tally(3)

    def run(k: int) -> None:
        tally.set(k, k + 1, 10)
    Shares(3, run).results()
    assert tally.sums() == (6, 30)


def test_mining_filters_in_a_worker_beside_the_callers_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``mine(beside=..., fork=True)``: the caller's work runs here with the templates while a
    worker filters; the candidates come back as the ones filtered here, atoms and all."""
    from helpers import ROOT, counted_forks

    from coherence.smt.infer_mine import explore, mine
    from coherence.spec.load import load_spec
    model = load_spec(ROOT / "tests" / "specs" / "infer" / "sharer_counter.coh")
    here, stats, _tpl = mine(model, (2, 3), 50_000, float("inf"), source=explore)
    parent = os.getpid()
    seen: list[tuple[int, object]] = []
    forks = counted_forks(monkeypatch)
    there, stats2, tpl2 = mine(model, (2, 3), 50_000, float("inf"), source=explore,
                               beside=lambda t: seen.append((os.getpid(), t)), fork=True)
    assert len(forks) == 1 and seen == [(parent, tpl2)]
    assert stats2.notes == []
    assert [c.text for c in there] == [c.text for c in here] and len(here) > 10
    assert [c.cols for c in there] == [c.cols for c in here]
    # the atoms are this process's templates' own objects
    assert all(a is tpl2.slots[c.kind][col][0]
               for c in there for (a, _w, _p), (col, _q) in zip(c.lits, c.cols, strict=True))
    assert (stats2.generated, stats2.rows) == (stats.generated, stats.rows)


def test_no_more_workers_than_memory_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    gib = 1 << 30
    monkeypatch.setattr(forked, "rss_bytes", lambda: 10 * gib)
    monkeypatch.setattr(forked, "available_memory_bytes", lambda: 25 * gib)
    assert forked.affordable(64) == 3  # this process and two copies of it
    assert forked.affordable(2) == 2
    monkeypatch.setattr(forked, "available_memory_bytes", lambda: 1 * gib)
    assert forked.affordable(8) == 1
    monkeypatch.setattr(forked, "available_memory_bytes", lambda: 0)  # unknown: not Linux
    assert forked.affordable(8) == 8


def test_memory_sizes_are_read_here() -> None:
    from coherence.memory import available_memory_bytes, rss_bytes, usable_cpus
    assert rss_bytes() > 1 << 20
    assert available_memory_bytes() > 1 << 20
    assert usable_cpus() >= 1


# ---------------------------------------------------------------- NOTE(bench-isolated)


def test_an_isolated_run_happens_in_a_child_and_says_its_progress_here() -> None:
    parent = os.getpid()
    said: list[tuple[str, int]] = []

    def run(say: Callable[[str], None]) -> dict[str, object]:
        for k in range(3):
            say(f"step {k} é" + "x" * (70_000 if k == 1 else 0))  # one larger than a pipe
        return {"pid": os.getpid(), "terms": z3.Int("isolated_probe").get_id()}
    run_ = forked.Isolated(run, lambda s: said.append((s[:8], len(s))))
    out = run_.result()
    assert out["pid"] != parent and run_.failure is None
    assert said == [("step 0 é", 8), ("step 1 é", 70_008), ("step 2 é", 8)]


MADE: list[object] = []


def test_what_an_isolated_run_makes_stays_in_the_child() -> None:
    """The point of it: what the run keeps (here Z3 terms in a module's list, as the encoders'
    caches keep theirs) is not kept here, so the next run starts as this one did."""
    def make(_say: Callable[[str], None]) -> int:
        MADE.extend(z3.Int(f"isolated_{k}") for k in range(100))
        return len(MADE)
    assert forked.Isolated(make, lambda _s: None).result() == 100
    assert MADE == []
    assert forked.Isolated(make, lambda _s: None).result() == 100


def test_an_isolated_run_that_raises_or_dies_is_run_here(
        monkeypatch: pytest.MonkeyPatch) -> None:
    parent = os.getpid()

    def raising(say: Callable[[str], None]) -> int:
        say("before")
        if os.getpid() != parent:
            raise ValueError("only in the child")
        return 7

    def dying(_say: Callable[[str], None]) -> int:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return 8
    said: list[str] = []
    run = forked.Isolated(raising, said.append)
    assert run.result() == 7
    assert said == ["before", "before"]  # the child's, then this process's
    assert run.failure is not None and "ValueError: only in the child" in run.failure
    run = forked.Isolated(dying, said.append)
    assert run.result() == 8
    assert run.failure is not None and "died" in run.failure
    assert not forked.LIVE
    monkeypatch.setattr(forked, "can_fork", lambda: False)
    here = forked.Isolated(lambda _say: os.getpid(), said.append)
    assert here.result() == parent and here.failure is None


def test_a_first_sigint_waits_for_the_childs_answer_a_second_stops_it() -> None:
    """The child gets a Ctrl-C too and answers with what it has; only a second one stops
    it (and raises here)."""
    parent = os.getpid()

    def patient(say: Callable[[str], None]) -> str:
        got: list[int] = []
        signal.signal(signal.SIGINT, lambda signum, _f: got.append(signum))
        say(str(os.getpid()))
        while not got:
            time.sleep(0.01)
        return "partial"

    def interrupt(times: int) -> tuple[object, list[str]]:
        said: list[str] = []

        def on(text: str) -> None:
            said.append(text)
            for _ in range(times):
                os.kill(int(text), signal.SIGINT)  # the child, as the terminal would
                os.kill(parent, signal.SIGINT)
        try:
            return forked.Isolated(patient, on).result(), said
        except KeyboardInterrupt:
            return KeyboardInterrupt, said
    old = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert interrupt(1)[0] == "partial"
        stopped, said = interrupt(2)
        assert stopped is KeyboardInterrupt
        with pytest.raises(ProcessLookupError):  # killed and reaped
            os.kill(int(said[0]), 0)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, old)
    assert not forked.LIVE
