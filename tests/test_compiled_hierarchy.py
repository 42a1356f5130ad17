"""The compiled engine on hierarchical specs (issue 20; NOTE(compiled-hierarchy)).

The generated C (``cgen/chier.py``) against the reference semantics state by state (same
packed successors, failure keys, rule/live/problem counts, invariants, quiescence), whole
searches against the reference engine (same states, rules fired, depth, verdicts and
counterexample lengths, with symmetry asked for and not), and the C nested symmetry
(``cgen/chsym.py``): ``co_permute`` is ``HierarchySymmetry.permute`` and ``co_canonicalize``
picks one state per orbit (the orbit counts are pinned by tests/test_hierarchy_symmetry.py's
independent renaming). Compiled at -O0 through the test shim.
"""

from __future__ import annotations

import random
import shutil
from itertools import permutations, product
from pathlib import Path

import pytest
from helpers import HIER_COUNTS, compare_c_with_semantics

from coherence import ir, symmetry
from coherence.engines import check
from coherence.engines.cgen.chsym import element_perm, factors
from coherence.engines.cgen.codegen import generate
from coherence.engines.compiled.cshim import Shim
from coherence.explore import reachable
from coherence.layout import Layout
from coherence.results import CheckOptions
from coherence.semantics import Semantics
from coherence.spec.load import load_spec, load_spec_text
from coherence.spec.select import drop_properties

ROOT = Path(__file__).resolve().parent.parent
TWO_LEVEL = ROOT / "tests" / "specs" / "hierarchy" / "two_level_wt.coh"
CONSTRUCTS = ROOT / "tests" / "specs" / "hierarchy" / "compiled_constructs.coh"

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")

# run-time errors of hierarchical constructs, each reachable: a node index of a node whose
# machine has none, a machine index that is undefined, a perform by a node that is not a
# processor, a send to an undefined node
ERRORS = """
param gpus = 2;
param sms = 1;
index gpu: gpus;
index sm: sms within gpu;
network net: unordered, capacity = 2;
message Hi on net;
event Load;
var to: node = undefined;
machine L1[g: gpu, s: sm] {
  state I;
  init I;
  var d: value = 0;
  on Load in I { perform load(d); }
  on Hi in I { }
}
machine L2[g: gpu] {
  state R;
  init R;
  var pick: sm = undefined;
  var d: value = 0;
  on Hi in R { pick := msg.src.sm; }
  rule Bad1 in R { send Hi to L1[g, pick]; }
  rule Bad2 in R { perform store(d) by self; }
  rule Bad3 in R { send Hi to to; }
}
machine Mem {
  state R;
  init R;
  rule Go(x: gpu) in R { send Hi to L2[x]; }
}
property coherent: coherence;
"""


