"""``count(m: Msg :: body)`` (NOTE(message-count)) in the Murphi and Promela exports, against
the reference checker: Rumur with symmetry off counts exactly our states, Spin stores exactly
``(READY + 1) * ours + 1`` (docs/rumur.md, docs/spin.md), and both fail the same invariant.

The specs: tests/specs/count/message_count.coh (holds; pings on a fifo queue, requests on an
unordered network) and message_count_bad.coh (fails one_ping at depth 2), at 2 and 3 agents;
a small inline spec for what those two do not reach (the same unordered message twice, an
agent-to-agent fifo, a count inside a message quantifier or inside a count), and the
two-level hierarchy of tests/specs/hierarchy/ through the hierarchical Murphi exporter and
the Promela one. Needs rumur and cc, spin and gcc; a test is skipped when its tool is missing.
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
HOLDS = ROOT / "tests" / "specs" / "count" / "message_count.coh"
FAILS = ROOT / "tests" / "specs" / "count" / "message_count_bad.coh"
TWO_LEVEL = ROOT / "tests" / "specs" / "hierarchy" / "two_level_wt.coh"

# Fwd is sent twice at once (one unordered counter at 2: counted twice); Note goes from a
# cache to every other cache on a fifo network (the agent-to-agent queues).
SMALL = """
param agents = 2;
network req: unordered, capacity = 3;
network peer: fifo, capacity = 1;

message Req(v: value) on req;
message Fwd(v: value) on req;
message Note(v: value) on peer;

event Go(v: value);

home machine Dir {
  stable state I;
  init I;
  on Req in I { send Fwd(msg.v) to msg.src; send Fwd(msg.v) to msg.src; }
}

cache machine Cache {
  stable state I, W, D;
  init I;
  var got: int[0..1] = 0;
  on Go(v) in I { send Req(v) to home; goto W; }
  on Fwd in W when got == 0 { got := 1; }
  on Fwd in W when got == 1 { got := 0; broadcast Note(msg.v) except self; goto D; }
  on Note in I, W, D { }
}
"""
SMALL_CASES = {  # name: (invariant, verdict)
    "duplicates": ("forall i: agent :: count(m: Fwd :: m.dst == i) + Cache[i].got <= 2",
                   "holds"),
    "duplicates_bad": ("forall i: agent :: count(m: Fwd :: m.dst == i && m.v == 0) <= 1",
                       "fails"),
    "in_a_quantifier": ("forall f: Fwd :: count(m: Fwd :: m.dst == f.dst && m.v == f.v) "
                        "+ Cache[f.dst].got == 2", "holds"),
    "agent_to_agent": ("forall i: agent :: count(m: Note :: m.src == i) <= 1", "holds"),
    "agent_to_agent_bad": ("count(m: Note :: m.src != m.dst) <= 0", "fails"),
    "nested": ("count(a: agent :: count(m: Fwd :: m.dst == a) > 0) "
               "+ count(m: Req :: count(f: Fwd :: f.dst == m.src) > 0) <= agents", "holds"),
}
HIER = """
invariant one_inv_each: forall g: gpu :: forall s: sm :: count(m: Inv :: m.dst == L1[g, s]) <= 1;
invariant puts_by: forall g: gpu :: forall s: sm :: count(m: Put :: m.by == L1[g, s]) <= 1;
invariant data: count(m: Data :: m.val == 1) <= 1;
invariant own_put: forall p: Put :: count(m: Put :: m.by == p.by) == 1;
"""
HIER_BAD = "invariant no_put: count(m: Put :: true) == 0;\n"


def _flat(path: Path, agents: int) -> ir.Model:
    model = load_spec(path, {"agents": agents})
    return drop_properties(model, [p.name for p in model.properties if p.kind == "coherence"])


def _small(name: str) -> ir.Model:
    return load_spec_text(SMALL + f"invariant {name}: {SMALL_CASES[name][0]};\n",
                          f"{name}.coh")


def _hier(extra: str) -> ir.Model:
    model = load_spec_text(TWO_LEVEL.read_text() + extra, "two_level_message_count.coh",
                           {"gpus": 1, "sms": 2, "capacity": 1})
    return drop_properties(model, [p.name for p in model.properties if p.kind == "coherence"])


def _spec_cases() -> list:
    return [pytest.param(path, agents, id=f"{path.stem}-{agents}")
            for path in (HOLDS, FAILS) for agents in (2, 3)]


def test_the_specs_have_message_counts() -> None:
    """Never vacuous: each spec's invariants count messages, on both kinds of network."""
    for path in (HOLDS, FAILS):
        model = _flat(path, 2)
        counts = [e for inv in model.invariants for e in walk(inv.expr)
                  if isinstance(e, ir.MsgQuant) and e.kind == "count"]
        assert counts, path
    nets = {_flat(HOLDS, 2).message(e.message).network for inv in _flat(HOLDS, 2).invariants
            for e in walk(inv.expr) if isinstance(e, ir.MsgQuant)}
    assert nets == {"req", "fwd"}  # unordered and fifo


