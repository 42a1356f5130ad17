"""``m.pos`` (NOTE(message-position)), a message's place in its fifo queue, in the Murphi and
Promela exports, against the reference checker: Rumur with symmetry off counts exactly our
states, Spin stores exactly ``(READY + 1) * ours + 1`` (docs/rumur.md, docs/spin.md), and
both fail the same invariant.

In both exports a fifo queue is an array whose slot 0 is the head (Murphi: ``q[0]``, shifted
down on delivery; Promela: ``f_NET_t[q * capacity + 0]``), so ``m.pos`` is the slot a message
quantifier's loop is at.

The specs: tests/specs/position/ping_order.coh (holds), ping_order_aux.coh (holds; counts
too) and ping_order_bad.coh (fails wrong_head at depth 2), at 2 and 3 agents; the ping_order
machines with invariants that an export off by one would get wrong (both ways); a small inline
spec for the directions ping_order does not use (agent to home, agent to agent), ``exists``,
and ``m.pos`` inside a count, of the count's own message and of an enclosing one; and the
ping_order machines as a two-level hierarchy (an L2 per GPU pings its L1s) through the
hierarchical Murphi exporter and the Promela one. Needs rumur and cc, spin and gcc; a test is
skipped when its tool is missing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import needs_rumur, needs_spin, rumur_agrees, spin_agrees, walk

from coherence import ir, load_spec
from coherence.engines import check
from coherence.export.murphi import to_murphi
from coherence.export.promela import to_promela
from coherence.export.rumur import run_rumur
from coherence.results import CheckOptions
from coherence.spec.load import load_spec_text
from coherence.spec.select import drop_properties

ROOT = Path(__file__).resolve().parent.parent
POSITION = ROOT / "tests" / "specs" / "position"
HOLDS = POSITION / "ping_order.coh"
AUX = POSITION / "ping_order_aux.coh"
FAILS = POSITION / "ping_order_bad.coh"

# ping_order's machines without its invariants: the home sends Ping(0) then Ping(1).
PING = HOLDS.read_text().split("// Ping(0) is always at the head")[0]
# Each pair: an export that read m.pos one too high (a 1-based slot) breaks the first, one
# too low breaks the second; the reference's verdicts are on the right.
OFF_BY_ONE = {  # name: (invariant, verdict)
    "head_is_0": ("forall m: Ping :: m.val == 0 -> m.pos == 0", "holds"),
    "head_is_not_1": ("forall m: Ping :: m.val == 0 -> m.pos == 1", "fails"),
    "behind_is_1": ("forall m: Ping :: m.val == 1 && Cache[m.dst].got == 0 -> m.pos == 1",
                    "holds"),
    "behind_is_not_0": ("forall m: Ping :: m.val == 1 && Cache[m.dst].got == 0 -> m.pos == 0",
                        "fails"),
}

# Each cache sends Req(0), Req(1) to the home (a fifo queue per agent) and Note(0), Note(1)
# to every other cache (agent-to-agent fifo queues); the home and the caches drop them.
SMALL = """
param agents = 2;
network req: fifo, capacity = 2;
network peer: fifo, capacity = 2;

message Req(v: value) on req;
message Note(v: value) on peer;

event Go;

home machine Dir {
  stable state I;
  init I;
  on Req in I { }
}

