"""What several test modules share (imported as ``helpers``: ``pythonpath = ["tests"]`` in
pyproject.toml), so that no test module imports another one.

Paths here are absolute (from this file), never relative to the working directory.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coherence.engines import check
from coherence.errors import SpecError
from coherence.export.murphi import to_murphi
from coherence.export.promela import to_promela
from coherence.export.rumur import rumur_available, run_rumur
from coherence.export.spin import run_spin
from coherence.ir import Model
from coherence.results import CheckOptions
from coherence.semantics import CoherenceViolation, Outcome, Semantics, State
from coherence.smt.bmc import bmc
from coherence.spec.load import load_spec_text

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"


def flat_specs(folder: Path) -> list[Path]:
    """The specs of ``folder`` written with the two built-in machine kinds. A hierarchical spec
    (issue 20: `index` types, `machine L1[g: gpu, s: sm]`) is tested by tests/test_hier_*.py
    until the back end that a parametrized test exercises supports it (stopgap, 2026-12-03)."""
    return sorted(p for p in folder.glob("*.coh")
                  if not re.search(r"^\s*index\s+\w+\s*:", p.read_text(), re.MULTILINE))


# Z3's deterministic resource limit in tests (``rlimit``: the longest check of a proof for
# every N; its quick first try gets 1/12 of it): the same verdict however loaded the machine is
# (a wall-clock budget once gave "unknown (timeout)"). The largest check of the bundled proofs
# uses about 9 million units (8 s on a loaded machine); running out is an unknown, not a pass.
PROOF_RLIMIT = 150_000_000

# ---------------------------------------------------------------- the hierarchical specs

# (spec stem, gpus, sms, coherence monitor?) -> reachable states (with exact nested symmetry,
# without; None: not measured), the same on the reference and compiled engines
# (tests/test_hier_specs.py runs them; tests/test_library.py requires every hierarchical spec
# in specs/ to have rows here)
HIER_COUNTS: dict[tuple[str, int, int, bool], tuple[int | None, int | None]] = {
    ("gpu_two_level", 1, 2, False): (1250, 2446),
    ("gpu_two_level", 2, 1, False): (3320, 6560),
    ("gpu_two_level", 1, 2, True): (28478, 56910),
    ("gpu_two_level", 2, 1, True): (75548, 151046),
    ("gpu_two_level", 2, 2, False): (766250, 5848386),
    ("multigpu_broadcast", 1, 2, False): (334, 630),
    ("multigpu_broadcast", 2, 1, False): (11400, 22708),
    ("multigpu_broadcast", 1, 2, True): (8569, 17116),
    ("multigpu_broadcast", 2, 1, True): (185358, 370664),
    ("multigpu_broadcast", 2, 2, False): (963818, 6967388),
    ("multigpu_broadcast_acked", 1, 2, False): (628, 1222),
    ("multigpu_broadcast_acked", 2, 1, False): (1716, 3378),
    ("multigpu_broadcast_acked", 1, 2, True): (14205, 28388),
    ("multigpu_broadcast_acked", 2, 1, True): (34738, 69436),
    ("multigpu_broadcast_acked", 2, 2, False): (211778, 1610338),
    ("hmg", 1, 2, False): (1130, 2136),
    ("hmg", 2, 1, False): (17072, 33928),
    ("hmg", 1, 2, True): (23638, 47235),
    ("hmg", 2, 1, True): (244462, 488858),
    ("hmg", 2, 2, False): (1725314, 12612876),
}
# rows over ~5,000 states (several seconds each in Python, more on a loaded machine): slow tier
HIER_SLOW = {(k, sym) for k, counts in HIER_COUNTS.items()
             for sym, n in zip((True, False), counts, strict=True) if n and n > 5_000}

# ---------------------------------------------------------------- the seed's pinned counts

LITERAL = "specs/broadcast_invalidate.coh"  # relative to ROOT
ACKED = "specs/broadcast_invalidate_acked.coh"

# (spec, agents, skip coherent?) -> (states with exact symmetry, states without)
SEED_COUNTS = {
    (LITERAL, 2, True): (322, 624),
    (LITERAL, 3, True): (1032, 5340),
    (LITERAL, 4, True): (1596, 25632),
    (LITERAL, 2, False): (6320, 12624),
    (LITERAL, 3, False): (206924, 1229208),
    (ACKED, 2, True): (138, 262),
    (ACKED, 3, True): (1152, 6218),
    (ACKED, 4, True): (9064, 186366),
    (ACKED, 2, False): (2804, 5596),
    (ACKED, 3, False): (201070, 1195230),
}

# ---------------------------------------------------------------- a small mutex and its mutants

MUTEX = """
param agents = 3;
message Grant on net;
network net: fifo, capacity = 1;
event Acquire;
event Release;
home machine Lock {
  stable state Free, Taken;
  init Free;
  var owner: agent = undefined;
  rule Take(a: agent) in Free when C[a].state == W { owner := a; send Grant to a; goto Taken; }
  rule Reclaim in Taken when C[owner].state != E && !inflight(Grant, owner) {
    undefine owner; goto Free;
  }
}
cache machine C {
  stable state I, E;
  transient state W;
  init I;
  on Acquire in I { goto W; }
  on Grant in W { goto E; }
  on Release in E { goto I; }
}
invariant mutex: forall a: agent, b: agent :: (C[a].state == E && C[b].state == E) -> a == b;
"""
AUX = """
invariant aux owner: forall a: agent :: (C[a].state == E || inflight(Grant, a)) ->
  (Lock.state == Taken && Lock.owner == a);