@needs_rumur
@pytest.mark.parametrize(("path", "agents"), _spec_cases())
def test_rumur_agrees(path: Path, agents: int) -> None:
    verdict, _ = rumur_agrees(_flat(path, agents))
    assert verdict == ("holds" if path == HOLDS else "fails")


@needs_spin
@pytest.mark.parametrize(("path", "agents"), _spec_cases())
def test_spin_agrees(path: Path, agents: int) -> None:
    verdict, _ = spin_agrees(_flat(path, agents))
    assert verdict == ("holds" if path == HOLDS else "fails")


def test_the_bad_spec_fails_one_ping_at_depth_2() -> None:
    """What the cross-checks above compare against: the reference's own verdict."""
    for agents in (2, 3):
        ours = check(_flat(FAILS, agents), CheckOptions(symmetry=False, stop_at_first=True))
        assert [(f.name, f.length) for f in ours.failures] == [("one_ping", 2)]


@needs_rumur
def test_rumur_symmetry_agrees_on_message_counts() -> None:
    """Rumur's exhaustive scalarset reduction meets our exact symmetry (the counts take the
    agent as a parameter, so they are permuted with it)."""
    model = _flat(HOLDS, 3)
    ours = check(model, CheckOptions(symmetry=True))
    theirs = run_rumur(to_murphi(model), symmetry="exhaustive")
    assert ours.verdict == theirs.verdict == "holds"
    assert theirs.states == ours.states


@needs_rumur
@pytest.mark.parametrize("name", list(SMALL_CASES))
def test_rumur_agrees_on_small_cases(name: str) -> None:
    assert rumur_agrees(_small(name))[0] == SMALL_CASES[name][1]


@needs_spin
@pytest.mark.parametrize("name", list(SMALL_CASES))
def test_spin_agrees_on_small_cases(name: str) -> None:
    assert spin_agrees(_small(name))[0] == SMALL_CASES[name][1]


@needs_rumur
@pytest.mark.slow  # Rumur's build of the hierarchy: ~7 s of CPU each (the text: below)
@pytest.mark.parametrize(("extra", "verdict"), [
    pytest.param(HIER, "holds", id="holds"), pytest.param(HIER_BAD, "fails", id="fails")])
def test_rumur_agrees_on_a_hierarchy(extra: str, verdict: str) -> None:
    assert rumur_agrees(_hier(extra))[0] == verdict


@needs_spin
@pytest.mark.parametrize(("extra", "verdict"), [
    pytest.param(HIER, "holds", id="holds"), pytest.param(HIER_BAD, "fails", id="fails")])
def test_spin_agrees_on_a_hierarchy(extra: str, verdict: str) -> None:
    assert spin_agrees(_hier(extra))[0] == verdict


