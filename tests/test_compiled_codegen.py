"""The generated C against the reference semantics, state by state (issue 13).

For each reachable state (plain BFS with the reference ``Semantics``, capped in the default
tier) the C ``co_expand`` must give the same multiset of packed successors (bit for bit
``layout.pack``), the same failure keys, rule/live/problem counts, and ``co_check_state`` /
``co_quiescent`` must agree with the invariants and quiescence. ``co_permute`` must be
``Symmetry.permute`` and ``co_canonicalize`` exact (same orbit counts as the reference).
Compiled at -O0 through the test shim (``cshim.py``): several times faster to build.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from itertools import permutations
from pathlib import Path

import attrs
import pytest
from helpers import compare_c_with_semantics, flat_specs

from coherence.engines.cgen.cmodel import CodegenError
from coherence.engines.cgen.codegen import generate
from coherence.engines.compiled.cshim import ENTRY_POINTS, PREAMBLE, Shim
from coherence.ir import Model
from coherence.layout import Layout
from coherence.semantics import Semantics
from coherence.spec.load import load_spec, load_spec_text
from coherence.symmetry import Symmetry

ROOT = Path(__file__).parent.parent
SPECS = flat_specs(ROOT / "specs")  # hierarchical specs: tests/test_hier_*.py
MUTANTS = sorted((ROOT / "specs" / "mutants").glob("*.coh"))
GOLDEN = sorted((ROOT / "tests" / "specs" / "golden").glob("*.coh"))
ALL = SPECS + MUTANTS + GOLDEN
THREE = [ROOT / "specs" / n for n in ("german.coh", "msi_directory.coh", "mesi_snooping.coh",
                                      "broadcast_invalidate_acked.coh")] + GOLDEN

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")

Key = tuple[str, ...]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_two_agents_match_reference(path: Path) -> None:
    # a mutant differs from its base spec in one transition: fewer states suffice
    cap = 150 if path in MUTANTS else 400
    assert compare_c_with_semantics(load_spec(path, {"agents": 2}), cap) > 0


@pytest.mark.parametrize("path", THREE, ids=lambda p: p.stem)
def test_three_agents_match_reference(path: Path) -> None:
    assert compare_c_with_semantics(load_spec(path, {"agents": 3}), 400) > 0


@pytest.mark.slow
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_three_agents_match_reference_deep(path: Path) -> None:
    assert compare_c_with_semantics(load_spec(path, {"agents": 3}), 20000) > 0


# ---------------------------------------------------------------- errors and corner cases

BUS_LOOP = """
param agents = 2;
param depth = 20;
network bus: bus;
message Ping(n: int[0..depth]) on bus;
message Pong(n: int[0..depth]) on bus;
home machine H {
  stable state R;
  init R;
  on Ping { send Pong(msg.n) to msg.src; }
}
cache machine C {
  stable state I, Done;
  init I;
  var hops: int[0..depth] = 0;
  rule Go in I { send Ping(0) to home; goto Done; }
  on Pong when msg.n < depth { hops := msg.n + 1; send Ping(msg.n + 1) to home; }
  on Pong when msg.n >= depth { hops := msg.n; }
}
"""

BUS_ERRORS = """
param agents = 2;
network bus: bus;
network net: unordered, capacity = 2;
message Req on bus;
message Req2 on bus;
message Note(x: int[0..1]) on net;
home machine H {
  stable state R, S;
  init R;
  var k: int[0..1] = 0;
  on Req in R when k == 0 { k := 1; }
  on Req in R when k <= 1 { goto S; }      // ambiguous when k == 0
  on Req in S stall;
  on Req2 in S { k := 0; }                  // none in R: bus-no-transition
  rule Back in S { goto R; }
  on Note in R { k := msg.x; }
}
cache machine C {
  stable state I, A;
  init I;
  var v: int[0..1] = undefined;
  rule Send in I { send Req to home; goto A; }
  rule Other in A { send Req2 to home; }
  rule Bad in A when v == 0 { goto I; }      // undefined read in a guard
  rule Note in I { send Note(1) to home; }
  rule Over in A { v := 1; send Note(v + 1) to home; }  // a field out of range
}
invariant k_small: H.k <= 0 || forall a: agent :: C[a].state == A;
invariant reads_undefined: forall a: agent :: C[a].v == 0 || C[a].state == I;
"""

ARRAYS = """
param agents = 2;
network net: fifo, capacity = 2;
message Put(i: agent, x: int[0..2]) on net;
home machine D {
  stable state R;
  init R;
  var seen: array<agent, int[0..2]> = 0;
  var copy: array<agent, int[0..2]> = 1;
  var grid: array<int[1..2], array<agent, bool>> = false;
  on Put {
    seen[msg.i] := msg.x;
    if msg.x >= 1 { grid[msg.x][msg.src] := true; }
    if msg.x == 2 { undefine copy; } else { copy := seen; }
  }
  rule Reset when !isundefined(copy) && copy == seen { undefine seen; }
}
cache machine C {
  stable state I;
  init I;
  var n: int[0..2] = 0;
  rule Up in I when n < 2 { n := n + 1; send Put(self, n) to home; }
  rule Zero in I { send Put(self, 0) to home; }
}
invariant grid_ok: forall a: agent :: !(D.grid[1][a] && D.grid[2][a]) || C[a].n >= 1;
"""


@pytest.mark.parametrize("text,agents", [(BUS_LOOP, 2), (BUS_ERRORS, 2), (ARRAYS, 2),
                                         (BUS_ERRORS, 3), (ARRAYS, 3)],
                         ids=["bus_nesting", "bus_errors", "arrays", "bus_errors3", "arrays3"])
def test_errors_and_corner_cases_match_reference(text: str, agents: int) -> None:
    model = load_spec_text(text, "corner.coh", {"agents": agents})
    assert compare_c_with_semantics(model, 3000) > 0


def test_bus_nesting_is_reported_at_depth_nine() -> None:
    model = load_spec_text(BUS_LOOP, "loop.coh", {"agents": 2})
    gen = generate(model, Layout(model))
    assert any(k[:2] == ("error", "bus-nesting") for k in gen.keys)
    shim = Shim(gen, opt="-O0")
    ex = shim.expand(shim.initial()[0])
    assert {gen.keys[k][1] for k in ex.failures} == {"bus-nesting"}
    # Ping (type 0) is delivered at depths 1, 3, .., 9; nothing is generated deeper
    assert "co_bus_0_d9(" in gen.source and "_d10" not in gen.source
    shallow = load_spec_text(BUS_LOOP, "loop.coh", {"agents": 2, "depth": 3})
    shim = Shim(generate(shallow, Layout(shallow)), opt="-O0")
    assert shim.expand(shim.initial()[0]).failures == []


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
@pytest.mark.parametrize("name", ["german.coh", "msi_snooping.coh", "mesi_directory.coh"])
def test_generated_code_is_also_cplusplus(name: str, tmp_path: Path) -> None:
    """NVRTC compiles CUDA C++: the same source must be valid C++ (no implicit void*
    conversions, no C-only initialisers), and free of host-only calls."""
    model = load_spec(ROOT / "specs" / name, {"agents": 3})
    gen = generate(model, Layout(model))
    for host_only in ("malloc", "printf", "stdio", "free(", "pthread"):
        assert host_only not in gen.source
    src = tmp_path / "model.cc"
    src.write_text(PREAMBLE + gen.source + ENTRY_POINTS)
    proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall",
                           "-Wno-unused-function", "-Wno-unused-variable", str(src)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[:2000]
    assert proc.stderr == ""


def test_whole_array_let_is_refused() -> None:
    text = ARRAYS.replace("seen[msg.i] := msg.x;", "let s = seen; seen[msg.i] := msg.x;")
    model = load_spec_text(text, "let.coh", {"agents": 2})
    with pytest.raises(CodegenError, match="let of a whole array"):
        generate(model, Layout(model))


# ---------------------------------------------------------------- symmetry


def _reachable(shim: Shim, cap: int) -> list[int]:
    init = shim.initial()
    seen, frontier = set(init), list(init)
    out: list[int] = []
    while frontier and len(out) < cap:
        nxt = []
        for c in frontier:
            out.append(c)
            for s in shim.expand(c).successors:
                if s not in seen:
                    seen.add(s)
                    nxt.append(s)
        frontier = nxt
    return out


@pytest.mark.parametrize("name,agents", [("german.coh", 3), ("msi_directory.coh", 3),
                                         ("mesi_snooping.coh", 4),
                                         ("broadcast_invalidate_acked.coh", 3),
                                         ("german.coh", 5)])
def test_permute_is_the_reference_and_canonicalize_is_exact(name: str, agents: int) -> None:
    model = load_spec(ROOT / "specs" / name, {"agents": agents})
    layout = Layout(model)
    shim = Shim(generate(model, layout), opt="-O0")
    sym = Symmetry(Semantics(model))
    rnd = random.Random(13)
    perms = list(permutations(range(agents)))
    for code in _reachable(shim, 1500):
        p = rnd.choice(perms)
        moved = shim.permute(code, p)
        assert moved == layout.pack(sym.permute(layout.unpack(code), p))
        canon = shim.canonicalize(code)
        assert shim.canonicalize(moved) == canon
        # the representative is in the orbit
        assert any(shim.permute(code, q) == canon for q in perms)


def _orbits_c(shim: Shim) -> int:
    seen = {shim.canonicalize(c) for c in shim.initial()}
    frontier = list(seen)
    while frontier:
        nxt = []
        for c in frontier:
            for s in shim.expand(c).successors:
                k = shim.canonicalize(s)
                if k not in seen:
                    seen.add(k)
                    nxt.append(k)
        frontier = nxt
    return len(seen)


def _orbits_reference(model: Model) -> int:
    sem = Semantics(model)
    sym = Symmetry(sem)
    seen: set[bytes] = set()
    frontier = []
    for s in sem.initial_states():
        k, c = sym.canonical(s)
        if k not in seen:
            seen.add(k)
            frontier.append(c)
    while frontier:
        nxt = []
        for s in frontier:
            for o in sem.enabled(s)[0]:
                if o.state is not None:
                    k, c = sym.canonical(o.state)
                    if k not in seen:
                        seen.add(k)
                        nxt.append(c)
        frontier = nxt
    return len(seen)


@pytest.mark.parametrize("path,agents", [(GOLDEN[0], 3), (ROOT / "specs" / "msi_snooping.coh", 3)],
                         ids=["tiny_msi3", "msi_snooping3"])
def test_orbit_counts_equal_the_reference(path: Path, agents: int) -> None:
    model = load_spec(path, {"agents": agents})
    shim = Shim(generate(model, Layout(model)), opt="-O0")
    assert _orbits_c(shim) == _orbits_reference(model)


@pytest.mark.slow
@pytest.mark.parametrize("name,agents,monitor", [("german.coh", 2, True), ("german.coh", 3, False),
                                                 ("msi_directory.coh", 3, False),
                                                 ("mesi_snooping.coh", 3, True),
                                                 ("mesi_snooping.coh", 4, True),
                                                 ("msi_snooping.coh", 4, True),
                                                 ("gpu_write_through.coh", 2, True)])
def test_orbit_counts_equal_the_reference_slow(name: str, agents: int, monitor: bool) -> None:
    model = load_spec(ROOT / "specs" / name, {"agents": agents})
    if not monitor:  # the coherence monitor multiplies these state spaces past Python's reach
        model = attrs.evolve(model, properties=())
    shim = Shim(generate(model, Layout(model)))
    assert _orbits_c(shim) == _orbits_reference(model)