cache machine Cache {
  stable state I, D;
  init I;
  on Go in I {
    send Req(0) to home; send Req(1) to home;
    broadcast Note(0) except self; broadcast Note(1) except self;
    goto D;
  }
  on Note in I, D { }
}
"""
SMALL_CASES = {  # name: (invariant, verdict)
    "to_home": ("forall m: Req :: forall k: Req :: (m.src == k.src && m.v == 0 && k.v == 1) "
                "-> m.pos < k.pos", "holds"),
    "to_home_bad": ("forall m: Req :: m.v == 1 -> m.pos == 1", "fails"),
    "agent_to_agent": ("forall m: Note :: m.v == 0 -> m.pos == 0", "holds"),
    "agent_to_agent_bad": ("forall m: Note :: m.pos == 0", "fails"),
    "exists": ("forall m: Note :: m.pos == 1 -> exists k: Note :: k.src == m.src && "
               "k.dst == m.dst && k.pos == 0 && k.v == 0", "holds"),
    "exists_bad": ("!(exists m: Req :: m.pos == 1)", "fails"),
    "count": ("forall i: agent :: count(m: Req :: m.src == i && m.pos == 0) <= 1", "holds"),
    "count_bad": ("count(m: Req :: m.pos == 1) == 0", "fails"),
    # the enclosing message's place is a parameter of the count's Murphi function
    "count_ahead": ("forall k: Note :: count(m: Note :: m.src == k.src && m.dst == k.dst && "
                    "m.pos < k.pos) == k.pos", "holds"),
    "count_ahead_bad": ("forall k: Note :: count(m: Note :: m.src == k.src && m.dst == k.dst "
                        "&& m.pos < k.pos) == 0", "fails"),
    "count_in_count": ("count(m: Req :: count(k: Req :: k.src == m.src && k.pos > m.pos) == 1)"
                       " == count(m: Req :: m.pos == 1)", "holds"),
}

HIER = """
param gpus = 1 range 1..2;
param sms = 2 range 1..4;
param values = 2;
index gpu: gpus;
index sm: sms within gpu;

network req: unordered, capacity = 4;
network fwd: fifo, capacity = 2;

message Req on req;
message Ping(val: value) on fwd;

event Go;

machine L1[g: gpu, s: sm] {
  stable state I, W;
  init I;
  var got: int[0..2] = 0;
  on Go in I { send Req to L2[g]; goto W; }
  on Ping in W when got == 0 { assert msg.val == 0; got := 1; }
  on Ping in W when got == 1 { assert msg.val == 1; got := 0; goto I; }
}

machine L2[g: gpu] {
  stable state R;
  init R;
  on Req in R { send Ping(0) to msg.src; send Ping(1) to msg.src; }
}
"""
HIER_HOLDS = """
invariant first_at_head: forall m: Ping :: m.val == 0 -> m.pos == 0;
invariant in_order: forall m: Ping :: forall k: Ping ::
  (m.dst == k.dst && m.val == 0 && k.val == 1) -> m.pos < k.pos;
invariant behind: forall m: Ping :: m.dst is L1 && m.val == 1
  && L1[m.dst.gpu, m.dst.sm].got == 0 -> m.pos == 1;