# ------------------------------------------------------------ the exported text

ONE_PING_FN = """\
function MsgCount1(l_i: AGENT): 0..18;
var n: 0..18;
begin
  n := 0;
  for l__m_d: AGENT do
    for l__m_k: 0..1 do
      if (l__m_k < st.n_fwd_h2a[l__m_d].count & st.n_fwd_h2a[l__m_d].q[l__m_k].mtype = MT_Ping) then
        if (l__m_d = l_i) then n := n + 1 end;
      end;
    end;
  end;
  return n;
end;
"""


def test_murphi_text_of_a_fifo_count() -> None:
    """A count is a function over the queues' positions (one each), called with the agent;
    its bound is the network's: capacity 2 per ordered pair of the 3 nodes."""
    text = to_murphi(_flat(FAILS, 2))
    assert ONE_PING_FN in text
    assert 'invariant "one_ping" (forall l_i: AGENT do (MsgCount1(l_i) <= 1) end);' in text
    # declared before the rules that the invariants follow
    assert text.index("function MsgCount1") < text.index('startstate "init"')


def test_murphi_text_of_an_unordered_count() -> None:
    """An unordered counter adds its value: two equal messages in flight count twice."""
    text = to_murphi(_small("duplicates"))
    assert ("if (l__m_d = l_i) then n := n + st.n_req_Fwd_h2a[l__m_d][l__m_f0] end;"
            in text), text
    assert "(MsgCount1(l_i) + st.c[l_i].v_got) <= 2" in text


def test_murphi_text_passes_an_enclosing_message_and_shares_equal_counts() -> None:
    text = to_murphi(_small("in_a_quantifier"))
    assert "function MsgCount1(l__f_d: AGENT; l__f_f0: 0..2): 0..3;" in text
    assert "MsgCount1(l__f_d, l__f_f0)" in text
    text = to_murphi(_flat(HOLDS, 2))  # `owed` counts the requests twice: one function
    assert text.count("\nfunction MsgCount") == len(set(re.findall(r"MsgCount\d+\(", text)))
    assert re.search(r"MsgCount(\d+)\(l_i\) \+ MsgCount\1\(l_i\)", text)


def test_promela_text_counts_every_message() -> None:
    """Promela: a loop over every queue position (no early exit, unlike a quantifier) that
    adds one where the body holds."""
    text = to_promela(_flat(FAILS, 2))
    t = re.search(r"\b(t_mc\d+) = 0;", text)
    assert t is not None, text
    mc = t.group(1)
    loop = next(line for line in text.splitlines() if f"{mc}++" in line)
    assert re.search(r"do :: t_q\d+ < 9 -> t_j\d+ = 0; do :: t_j\d+ < f_fwd_len\[t_q\d+\] -> ",
                     loop), loop
    assert f"== {mc}" not in loop and f"{mc} ==" not in loop
    assert f"(({mc} <= 1) != 0)" in text


def test_hierarchical_murphi_text_of_a_count() -> None:
    """The hierarchical exporter's counts: a function per count over the counters of every
    (source machine, destination machine) pair, taking the enclosing message's binders."""
    text = to_murphi(_hier(HIER))
    fns = re.findall(r"^function (MsgCount\d+)\((.*)\): 0\.\.1;$", text, re.M)
    assert len(fns) >= 4, fns
    assert ("(forall l_g: IDX_gpu do (forall l_s: IDX_sm do (MsgCount1(l_g, l_s) <= 1) end) "
            "end)") in text
    assert "n := n + st.n_resp_Inv_" in text and "n := n + st.n_req_Put_L1_L2_L1[" in text
    # own_put: the enclosing `forall p: Put` passes its place (pair, value, `by`'s indices)
    assert any(params.startswith("l__p_s0: IDX_gpu; l__p_s1: IDX_sm;") for _, params in fns)
    assert text.index("function MsgCount1") < text.index('startstate "init"')
