"""The compiled engine's C runtime on a hand-written model (no code generator involved).

``tests/data/compiled/mock_counters.c`` follows the generated-code contract: agents with a
counter each, a failing action, an invariant and a deadlock, symmetric in the agents. A
plain Python BFS of the same system, written like the reference engine's loop, gives the
exact counts, depths and stop behaviour the runtime must reproduce at 1 and 2 threads.
"""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Iterator
from math import comb
from pathlib import Path

import pytest

from coherence.engines.compiled import build as build_mod
from coherence.engines.compiled.build import CompilerNotFound, build, find_compiler
from coherence.engines.compiled.engine import (
    LAST_STATS,
    CompiledEngine,
    Library,
    run_library,
)
from coherence.errors import SpecError
from coherence.results import CheckOptions, Progress

MOCK = Path(__file__).parent / "data" / "compiled" / "mock_counters.c"
KEYS = (("invariant", "sum"), ("error", "assert", "mock_counters.c:1:1"))
DEADLOCK = ("deadlock",)

pytestmark = pytest.mark.skipif(
    CompiledEngine().available() is not None, reason="no C compiler")


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Libraries built here go to a fresh cache, not the user's."""
    saved = os.environ.get("XDG_CACHE_HOME")
    cache = tmp_path_factory.mktemp("cache")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    yield cache
    if saved is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = saved


def mock_source(agents: int, k: int, target: int) -> str:
    return (f"#define MOCK_AGENTS {agents}\n#define MOCK_K {k}\n#define MOCK_TARGET {target}\n"
            + MOCK.read_text())


def mock_lib(agents: int, k: int, target: int) -> Library:
    path, _ = build(mock_source(agents, k, target))
    return Library.load(path)


def decode(data: bytes) -> int:
    return int.from_bytes(data, "little")


def counters(code: int, agents: int) -> tuple[int, ...]:
    return tuple((code >> (4 * i)) & 15 for i in range(agents))


class MockBFS:
    """The mock system explored by the reference engine's loop, in Python."""

    def __init__(self, agents: int, k: int, target: int, symmetry: bool) -> None:
        self.agents, self.k, self.target, self.symmetry = agents, k, target, symmetry

    def canon(self, s: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(s, reverse=True)) if self.symmetry else s

    def successors(self, s: tuple[int, ...]) -> tuple[list[tuple[int, ...]], int]:
        succ, fails = [], 0
        nonzero = sum(c != 0 for c in s)
        for i, c in enumerate(s):
            if c < self.k - 1:
                succ.append(self.canon((*s[:i], c + 1, *s[i + 1:])))
            elif nonzero == 1:
                fails += 1
        return succ, fails

    def run(self, max_depth: int | None = None, stop_at_first: bool = False,
            ) -> tuple[int, int, int, dict[object, int], str | None]:
        init = self.canon((0,) * self.agents)
        visited = {init}
        failures: dict[object, int] = {}

        def check(s: tuple[int, ...], d: int) -> None:
            if sum(s) == self.target:
                failures.setdefault(KEYS[0], d)

        check(init, 0)
        frontier, depth, rules, stopped = [init], 0, 0, None
        while frontier:
            if stop_at_first and failures:
                stopped = "stopped at the first failure"
                break
            if max_depth is not None and depth >= max_depth:
                stopped = f"--max-depth {max_depth} reached"
                break
            nxt = []
            for s in frontier:
                succ, fails = self.successors(s)
                rules += len(succ) + fails
                if fails:
                    failures.setdefault(KEYS[1], depth)
                for t in succ:
                    if t not in visited:
                        visited.add(t)
                        nxt.append(t)
                        check(t, depth + 1)
                if not succ and not fails and any(s):
                    failures.setdefault(DEADLOCK, depth)
            frontier = nxt
            if frontier:
                depth += 1
        return len(visited), rules, depth, failures, stopped


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("symmetry", [False, True])
def test_exact_counts_and_shortest_failures(threads: int, symmetry: bool) -> None:
    agents, k, target = 3, 4, 5
    lib = mock_lib(agents, k, target)
    res = run_library(lib, KEYS, CheckOptions(symmetry=symmetry, threads=threads), decode)
    bfs = MockBFS(agents, k, target, symmetry)
    states, rules, depth, failures, stopped = bfs.run()
    assert states == (comb(agents + k - 1, agents) if symmetry else k ** agents)
    assert (res.states, res.rules_fired, res.depth, res.stopped) == (states, rules, depth,
                                                                     stopped)
    assert {f.key: len(f.path) - 1 for f in res.failures} == failures
    assert [f.key for f in res.failures] == [KEYS[1], KEYS[0], DEADLOCK]  # by depth
    for f in res.failures:  # each path is a chain of (canonical) successors from the start
        path = [counters(code, agents) for code in f.path]
        assert path[0] == (0,) * agents
        for a, b in itertools.pairwise(path):
            assert b in bfs.successors(a)[0]
    assert res.threads == threads