invariant ahead: forall k: Ping :: count(m: Ping :: m.dst == k.dst && m.pos < k.pos) == k.pos;
"""
HIER_BAD = {
    "head_is_not_1": "invariant head_is_not_1: forall m: Ping :: m.val == 0 -> m.pos == 1;\n",
    "behind_is_not_0": ("invariant behind_is_not_0: forall m: Ping :: m.dst is L1 && "
                        "m.val == 1 && L1[m.dst.gpu, m.dst.sm].got == 0 -> m.pos == 0;\n"),
}


def _flat(path: Path, agents: int) -> ir.Model:
    model = load_spec(path, {"agents": agents})
    return drop_properties(model, [p.name for p in model.properties if p.kind == "coherence"])


def _ping(name: str) -> ir.Model:
    return load_spec_text(PING + f"invariant {name}: {OFF_BY_ONE[name][0]};\n", f"{name}.coh")


def _small(name: str) -> ir.Model:
    return load_spec_text(SMALL + f"invariant {name}: {SMALL_CASES[name][0]};\n",
                          f"{name}.coh")


def _hier(extra: str, gpus: int = 1, sms: int = 2) -> ir.Model:
    return load_spec_text(HIER + extra, "ping_order_hier.coh", {"gpus": gpus, "sms": sms})


def _positions(model: ir.Model) -> list[ir.MsgVarAttr]:
    return [e for inv in model.invariants for e in walk(inv.expr)
            if isinstance(e, ir.MsgVarAttr) and e.attr == ir.POSITION]


def _spec_cases() -> list:
    return [pytest.param(path, agents, id=f"{path.stem}-{agents}")
            for path in (HOLDS, AUX, FAILS) for agents in (2, 3)]


def _verdict(path: Path) -> str:
    return "fails" if path == FAILS else "holds"


# ------------------------------------------------------------ never vacuous


def test_the_specs_read_positions() -> None:
    """Every spec and case reads m.pos; the specs compare two with `<`, quantify over
    messages inside a message quantifier, and read a place inside a count."""
    for path in (HOLDS, AUX, FAILS):
        assert _positions(_flat(path, 2)), path
    for name in OFF_BY_ONE:
        assert _positions(_ping(name)), name
    for name in SMALL_CASES:
        assert _positions(_small(name)), name
    for extra in (HIER_HOLDS, *HIER_BAD.values()):
        assert _positions(_hier(extra)), extra
    in_order = next(i for i in _flat(HOLDS, 2).invariants if i.name == "in_order")
    assert any(isinstance(e, ir.Binary) and e.op == "<" and isinstance(e.left, ir.MsgVarAttr)
               and e.left.attr == ir.POSITION for e in walk(in_order.expr))
    assert sum(isinstance(e, ir.MsgQuant) for e in walk(in_order.expr)) == 2
    counted = [e for name in SMALL_CASES for i in _small(name).invariants
               for q in walk(i.expr) if isinstance(q, ir.MsgQuant) and q.kind == "count"
               for e in walk(q.body) if isinstance(e, ir.MsgVarAttr) and e.attr == ir.POSITION]
    assert counted
    nets = {_small("to_home").message(m).network for m in ("Req", "Note")}
    assert {_small("to_home").network(n).ordering for n in nets} == {ir.Ordering.FIFO}


def test_the_bad_spec_fails_wrong_head_at_depth_2() -> None:
    """What the cross-checks compare against: the reference's own verdicts."""
    for agents in (2, 3):
        ours = check(_flat(FAILS, agents), CheckOptions(symmetry=False, stop_at_first=True))
        assert [(f.name, f.length) for f in ours.failures] == [("wrong_head", 2)]
        assert check(_flat(HOLDS, agents), CheckOptions(symmetry=False)).verdict == "holds"


def test_the_reference_verdicts_of_the_cases() -> None:
    cases = [(_ping(n), v) for n, (_, v) in OFF_BY_ONE.items()]
    cases += [(_small(n), v) for n, (_, v) in SMALL_CASES.items()]
    cases += [(_hier(HIER_HOLDS), "holds")] + [(_hier(x), "fails") for x in HIER_BAD.values()]
    for model, verdict in cases:
        assert check(model, CheckOptions(symmetry=False)).verdict == verdict, model.invariants


# ------------------------------------------------------------ the tools agree


@needs_rumur
@pytest.mark.parametrize(("path", "agents"), _spec_cases())
def test_rumur_agrees(path: Path, agents: int) -> None:
    assert rumur_agrees(_flat(path, agents))[0] == _verdict(path)


@needs_spin
@pytest.mark.parametrize(("path", "agents"), _spec_cases())
def test_spin_agrees(path: Path, agents: int) -> None:
    assert spin_agrees(_flat(path, agents))[0] == _verdict(path)


@needs_rumur
@pytest.mark.parametrize("path", [HOLDS, AUX])
def test_rumur_symmetry_agrees_on_positions(path: Path) -> None:
    """Rumur's exhaustive scalarset reduction meets our exact symmetry (a place is a plain
    range, not permuted)."""
    model = _flat(path, 3)
    ours = check(model, CheckOptions(symmetry=True))
    theirs = run_rumur(to_murphi(model), symmetry="exhaustive")
    assert ours.verdict == theirs.verdict == "holds"
    assert theirs.states == ours.states


@needs_rumur
@pytest.mark.parametrize("name", list(OFF_BY_ONE))
def test_rumur_is_not_off_by_one(name: str) -> None:
    assert rumur_agrees(_ping(name))[0] == OFF_BY_ONE[name][1]


@needs_spin
@pytest.mark.parametrize("name", list(OFF_BY_ONE))
def test_spin_is_not_off_by_one(name: str) -> None:
    assert spin_agrees(_ping(name))[0] == OFF_BY_ONE[name][1]