invariant aux grant_waits: forall a: agent :: inflight(Grant, a) -> C[a].state == W;
"""

STATEMENT = re.compile(r"(goto \w+;|undefine \w+;|send \w+ to \w+;|owner := a;)")
GOTO = re.compile(r"goto (\w+);")


def mutants(text: str) -> list[str]:
    """Every spec obtained by deleting one statement or retargeting one goto."""
    out = []
    for m in STATEMENT.finditer(text):
        out.append(text[:m.start()] + text[m.end():])
    for m in GOTO.finditer(text):
        for target in ("I", "E", "W", "Free", "Taken"):
            if target != m.group(1):
                out.append(f"{text[:m.start()]}goto {target};{text[m.end():]}")
    return out


def well_formed(texts: list[str]) -> list[str]:
    """The specs among ``texts`` that load (a mutation can leave a state nothing enters);
    tests draw from these rather than returning early on the others."""
    out = []
    for text in texts:
        try:
            load_spec_text(text, "mutant.coh")
        except SpecError:
            continue
        out.append(text)
    return out


# ---------------------------------------------------------------- BMC against the checker


def checker_groups(model: Model, depth: int) -> dict[str, int]:
    """Per failure group, the shortest counterexample of length <= depth."""
    result = check(model, CheckOptions(max_depth=depth + 1))
    out: dict[str, int] = {}
    for f in result.failures:
        if f.kind == "no-transition":
            key = "no-transition:*"
        elif f.kind == "error" and not any(i.name == f.name for i in model.invariants):
            key = "error:error"
        else:
            key = f"{f.kind}:{f.name}"
        if f.length <= depth:
            out[key] = min(out.get(key, f.length), f.length)
    return out


def assert_agree(model: Model, depth: int) -> dict[str, int]:
    """BMC finds each failure group first at the checker's shortest length (no time limit:
    the depth bounds the work)."""
    expected = checker_groups(model, depth)
    result = bmc(model, depth, all_failures=True)
    assert result.verdict != "unknown", result.reason
    assert result.groups == expected
    for f in result.failures:  # every trace was replayed; its length is the depth found
        key = "no-transition:*" if f.kind == "no-transition" else f"{f.kind}:{f.name}"
        assert f.length == result.groups.get(key, f.length)
    return expected

# The protocol library's pinned counts (tests/test_library.py, tests/test_compiled_engine.py)
GERMAN = "specs/german.coh"
MSI_SNOOP = "specs/msi_snooping.coh"
MESI_SNOOP = "specs/mesi_snooping.coh"
MSI_DIR = "specs/msi_directory.coh"
MESI_DIR = "specs/mesi_directory.coh"
GPU_WT = "specs/gpu_write_through.coh"

# (spec, agents, monitor?) -> (states with exact symmetry, states without symmetry);
# 0 means not pinned (out of reach: docs/library.md says why).
LIBRARY_COUNTS: dict[tuple[str, int, bool], tuple[int, int]] = {
    (MSI_SNOOP, 2, False): (10, 16),
    (MSI_SNOOP, 3, False): (12, 28),
    (MSI_SNOOP, 4, False): (14, 48),
    (MESI_SNOOP, 2, False): (12, 20),
    (MESI_SNOOP, 3, False): (14, 34),
    (MESI_SNOOP, 4, False): (16, 56),
    (GPU_WT, 2, False): (874, 1702),
    (GPU_WT, 3, False): (9752, 53314),
    (GPU_WT, 4, False): (81420, 1615198),
    (MSI_DIR, 2, False): (860, 1694),
    (MSI_DIR, 3, False): (9910, 56810),
    (MSI_DIR, 4, False): (85090, 1843018),
    (MESI_DIR, 2, False): (1008, 1988),
    (MESI_DIR, 3, False): (14176, 81808),
    (MESI_DIR, 4, False): (138458, 3031744),
    (GERMAN, 2, False): (1698, 3381),
    (GERMAN, 3, False): (10460, 58077),
    (GERMAN, 4, False): (56161, 1105353),
    # with the coherence monitor
    (MSI_SNOOP, 2, True): (158, 312),
    (MSI_SNOOP, 3, True): (978, 5254),
    (MSI_SNOOP, 4, True): (4066, 72688),
    (MESI_SNOOP, 2, True): (192, 380),
    (MESI_SNOOP, 3, True): (1244, 6772),
    (MESI_SNOOP, 4, True): (5106, 92544),
    (GPU_WT, 2, True): (19598, 39168),
    (MSI_DIR, 2, True): (22300, 44574),
    (MESI_DIR, 2, True): (25240, 50452),
    (GERMAN, 2, True): (48066, 96117),
}
# Expected verdicts; for failing specs, {property: shortest counterexample length}.
LIBRARY_VERDICTS: dict[str, dict[str, int] | None] = {
    GERMAN: None,
    MSI_SNOOP: None,
    MESI_SNOOP: None,
    MSI_DIR: None,
    MESI_DIR: None,
    GPU_WT: None,
}


def first_states(sem: Semantics, cap: int) -> list[State]:
    """The first ``cap`` reachable states in breadth-first order (a prefix, never an error)."""
    seen: set[State] = set()
    order: list[State] = []
    frontier = list(sem.initial_states())
    while frontier and len(order) < cap:
        s = frontier.pop(0)
        if s in seen:
            continue
        seen.add(s)
        order.append(s)
        outcomes, _ = sem.enabled(s)
        frontier.extend(o.state for o in outcomes if o.state is not None)
    return order


def _action_keys(outcomes: list[Outcome]) -> Counter[tuple[str, ...]]:
    keys: Counter[tuple[str, ...]] = Counter()
    for o in outcomes:
        if o.error is None:
            continue
        if isinstance(o.error, CoherenceViolation):
            keys.update(("coherence", n) for n in o.error.properties)
        else:
            keys[("error", o.error.code, str(o.error.span))] += 1
    return keys


def compare_c_with_semantics(model: Model, cap: int) -> int:
    """Explores up to ``cap`` states with the reference; asserts the generated C agrees on each
    (successors, failures, rule counts, invariants, quiescence); returns how many states were
    compared. Used by tests/test_compiled_codegen.py and tests/test_compiled_hierarchy.py."""
    from coherence.engines.cgen.codegen import generate
    from coherence.engines.compiled.cshim import Shim
    from coherence.layout import Layout

    layout = Layout(model)
    gen = generate(model, layout)
    shim = Shim(gen, opt="-O0")
    sem = Semantics(model)
    init = [layout.pack(s) for s in sem.initial_states()]
    assert shim.initial() == init
    seen = set(init)
    frontier = list(init)
    done = 0
    while frontier and done < cap:
        nxt = []
        for code in frontier:
            if done >= cap:
                break
            done += 1
            state = layout.unpack(code)
            outcomes, problems = sem.enabled(state)
            ref = sorted(layout.pack(o.state) for o in outcomes if o.state is not None)
            ex = shim.expand(code)
            where = f"{model.file} in {state}"
            assert sorted(ex.successors) == ref, where
            got = Counter(gen.keys[k] for k in ex.failures)
            want = _action_keys(outcomes) + Counter(p.key for p in problems)
            assert got == want, where
            assert (ex.rules, ex.live, ex.problems) == (len(outcomes), len(ref),
                                                        len(problems)), where
            inv = {v.key for v in sem.invariant_violations(state)}
            assert {gen.keys[k] for k in shim.check_state(code)} == inv, where
            assert shim.quiescent(code) == sem.quiescent(state), where
            for s in ref:
                if s not in seen:
                    seen.add(s)
                    nxt.append(s)
        frontier = nxt
    return done

# ---------------------------------------------------------------- msi_home_acks' Houdini lines

MSI_HOME_ACKS = ROOT / "tests" / "specs" / "infer" / "msi_home_acks.coh"
# the 78 lines the 4-agent Houdini chose for it: inductive at 4 agents, not for every N
MSI_HOME_ACKS_HOUDINI = MSI_HOME_ACKS.with_name("msi_home_acks_houdini.aux")
# (goal, action) of obligations of those lines that have concrete counterexamples to induction
# with one agent (a Data from a node to itself: results/infer/msi_home_acks_relations.md)
MSI_HOME_ACKS_BROKEN = [("invariant:inferred_21", "action Cache.message Data in IS_D"),
                        ("invariant:inferred_13", "action Cache.message Data in IM_D"),
                        ("no-transition:*", "action Dir.message Data in S_D")]


def msi_home_acks_houdini() -> Model:
    """msi_home_acks.coh (``coherent`` dropped, as its proofs for every N do) with the lines."""
    from coherence.spec.load import extend, load_spec
    from coherence.spec.select import drop_properties
    return extend(drop_properties(load_spec(MSI_HOME_ACKS), ["coherent"]),
                  MSI_HOME_ACKS_HOUDINI.read_text())


def counted_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the workers ``coherence.smt.forked`` forks from here on (NOTE(forked-shares)),
    as this process sees them; ``monkeypatch`` undoes the count."""
    import os

    from coherence.smt import forked
    made: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            made.append(pid)
        return pid
    monkeypatch.setattr(forked.os, "fork", fork)
    return made


