"""The shared breadth-first loop (``coherence.explore``): order, parents, limits, and the
reachable states of a spec agreeing with the reference engine's count."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from coherence.engines import check
from coherence.explore import Search, StateLimit, bfs, reachable
from coherence.results import CheckOptions
from coherence.semantics import Semantics
from coherence.spec.load import load_spec

ROOT = Path(__file__).resolve().parent.parent


def _mod7(i: int, n: int, add: Callable[[int], int]) -> None:
    for m in ((2 * n + 1) % 7, (2 * n + 2) % 7):
        add(m)


def test_bfs_order_parents_depths_and_paths() -> None:
    search = bfs([0], _mod7)
    assert search.nodes == [0, 1, 2, 3, 4, 5, 6]
    assert search.parent == [-1, 0, 0, 1, 1, 2, 2]
    assert search.depth == [0, 1, 1, 2, 2, 2, 2]
    assert search.path_to(6) == [0, 2, 6]


def test_bfs_key_merges_nodes_and_the_limit_raises() -> None:
    search = bfs([0], _mod7, key=lambda n: n % 3)  # 0, 1, 2: three classes
    assert search.nodes == [0, 1, 2]
    with pytest.raises(StateLimit) as err:
        bfs([0], _mod7, max_nodes=4)
    assert err.value.limit == 4


def test_bfs_fills_a_given_search_as_it_goes() -> None:
    seen_depths: list[int] = []
    search: Search[int] = Search()

    def expand(i: int, n: int, add: Callable[[int], int]) -> None:
        seen_depths.append(search.depth[i])
        _mod7(i, n, add)

    assert bfs([0], expand, search=search) is search
    assert seen_depths == [0, 1, 1, 2, 2, 2, 2]


def test_reachable_matches_the_reference_engine() -> None:
    model = load_spec(ROOT / "specs" / "msi_snooping.coh", {"agents": 2})
    graph = reachable(Semantics(model))
    result = check(model, CheckOptions(symmetry=False))
    assert len(graph.states) == result.states == 312
    assert all(0 <= a < len(graph.states) and 0 <= b < len(graph.states)
               for a, _act, b in graph.edges)
