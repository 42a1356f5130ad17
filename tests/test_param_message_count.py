"""Counts of messages in flight in a proof for every number of agents (NOTE(message-count) in
coherence/smt/param.py): a type only the home sends is a sum over its queue's slots, one that
agents send is a card per slot of the agents whose queue holds it, and the ground try
instantiates the hypotheses about the networks at the cards' witnesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.smt import param, tables
from coherence.smt.param import obligations, prove_all
from coherence.spec.load import load_spec, load_spec_text

ROOT = Path(__file__).resolve().parent.parent
COUNT = ROOT / "tests" / "specs" / "count"

PAIRS = """param agents = 2;
network net: unordered, capacity = 2;
message Req on net;
event Go;
home machine Dir { stable state I; init I; on Req in I { } }
cache machine Cache { stable state I; init I; on Go in I { send Req to home; } }
invariant few: count(m: Req :: true) <= 2;
"""


def _init_query(goal: str) -> param.Query:
    _enc, _cur, queries = obligations(load_spec(COUNT / "message_count_aux.coh"))
    return next(q for q in queries if q.what == "init" and q.goal == goal)


def test_the_cards_witnesses_are_needed_to_count_an_empty_network(monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    """At init no agent has a request in flight, but only the networks' quantified
    hypotheses say so: the count is 0 only with them instantiated at the card's witnesses.
    The card is over the requests' destinations, which the encoding quantifies for a type
    not every send of which names the home; ``Req``'s do, so that is switched off here."""
    q = _init_query("invariant:one_request")
    assert q.counts and q.reads_counts
    assert param.Grounded(q).proves(q.assertions[-1])
    monkeypatch.setattr(tables, "messages_to_home", lambda *_a: set())
    q = _init_query("invariant:one_request")
    assert param.Grounded(q).proves(q.assertions[-1])
    monkeypatch.setattr(param.Grounded, "_with_witnesses", lambda *_a: False)
    assert not param.Grounded(q).proves(q.assertions[-1])


def test_a_request_counted_at_its_source_needs_no_card(monkeypatch: pytest.MonkeyPatch) -> None:
    """NOTE(home-sources): with the home as the requests' destination, ``count(m: Req ::
    m.src == i)`` is one place, no card, and no witness is needed."""
    monkeypatch.setattr(param.Grounded, "_with_witnesses", lambda *_a: False)
    q = _init_query("invariant:one_request")
    assert param.Grounded(q).proves(q.assertions[-1])


def test_a_spec_that_counts_only_agents_is_not_flagged() -> None:
    _enc, _cur, queries = obligations(load_spec(COUNT / "sharer_set_and_counter.coh"))
    assert queries and all(q.counts and not q.reads_counts for q in queries)


def test_a_count_over_pairs_of_agents_is_a_located_error(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    spec = tmp_path / "pairs.coh"
    spec.write_text(PAIRS)
    assert main(["prove", str(spec), "--agents", "any"]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:7:16: error: count(m: Req :: ...) counts over pairs of agents" in err


def test_a_count_that_names_its_source_is_encoded() -> None:
    model = load_spec_text(PAIRS.replace("count(m: Req :: true) <= 2",
                                         "forall i: agent :: count(m: Req :: m.src == i) <= 2"),
                           "pairs.coh")
    _enc, _cur, queries = obligations(model)
    assert any(q.goal == "invariant:few" for q in queries)


def test_a_false_count_is_refuted_with_a_concrete_counterexample(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["prove", str(COUNT / "message_count_bad.coh"), "--agents", "any", "--jobs", "1",
                 "--rlimit", str(150_000_000), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["verdict"] == "fails", out
    assert "one_ping" in json.dumps(out)


@pytest.mark.slow  # about 90 s on the 2-core machine
def test_message_count_aux_is_proved_for_every_n() -> None:
    result = prove_all(load_spec(COUNT / "message_count_aux.coh"))
    assert result.verdict == "holds", result.reason
    assert "invariant:owed" in result.proved and "invariant:at_most_two" in result.proved


@pytest.mark.slow
def test_without_its_aux_line_the_count_is_not_proved() -> None:
    text = (COUNT / "message_count_aux.coh").read_text()
    model = load_spec_text(text.replace("invariant aux idle_asks_nothing", "// "),
                           "message_count_aux.coh")
    result = prove_all(model, timeout=300)
    assert result.verdict != "holds"


def test_a_hierarchical_proof_refuses_a_message_count(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "tests" / "specs" / "hierarchy" / "one_gpu_flush.coh").read_text()
    text += "invariant aux few_gets: count(m: Get :: true) <= 8;\n"
    spec = tmp_path / "flush.coh"
    spec.write_text(text)
    line = text.count("\n")
    assert main(["prove", str(spec), "--agents", "any"]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:{line}:" in err and "hierarchical" in err, err
