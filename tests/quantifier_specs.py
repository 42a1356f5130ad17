"""Specs where the old order-dependent quantifier rule and NOTE(quantifier-errors) differ
(``tests/test_quantifier_errors.py`` explains each; ``tests/test_gpu_device.py`` runs them on
a GPU), and the compiled-against-reference comparison of the message quantifier tests
(``summary``, ``failures``, ``both``, ``host_kernels_as_cplusplus``:
tests/test_message_count_compiled.py, tests/test_message_position.py). No Z3 here: the GPU
machine has none."""

from __future__ import annotations

import subprocess
from pathlib import Path

from coherence import ir
from coherence.engines import check
from coherence.engines.cgen.codegen import generate
from coherence.engines.gpu.source import kernel_source
from coherence.layout import Layout
from coherence.results import CheckOptions, CheckResult


def span_of(text: str, needle: str) -> str:
    """``file:line:col`` of the first ``needle`` in ``text`` (1-based, as spans are)."""
    at = text.index(needle)
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"<spec>:{line}:{col}"


# who := self on Go. `named` needs both instances of `a` to read a defined `who`: with one
# agent gone, the state has a false instance (a = the one that went, b = the other) and an
# erring one (a = the one that did not). The false one decides: a violation after 1 step,
# whichever agent went. (The old rule: an error when agent 0 had not gone, so with symmetry
# the first violation came at 2 steps.)
INVARIANT = """param agents = 2;
network net: fifo, capacity = 1;
message M on net;
event Go;
home machine H {
  stable state R;
  init R;
  on M in R { }
}
cache machine C {
  stable state S;
  init S;
  var who: agent = undefined;
  on Go { who := self; }
}
invariant named: forall a: agent, b: agent :: (C[a].who == b);
"""


# A guard: Home may Fire when some cache has gone to G and names itself. Skip (to K, naming
# nobody) is only possible once another cache is in G, so every state where an instance errs
# (a cache in K) also has a true one (the cache in G): the guard never errs, and Fire breaks
# `quiet` at 2 steps (Go, Fire). (The old rule made it an error when the cache in K was
# agent 0: an error key at 3 steps, Go, Skip, Fire, without symmetry.)
GUARD = """param agents = 2;
network net: fifo, capacity = 1;
message M on net;
event Go;
cache machine C {
  stable state S, G, K;
  init S;
  var who: agent = undefined;
  on Go in S { who := self; goto G; }
  rule Skip in S when exists b: agent :: C[b].state == G { goto K; }
}
home machine H {
  stable state R, Done;
  init R;
  rule Fire in R when exists a: agent :: (C[a].state != S && C[a].who == a) { goto Done; }
  on M in R { }
}
invariant quiet: H.state == R;
"""


# Two instances, two errors at two places. Look's guard reaches its last conjunct only when
# one cache is in P and the other in Q; there the cache in P reads `u` and the one in Q reads
# `w`, both undefined. The error is the read that comes first in the text, whichever agent
# is in P: one failure key at 3 steps (Go, Hop, Look). (The old rule reported agent 0's, so
# both keys came up without symmetry.)
LEAST = """param agents = 2;
network net: fifo, capacity = 1;
message M on net;
event Go;
event Hop;
cache machine C {
  stable state S, P, Q;
  init S;
  var u: agent = undefined;
  var w: agent = undefined;
  on Go in S { goto P; }
  on Hop in S { goto Q; }
}
home machine H {
  stable state R;
  init R;
  rule Look in R when (exists b: agent :: C[b].state == P) && (exists b: agent :: C[b].state == Q)
    && (exists a: agent :: (BRANCHES)) { }
  on M in R { }
}
"""


ORDERS = {"u-first": "if C[a].state == P then C[a].u == a else C[a].w == a",
          "w-first": "if C[a].state == Q then C[a].w == a else C[a].u == a"}


COUNT = LEAST.replace("(exists a: agent :: (BRANCHES))", "count(a: agent :: BRANCHES) > 0")


# Messages: Blank sends a Req without a value, then Ask (only after Blank) sends Req(1).
# With both in flight, `forall m: Req :: m.v == 2` has an erring instance and a false one:
# a violation at 2 steps, whatever order the network lists them in. A lone blank Req is
# the invariant's error at 1 step.
MESSAGES = """param agents = 2;
message Req(v: int[0..3]);
network net: unordered, capacity = 2;
home machine H { stable state R; init R; on Req { } }
cache machine C {
  stable state I, B, A;
  init I;
  rule Blank in I { send Req(undefined) to home; goto B; }
  rule Ask in B { send Req(1) to home; goto A; }
}
invariant two: forall m: Req :: m.v == 2;
"""


# (spec text, the failures every engine finds with and without symmetry: key -> length)
EXPECTED: dict[str, tuple[str, dict[tuple[str, ...], int]]] = {
    "invariant": (INVARIANT, {("error", "named"): 0, ("invariant", "named"): 1}),
    "guard": (GUARD, {("invariant", "quiet"): 2}),
    "messages": (MESSAGES, {("error", "two"): 1, ("invariant", "two"): 2}),
    **{f"least-{order}": (LEAST.replace("BRANCHES", branches), {
        ("error", "undefined", span_of(LEAST.replace("BRANCHES", branches),
                                       "C[a].u == a" if order == "u-first"
                                       else "C[a].w == a")): 3})
       for order, branches in ORDERS.items()},
}


# ---------------------------------------------------------------- compiled against reference

def summary(result: CheckResult) -> tuple:
    """Everything two engines must agree on."""
    return (result.states, result.rules_fired, result.depth, result.verdict, result.stopped,
            sorted((f.key, f.length, f.message) for f in result.failures))


def failures(result: CheckResult) -> dict[tuple[str, ...], int]:
    """Each failure's key and length (one failure per key)."""
    out = {f.key: f.length for f in result.failures}
    assert len(out) == len(result.failures), "two failures with one key"
    return out


def both(model: ir.Model, symmetry: bool = True) -> tuple[CheckResult, CheckResult]:
    """(compiled, reference) on one model."""
    options = CheckOptions(symmetry=symmetry, threads=2)
    ours = check(model, options, engine="compiled")
    assert ours.engine == "compiled"
    return ours, check(model, options, engine="reference")


def host_kernels_as_cplusplus(model: ir.Model, path: Path) -> subprocess.CompletedProcess:
    """g++ reading the host build of the model's GPU kernels as C++17, NVRTC's dialect,
    where a jump (an instance's error) may not skip a declaration still in scope."""
    path.write_text(kernel_source(generate(model, Layout(model)), 1, "host"))
    return subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall",
                           "-Wno-unused-function", "-Wno-unused-variable",
                           "-Wno-unused-label", str(path)],
                          capture_output=True, text=True, check=False)