@needs_rumur
@pytest.mark.parametrize("name", list(SMALL_CASES))
def test_rumur_agrees_on_small_cases(name: str) -> None:
    assert rumur_agrees(_small(name))[0] == SMALL_CASES[name][1]


@needs_spin
@pytest.mark.parametrize("name", list(SMALL_CASES))
def test_spin_agrees_on_small_cases(name: str) -> None:
    assert spin_agrees(_small(name))[0] == SMALL_CASES[name][1]


def _hier_cases() -> list:
    return [pytest.param(HIER_HOLDS, "holds", 1, 2, id="holds-1x2"),
            pytest.param(HIER_HOLDS, "holds", 2, 1, id="holds-2x1"),
            *(pytest.param(x, "fails", 1, 2, id=f"{n}-1x2") for n, x in HIER_BAD.items())]


@needs_rumur
@pytest.mark.parametrize(("extra", "verdict", "gpus", "sms"), _hier_cases())
def test_rumur_agrees_on_a_hierarchy(extra: str, verdict: str, gpus: int, sms: int) -> None:
    assert rumur_agrees(_hier(extra, gpus, sms))[0] == verdict


@needs_spin
@pytest.mark.parametrize(("extra", "verdict", "gpus", "sms"), _hier_cases())
def test_spin_agrees_on_a_hierarchy(extra: str, verdict: str, gpus: int, sms: int) -> None:
    assert spin_agrees(_hier(extra, gpus, sms))[0] == verdict


# ------------------------------------------------------------ the exported text


def test_murphi_text_reads_the_slot() -> None:
    """m.pos is the loop's slot itself: q[0] is the head, no offset."""
    text = to_murphi(_flat(HOLDS, 2))
    assert ("invariant \"first_at_head\" ((forall l__m_d: AGENT do (forall l__m_k: 0..1 do "
            "((l__m_k < st.n_fwd_h2a[l__m_d].count & st.n_fwd_h2a[l__m_d].q[l__m_k].mtype = "
            "MT_Ping) -> ((st.n_fwd_h2a[l__m_d].q[l__m_k].f_Ping_val = 0) -> (l__m_k = 0))) "
            "end) end));") in text
    assert "(l__m_k < l__k_k)" in text  # in_order
    # delivery takes slot 0
    assert "l__m := s.n_fwd_h2a[l__self].q[0];" in text


def test_murphi_text_passes_an_enclosing_place_to_a_count() -> None:
    text = to_murphi(_small("count_ahead"))
    fn = re.search(r"^function (MsgCount\d+)\((.*)\): 0\.\.\d+;$", text, re.M)
    assert fn is not None, text
    assert fn.group(2) == "l__k_s: AGENT; l__k_d: AGENT; l__k_k: 0..1"
    assert "(l__m_k < l__k_k)" in text
    assert f"({fn.group(1)}(l__k_s, l__k_d, l__k_k) = l__k_k)" in text


def test_promela_text_reads_the_slot() -> None:
    """m.pos is the inner loop's index into the queue, 0 the head (the slot delivered)."""
    text = to_promela(_flat(HOLDS, 2))
    loop = next(line for line in text.splitlines() if "coh:35:44" in line)  # first_at_head
    j = re.search(r"(t_j\d+) = 0; do :: \1 < f_fwd_len\[(t_q\d+)\]", loop)
    assert j is not None, loop
    assert f"({j.group(1)} == 0)" in loop
    assert f"f_fwd_Ping_val[{j.group(2)} * 2 + {j.group(1)}]" in loop


def test_hierarchical_murphi_text_reads_the_slot() -> None:
    text = to_murphi(_hier(HIER_HOLDS))
    first = next(line for line in text.splitlines() if '"first_at_head"' in line)
    assert "(forall l__m_k: 0..1 do" in first and "(l__m_k = 0)" in first, first
    assert re.search(r"^function MsgCount\d+\(.*l__k_k: 0\.\.1\): 0\.\.\d+;$", text, re.M)
