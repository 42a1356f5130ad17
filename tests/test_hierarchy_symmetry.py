"""Nested symmetry of hierarchical specs (NOTE(hierarchy-symmetry)): GPUs permuted with their
SMs, SMs permuted within each GPU. The reduced count must equal the number of orbits of the
unreduced reachable states, with the orbits computed here by a renaming written for the test
spec alone (not the package's), and the audit must catch a spec that is not symmetric."""

from __future__ import annotations

from itertools import permutations, product
from typing import Any

import pytest
from helpers import ROOT

from coherence.engines import check
from coherence.engines.driver import NOT_SYMMETRIC
from coherence.explore import reachable
from coherence.results import CheckOptions
from coherence.semantics import UNDEF, Semantics, State
from coherence.spec.load import load_spec, load_spec_text

TWO_LEVEL = str(ROOT / "tests/specs/hierarchy/two_level_wt.coh")

# (gpus, sms, values) -> (states with symmetry, without)
COUNTS = {(2, 1, 1): (502, 995), (1, 2, 2): (542, 1062), (2, 1, 2): (2156, 4288)}
SLOW_COUNTS = {(2, 2, 1): (4017, 28190)}


def _renamings(gpus: int, sms: int) -> list[tuple[list[int], list[tuple[int, ...]]]]:
    """Every (gpu permutation, one SM permutation per gpu): the wreath product."""
    return [(list(pi), list(rhos)) for pi in permutations(range(gpus))
            for rhos in product(list(permutations(range(sms))), repeat=gpus)]