@pytest.mark.parametrize("threads", [1, 2, 8])  # 8: more threads than cores, preempted
def test_table_growth_and_two_word_states(threads: int) -> None:
    # 5 counters of 0..9: 10^5 states from a 256-slot table (ten doublings to 2^18 slots, at
    # a load of 3/4 each, with two threads inserting concurrently); then 18 binary counters
    # packed in 72 bits (two words).
    lib = mock_lib(5, 10, 99)
    res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=threads), decode,
                      table_log2=8)
    assert (res.states, res.depth) == (10 ** 5, 45)
    assert res.rules_fired == 5 * 9 * 10 ** 4 + 5  # increments + the five failing resets
    assert (LAST_STATS["resizes"], LAST_STATS["table_slots"]) == (10, 2 ** 18)
    assert res.bytes_per_state == pytest.approx(3 + 4 + 4 * 2 ** 18 / 10 ** 5)
    lib = mock_lib(18, 2, 99)
    assert lib.words == 2
    res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=threads), decode)
    assert (res.states, res.depth) == (2 ** 18, 18)
    sym = run_library(lib, KEYS, CheckOptions(symmetry=True, threads=threads), decode)
    assert sym.states == 19


@pytest.mark.parametrize("threads", [1, 2])
def test_max_depth_and_stop_at_first_match_the_reference_loop(threads: int) -> None:
    lib = mock_lib(3, 4, 5)
    bfs = MockBFS(3, 4, 5, symmetry=False)
    for max_depth in (0, 1, 4):
        res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=threads,
                                                  max_depth=max_depth), decode)
        states, rules, depth, failures, stopped = bfs.run(max_depth=max_depth)
        assert (res.states, res.rules_fired, res.depth, res.stopped) == (states, rules,
                                                                         depth, stopped)
        assert {f.key: len(f.path) - 1 for f in res.failures} == failures
    res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=threads,
                                              stop_at_first=True), decode)
    states, rules, depth, failures, stopped = bfs.run(stop_at_first=True)
    assert stopped == "stopped at the first failure" and depth == 4  # level 4 not expanded
    assert (res.states, res.rules_fired, res.depth, res.stopped) == (states, rules, depth,
                                                                     stopped)
    assert {f.key: len(f.path) - 1 for f in res.failures} == failures


@pytest.mark.parametrize("threads", [1, 2])
def test_max_states_gives_a_partial_result(threads: int) -> None:
    lib = mock_lib(5, 10, 99)
    res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=threads,
                                              max_states=5000), decode)
    assert res.stopped == "--max-states 5000 reached"
    # each thread finishes the state it is expanding: at most 5 more successors each
    assert 5000 <= res.states <= 5000 + 5 * threads
    assert res.depth < 45


def test_memory_limit_stops_cleanly() -> None:
    lib = mock_lib(6, 16, 99)  # 16.7 M states of 3 bytes, 7 bytes each with the parent
    limit = 8 << 20
    res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=2,
                                              memory_limit=limit), decode)
    assert res.stopped == "--memory-limit 8 MiB reached"
    assert 100_000 < res.states < limit // 7
    assert LAST_STATS["storage_bytes"] <= limit
    failures = {f.key: len(f.path) - 1 for f in res.failures}
    assert failures == {KEYS[1]: 15}  # found before the stop, still shortest


def test_stop_request_and_sigint_end_the_search_with_a_partial_result() -> None:
    lib = mock_lib(6, 16, 99)  # 16.7 M states: far more than a run lasts here

    def stop(_: Progress) -> None:
        lib.lib.co_request_stop()

    res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=2, progress=stop,
                                              progress_every=0.0), decode)
    assert res.stopped == "interrupted"
    assert 0 < res.states < 16 ** 6

    calls: list[Progress] = []

    def interrupt(p: Progress) -> None:
        calls.append(p)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # the engine's handler turns it into a stop

    def callers_handler(_signum: int, _frame: object) -> None:
        raise AssertionError("the engine's own handler should have taken the SIGINT")

    # The caller's own handler, not Python's default: a run launched in the background starts
    # with SIGINT ignored, and what must come back is whatever was there before.
    before = signal.signal(signal.SIGINT, callers_handler)
    try:
        res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=2,
                                                  progress=interrupt, progress_every=0.0),
                          decode)
        assert signal.getsignal(signal.SIGINT) is callers_handler  # restored
    finally:
        signal.signal(signal.SIGINT, before)
    assert res.stopped == "interrupted (SIGINT)"
    assert 0 < res.states < 16 ** 6


def test_time_limit_stops_cleanly() -> None:
    lib = mock_lib(6, 16, 99)
    res = run_library(lib, KEYS, CheckOptions(symmetry=False, threads=2, time_limit=0.2),
                      decode)
    assert res.stopped == "--time-limit 0.2 s reached"
    assert 0 < res.states < 16 ** 6 and res.seconds < 5


def test_second_build_is_a_cache_hit(private_cache: Path) -> None:
    source = mock_source(2, 3, 1)
    first, cached_first = build(source)
    second, cached_second = build(source)
    assert first == second and first.parent == private_cache / "coherence" / "compiled"
    assert (cached_first, cached_second) == (False, True)
    other, cached_other = build(source, extra_flags=("-DCO_UNUSED_FLAG=1",))
    assert other != first and not cached_other
    assert sorted(p.name for p in first.parent.iterdir() if p.name.startswith("build-")) == []


def test_clear_error_without_a_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("CC", "/nonexistent/bin/cc")
    with pytest.raises(CompilerNotFound, match=r"\$CC is '/nonexistent/bin/cc'"):
        find_compiler()
    monkeypatch.delenv("CC")
    with pytest.raises(CompilerNotFound, match="no C compiler found") as info:
        build(mock_source(2, 3, 1))
    assert isinstance(info.value, SpecError)  # the CLI maps it to exit 2
    assert "\n" not in info.value.render()
    reason = CompiledEngine().available()
    assert reason is not None and reason.startswith("no C compiler found")
    assert build_mod.CANDIDATES == ("cc", "gcc", "clang")