# ---------------------------------------------------------------- exports against the checker
# (tests/test_message_count_export.py, tests/test_message_position_export.py)

needs_rumur = pytest.mark.skipif(not rumur_available(), reason="rumur and cc are needed")
needs_spin = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="spin and gcc are needed")


def walk(node: object) -> Iterator[object]:
    """Every node of an IR tree (expressions, tuples), the root first."""
    yield node
    if isinstance(node, tuple):
        for x in node:
            yield from walk(x)
    elif hasattr(node, "__attrs_attrs__"):
        for f in node.__attrs_attrs__:  # type: ignore[attr-defined]
            yield from walk(getattr(node, f.name))


def rumur_agrees(model: Model) -> tuple[str, int]:
    """Rumur (symmetry off) on the Murphi export, and our checker: the same verdict, then the
    same count (holds) or the same invariant (fails). Returns our (verdict, states)."""
    ours = check(model, CheckOptions(symmetry=False, stop_at_first=True))
    theirs = run_rumur(to_murphi(model), symmetry="off")
    assert theirs.verdict == ours.verdict, theirs.output[-3000:]
    if ours.verdict == "holds":
        assert theirs.states == ours.states
    else:
        assert [f.kind for f in ours.failures] == ["invariant"]
        assert f'invariant "{ours.failures[0].name}" failed' in theirs.output, (
            theirs.output[-3000:])
    return ours.verdict, ours.states


