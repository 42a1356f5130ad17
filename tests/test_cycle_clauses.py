"""NOTE(cycle-clauses): the candidates that only rule out a cycle of one relation are found by
their literals, mined where a forwarding chain could close, and left out on request."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import ROOT

from coherence.smt.infer_atoms import Atom
from coherence.smt.infer_mine import Candidate, closes_cycle, mine
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

FWD = Atom("exists k: FwdGetM :: k.dst == {y} && k.req == {x}", "rel.FwdGetM", False,
           lambda *a: False)
DATA = Atom("exists k: Data :: k.src == {x} && k.dst == {y}", "rel.Data", False,
            lambda *a: False)
STATE = Atom("Cache[{x}].state == IM_AD", "state", True, lambda *a: False)


def _cand(kind: str, *lits: tuple[Atom, str, bool]) -> Candidate:
    return Candidate(kind, "text", len(lits), lits)


def test_a_cycle_of_one_relation_is_found_by_its_places() -> None:
    assert closes_cycle(_cand("pair", (FWD, "ij", True), (FWD, "ji", True)))
    assert closes_cycle(_cand("pair", (STATE, "i", True), (FWD, "ji", True),
                              (FWD, "ij", True)))
    assert closes_cycle(_cand("triple", (FWD, "ij", True), (FWD, "jl", True),
                              (FWD, "li", True)))
    assert closes_cycle(_cand("triple", (FWD, "ji", True), (FWD, "lj", True),
                              (FWD, "il", True)))


def test_what_is_no_cycle_is_kept() -> None:
    # a negated literal: the clause says R(j, i) follows, not that the cycle is impossible
    assert not closes_cycle(_cand("pair", (FWD, "ij", True), (FWD, "ji", False)))
    # two relations: no cycle of one
    assert not closes_cycle(_cand("pair", (FWD, "ij", True), (DATA, "ji", True)))
    # a path of three agents, not closed
    assert not closes_cycle(_cand("triple", (FWD, "ij", True), (FWD, "jl", True)))
    assert not closes_cycle(_cand("triple", (FWD, "ij", True), (FWD, "jl", True),
                                  (FWD, "il", True)))
    assert not closes_cycle(_cand("agent", (STATE, "i", True)))


def test_msi_with_acks_at_the_home_mines_the_two_cycles_of_its_forwards() -> None:
    model = load_spec(ROOT / "tests" / "specs" / "infer" / "msi_home_acks.coh")
    model = drop_properties(model, [p.name for p in model.properties])
    cands, _stats, _tpl = mine(model, (2, 3))
    cycles = sorted(c.text for c in cands if closes_cycle(c))
    assert cycles, "the forwards' 2-cycles hold at 2 and 3 agents"
    for text in cycles:
        assert text.startswith("forall i: agent, j: agent :: i != j -> ((exists k: ")
    names = {t.split("exists k: ")[1].split(" ")[0] for t in cycles}
    assert {"FwdGetS", "FwdGetM", "Inv"} <= names


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coherence.cli", *args], cwd=ROOT,
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_cli_leaves_them_out_says_how_many_and_the_chain_is_still_proved() -> None:
    # the token's chain of requestors: its two 2-cycle clauses (Fwd's and Tok's) are mined and
    # left out (the default), and the lines Houdini chooses without them prove mutual exclusion
    # for every N; --cycle-clauses offers them, and the chain is proved that way too
    spec = ROOT / "tests" / "specs" / "infer" / "token_chain.coh"
    for flags, left_out in (([], 2), (["--no-cycle-clauses"], 2), (["--cycle-clauses"], 0)):
        r = _cli("prove", str(spec), "--agents", "any", "--infer", *flags, "--json",
                 "--rlimit", "16000000")
        assert r.returncode == 0, (flags, r.stderr[-2000:])
        doc = json.loads(r.stdout)
        assert doc["verdict"] == "holds"
        assert doc["inferred"]["stats"]["cycle_clauses_left_out"] == left_out, flags
        assert doc["inferred"]["invariants"]
    for flag in ("--no-cycle-clauses", "--cycle-clauses"):
        r = _cli("prove", str(spec), "--agents", "any", flag)
        assert r.returncode == 2 and f"{flag} needs --infer" in r.stderr
        assert "Traceback" not in r.stderr


def test_inference_leaves_them_out_unless_asked() -> None:
    from coherence.smt.infer import InferOptions
    assert InferOptions().cycle_clauses is False