def _rename(state: State, gpus: int, sms: int, pi: list[int],
            rhos: list[tuple[int, ...]]) -> State:
    """two_level_wt.coh's state renamed: nodes L1[g, s] = g*sms + s, then L2[g], then Mem.
    L2[g]'s `sharers: set<sm>` and `req: sm` are ids within gpu g; Put's `by` is a node."""
    l2 = gpus * sms
    sigma = [pi[k // sms] * sms + rhos[k // sms][k % sms] for k in range(l2)]
    sigma += [l2 + pi[g] for g in range(gpus)] + [l2 + gpus]
    (line,), nets, monitor = state
    glob, home, nodes = line
    moved: list[Any] = [None] * len(nodes)
    for k, c in enumerate(nodes):
        if l2 <= k < l2 + gpus:
            rho = rhos[k - l2]
            st, valid, data, sharers, req, drop = c
            sharers = sum(1 << rho[s] for s in range(sms) if (sharers >> s) & 1)
            req = req if req == UNDEF else rho[req]
            c = (st, valid, data, sharers, req, drop)
        moved[sigma[k]] = c
    put = 1  # message types in declaration order: GetS, Put, Data, Ack, Inv
    new_nets = tuple(tuple(sorted(
        (ln, sigma[src], sigma[dst], t, (f[0], sigma[f[1]]) if t == put else f)
        for ln, src, dst, t, f in net)) for net in nets)
    return (((glob, home, tuple(moved)),), new_nets, monitor)


def _orbits(gpus: int, sms: int, values: int) -> tuple[int, int]:
    m = load_spec(TWO_LEVEL, {"gpus": gpus, "sms": sms, "values": values})
    states = reachable(Semantics(m)).states
    every = set(states)
    reps = set()
    for s in states:
        images = [_rename(s, gpus, sms, pi, rhos) for pi, rhos in _renamings(gpus, sms)]
        assert all(x in every for x in images)  # the reachable set is closed under renaming
        reps.add(min(images))
    return len(reps), len(states)


def _count(gpus: int, sms: int, values: int, symmetry: bool) -> int:
    m = load_spec(TWO_LEVEL, {"gpus": gpus, "sms": sms, "values": values})
    result = check(m, CheckOptions(symmetry=symmetry), engine="reference")
    assert result.verdict == "holds" and result.notes[1:] == []
    assert result.symmetry == ("exact" if symmetry else "off")
    return result.states


@pytest.mark.parametrize("size", sorted(COUNTS))
def test_reduced_count_is_the_number_of_orbits(size: tuple[int, int, int]) -> None:
    assert _orbits(*size) == COUNTS[size]
    assert (_count(*size, True), _count(*size, False)) == COUNTS[size]


@pytest.mark.slow
@pytest.mark.parametrize("size", sorted(SLOW_COUNTS))
def test_reduced_count_is_the_number_of_orbits_two_by_two(size: tuple[int, int, int]) -> None:
    assert _orbits(*size) == SLOW_COUNTS[size]
    assert (_count(*size, True), _count(*size, False)) == SLOW_COUNTS[size]


ORDER_DEPENDENT = """
param gpus = 2;
param sms = 2;
index gpu: gpus;
index sm: sms within gpu;
network bus: bus;
message Ping;
var first: node = undefined;
machine L1[g: gpu, s: sm] {
  state I, D;
  init I;
  var v: value = undefined;
  rule Set(x: value) in I when isundefined(v) { v := x; }
  on Ping in I { if isundefined(first) { first := self; } goto D; }
  on Ping in D { }
}
machine Mem {
  state R, Done;
  init R;
  rule Go in R { broadcast Ping to L1; goto Done; }
}
invariant first_is_done: isundefined(first) || first is L1;
"""


def test_the_audit_catches_a_broadcast_whose_order_decides() -> None:
    """On the atomic bus the broadcast reaches the L1s in node order: which one becomes
    `first`, and so whether `first` holds 0 or 1, depends on the ids, so the model is not
    symmetric and is searched again without reduction."""
    m = load_spec_text(ORDER_DEPENDENT)
    reduced = check(m, CheckOptions(symmetry=True), engine="reference")
    assert NOT_SYMMETRIC in reduced.notes and reduced.symmetry == "off"
    assert reduced.states == check(m, CheckOptions(symmetry=False), engine="reference").states


@pytest.mark.parametrize("whole", [8, 1])
def test_sms_are_not_permuted_across_gpus(whole: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One SM busy in each of two GPUs is one orbit; two busy SMs in one GPU another: the
    nested symmetry keeps them apart (a flat permutation of all four SMs would merge them).
    With the whole group (8 elements) and through signature-sorted candidates."""
    import coherence.symmetry as symmetry
    monkeypatch.setattr(symmetry, "BRUTE_FORCE_ORDER", whole)
    text = ORDER_DEPENDENT.replace("network bus: bus;", "network net: unordered, capacity = 1;")
    text = text.replace("rule Go in R { broadcast Ping to L1; goto Done; }", "")
    text = text.replace("on Ping in I { if isundefined(first) { first := self; } goto D; }",
                        "rule Go in I { goto D; }")
    text = text.replace("rule Set(x: value) in I when isundefined(v) { v := x; }", "")
    m = load_spec_text(text)
    # no symmetry: 2^4 states; nested: 0, 1 (x1), 1+1 in one gpu or split (x2), 3, 4 busy
    assert check(m, CheckOptions(symmetry=False), engine="reference").states == 16
    assert check(m, CheckOptions(symmetry=True), engine="reference").states == 6


@pytest.mark.parametrize("size", [(2, 1, 2), (1, 2, 2)])
def test_signature_candidates_give_the_same_orbits(size: tuple[int, int, int],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Larger groups are searched through the elements that sort ids by signature
    (``HierarchySymmetry.candidates``): forced here, the counts are the orbits still, and every
    renaming of a state has the state's canonical form."""
    import coherence.symmetry as symmetry
    monkeypatch.setattr(symmetry, "BRUTE_FORCE_ORDER", 1)
    assert _count(*size, True) == COUNTS[size][0]
    gpus, sms, values = size
    m = load_spec(TWO_LEVEL, {"gpus": gpus, "sms": sms, "values": values})
    sem = Semantics(m)
    sym = symmetry.HierarchySymmetry(sem)
    assert sym.elements == []
    for s in reachable(sem).states[::7]:
        key = sym.canonical(s)[0]
        for pi, rhos in _renamings(gpus, sms):
            assert sym.canonical(_rename(s, gpus, sms, pi, rhos))[0] == key