def spin_agrees(model: Model) -> tuple[str, int]:
    """Spin on the Promela export, and our checker (symmetry off): the same verdict, then
    ``(READY + 1) * ours + 1`` states (holds) or the same invariant (fails)."""
    text = to_promela(model)
    ours = check(model, CheckOptions(symmetry=False, stop_at_first=True))
    theirs = run_spin(text)
    assert theirs.verdict == ours.verdict, theirs.output[-3000:]
    if ours.verdict == "holds":
        ready = re.search(r"^#define READY (\d+)", text, re.M)
        assert ready is not None
        assert theirs.states == (int(ready.group(1)) + 1) * ours.states + 1
    else:
        assert [f.kind for f in ours.failures] == ["invariant"]
        assert theirs.failure is not None
        assert theirs.failure.startswith(f"invariant: {ours.failures[0].name} at"), (
            theirs.failure)
    return ours.verdict, ours.states


def houdini_step(model: Model, cands: list, tpl: Any, chosen: set[int], agents: int) -> Any:
    """Whether Houdini's instance of ``agents`` agents has a step from a state of ``chosen``
    and every target to one that breaks them (sat: the set is not inductive there)."""
    from coherence.smt import infer_finite
    ins = infer_finite.encode_instance(model, tpl, agents)
    run = infer_finite._lazy_on(ins, cands, tpl, infer_finite.CHECK_RLIMIT, None)
    for k in chosen:
        run._encode(k)
    return run._query(chosen, set(ins.targets))


def in_fresh_interpreter(module: str, function: str, *args: str, hash_seed: str = "0") -> str:
    """Run ``module.function(*args)`` (a test module's) in a new Python with
    ``PYTHONHASHSEED=hash_seed`` and return what it printed; fail with its stderr if it raised. For
    checks of what Z3 proves within a budget: its search depends on the order the terms of
    the whole process were made in, so such a check passed alone and failed after other
    tests in the same pytest worker (about once in ten runs)."""
    import os
    import subprocess
    import sys
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import importlib; "
              "getattr(importlib.import_module(sys.argv[2]), sys.argv[3])(*sys.argv[4:])")
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", script, str(ROOT / "tests"), module, function,
                           *args], capture_output=True, text=True, env=env, timeout=900,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def action_query(model: Any, action: str, goal: str) -> Any:
    """The one obligation of ``goal`` (``invariant:NAME``) at the action labelled ``action``
    (``Machine.label``, as the proof's progress names it)."""
    from coherence.smt import param
    ob = param.Obligations(model)
    found = [q for g in ob.groups_of(action) for q in ob.group(g) if q.goal == goal]
    assert len(found) == 1, (action, goal, len(found))
    return found[0]