SIZES = [(1, 2), (2, 1), (2, 2)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("path", [TWO_LEVEL, CONSTRUCTS], ids=lambda p: p.stem)
def test_generated_c_is_the_semantics_state_by_state(path: Path, size: tuple[int, int]) -> None:
    model = load_spec(path, {"gpus": size[0], "sms": size[1]})
    assert compare_c_with_semantics(model, 250) == 250


def test_run_time_errors_are_the_semantics() -> None:
    model = load_spec_text(ERRORS, "errors.coh")
    assert compare_c_with_semantics(model, 200) > 3
    found = check(model, CheckOptions(threads=1), engine="compiled").failures
    assert sorted(f.key[1] for f in found if f.key[0] == "error") == [
        "no-index", "not-agent", "undefined", "undefined-dst"]


def _summary(model: ir.Model, engine: str, sym: bool) -> tuple[object, ...]:
    r = check(model, CheckOptions(symmetry=sym, threads=1), engine=engine)
    return (r.verdict, r.symmetry, r.states, r.rules_fired, r.depth,
            sorted((f.key, f.length) for f in r.failures))


# (spec, parameters, symmetry): sizes whose reference search takes a second or two
SEARCHES = [(TWO_LEVEL, {"gpus": 1, "sms": 2}, False), (TWO_LEVEL, {"gpus": 2, "sms": 1}, True),
            (CONSTRUCTS, {"gpus": 2, "sms": 1}, False), (CONSTRUCTS, {"gpus": 2, "sms": 1}, True),
            (CONSTRUCTS, {"gpus": 1, "sms": 2, "values": 1}, True)]


@pytest.mark.parametrize(("path", "params", "sym"), SEARCHES,
                         ids=lambda x: x.stem if isinstance(x, Path) else
                         "x".join(str(v) for v in x.values()) if isinstance(x, dict) else
                         ("symmetry" if x else "no-symmetry"))
def test_whole_search_is_the_reference_engines(path: Path, params: dict[str, int],
                                                sym: bool) -> None:
    model = load_spec(path, params)
    compiled = _summary(model, "compiled", sym)
    assert compiled == _summary(model, "reference", sym)
    assert compiled[2] > 100


def test_auto_takes_the_compiled_engine() -> None:
    r = check(load_spec(TWO_LEVEL, {"gpus": 1, "sms": 2}), CheckOptions(threads=1),
              engine="auto")
    assert r.engine == "compiled" and r.verdict == "holds"


# ---------------------------------------------------------------- symmetry


def _elements(model: ir.Model) -> list[dict[tuple[str, tuple[int, ...]], tuple[int, ...]]]:
    """Every element of the nested symmetry group, as one permutation per factor."""
    fs = factors(model)
    sizes = {t.name: t.n for t in model.indexes}
    return [dict(zip(fs, combo, strict=True)) for combo in product(
        *(list(permutations(range(sizes[f[0]]))) for f in fs))]


# (gpus, sms, values) -> orbits of the reachable states (tests/test_hierarchy_symmetry.py)
ORBITS = {(1, 2, 2): 542, (2, 1, 2): 2156, (2, 1, 1): 502}


@pytest.mark.parametrize("size", sorted(ORBITS), ids=lambda s: "x".join(map(str, s)))
def test_canonical_forms_are_one_per_orbit(size: tuple[int, int, int]) -> None:
    model = load_spec(TWO_LEVEL, dict(zip(("gpus", "sms", "values"), size, strict=True)))
    layout = Layout(model)
    shim = Shim(generate(model, layout), opt="-O0")
    states = [layout.pack(s) for s in reachable(Semantics(model)).states]
    canon = {s: shim.canonicalize(s) for s in states}
    assert len(set(canon.values())) == ORBITS[size]
    els = [element_perm(model, e) for e in _elements(model)]
    rng = random.Random(20)
    for s in rng.sample(states, 150):
        images = {shim.permute(s, tuple(p)) for p in els}
        assert canon[s] in images  # a member of the orbit
        assert {canon[x] for x in images} == {canon[s]}  # the same for the whole orbit


@pytest.mark.skipif(not hasattr(symmetry, "HierarchySymmetry"),
                    reason="coherence.symmetry has no HierarchySymmetry yet (helper A)")
@pytest.mark.parametrize("path", [TWO_LEVEL, CONSTRUCTS], ids=lambda p: p.stem)
def test_permute_is_the_python_renaming(path: Path) -> None:
    model = load_spec(path, {"gpus": 2, "sms": 2})
    layout = Layout(model)
    shim = Shim(generate(model, layout), opt="-O0")
    sem = Semantics(model)
    sym = symmetry.HierarchySymmetry(sem)  # type: ignore[attr-defined]
    rng = random.Random(7)
    states = list(sem.initial_states())
    seen = set(states)
    for state in states:  # the first 1,500 states breadth-first
        for o in sem.enabled(state)[0]:
            if o.state is not None and len(states) < 1500 and o.state not in seen:
                seen.add(o.state)
                states.append(o.state)
    for state in rng.sample(states, 60):
        for el in rng.sample(sym.elements, 4):
            want = layout.pack(sym.permute(state, el))
            assert shim.permute(layout.pack(state), tuple(element_perm(model, el.perms))) \
                == want


# ---------------------------------------------------------------- the bundled specs


def _bundled(spec: str, gpus: int, sms: int, monitor: bool) -> ir.Model:
    model = load_spec(ROOT / "specs" / f"{spec}.coh", {"gpus": gpus, "sms": sms})
    return model if monitor else drop_properties(model, ["coherent"])


@pytest.mark.parametrize("spec", ["gpu_two_level", "multigpu_broadcast",
                                  "multigpu_broadcast_acked", "hmg"])
def test_bundled_specs_search_as_the_reference_engine(spec: str) -> None:
    """One GPU of two SMs, with symmetry and without: the counts pinned in HIER_COUNTS."""
    model = _bundled(spec, 1, 2, False)
    pinned = HIER_COUNTS[(spec, 1, 2, False)]
    for i, sym in enumerate((True, False)):
        compiled = _summary(model, "compiled", sym)
        assert compiled == _summary(model, "reference", sym)
        assert compiled[2] == pinned[i]


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(HIER_COUNTS), ids=lambda k: f"{k[0]}-{k[1]}x{k[2]}-"
                         f"{'mon' if k[3] else 'nomon'}")
def test_bundled_specs_pinned_counts_and_the_reference_verdicts(
        key: tuple[str, int, int, bool]) -> None:
    """Every pinned row on the compiled engine; against the reference engine where its
    search takes at most a minute or so."""
    model = _bundled(*key)
    for n, sym in zip(HIER_COUNTS[key], (True, False), strict=True):
        if n is None:
            continue
        compiled = _summary(model, "compiled", sym)
        assert compiled[2] == n
        if n <= 50_000:
            assert compiled == _summary(model, "reference", sym)
