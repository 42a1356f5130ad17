"""What several test modules share (imported as ``helpers``: ``pythonpath = ["tests"]`` in
pyproject.toml), so that no test module imports another one.

Paths here are absolute (from this file), never relative to the working directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from coherence.engines import check
from coherence.errors import SpecError
from coherence.ir import Model
from coherence.results import CheckOptions
from coherence.smt.bmc import bmc
from coherence.spec.load import load_spec_text

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"

# Z3's deterministic resource limit in tests (``rlimit``: the longest check of a proof for
# every N; its quick first try gets 1/12 of it): the same verdict however loaded the machine is
# (a wall-clock budget once gave "unknown (timeout)"). The largest check of the bundled proofs
# uses about 9 million units (8 s on a loaded machine); running out is an unknown, not a pass.
PROOF_RLIMIT = 150_000_000

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
