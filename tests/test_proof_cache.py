"""NOTE(proof-cache): a proof for every N records the formulas of the obligations it settled,
and a later run skips each obligation whose formula is recorded; a mutant gets only the
records of the formulas it shares with its spec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import AUX, MUTEX, PROOF_RLIMIT, ROOT

from coherence.smt import forked, param
from coherence.smt.formula_digest import digest
from coherence.smt.param import obligations, prove_all
from coherence.smt.proof_cache import ProofCache
from coherence.spec.load import load_spec_text

PROVED = MUTEX + AUX  # holds for every N with its two aux invariants


def _model(tmp_path: Path, text: str = PROVED, name: str = "mutex.coh"):  # type: ignore[no-untyped-def]
    return load_spec_text(text, str(tmp_path / name))


def _records(path: Path) -> list[dict]:
    """The obligations' records (not the sets of hypotheses they name)."""
    return [r for r in _lines(path) if "goal" in r]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _asked(model) -> list:  # type: ignore[no-untyped-def]
    """The obligations a proof asks: not its frames (NOTE(frame-unchanged)), which are
    settled without Z3 or the cache."""
    return [q for q in obligations(model)[2] if not q.unchanged]


def test_a_second_run_takes_every_obligation_from_the_first(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    model = _model(tmp_path)
    first = prove_all(model, rlimit=PROOF_RLIMIT, cache=str(cache))
    assert first.verdict == "holds" and first.cached == 0
    records = _records(cache)
    assert len(first.settled) == len(obligations(model)[2])
    assert 0 < len(records) == len(_asked(model)) < len(first.settled)
    assert {r["goal"] for r in records} == {q.goal for q in _asked(model)}
    assert {"invariant:mutex", "invariant:owner", "error:error"} <= {r["goal"] for r in records}
    second = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert second.verdict == "holds"
    assert second.cached == len(records)
    assert sorted(second.settled) == sorted(first.settled)
    assert len(_records(cache)) == len(records)  # nothing recorded twice


def _digests(model) -> set[str]:  # type: ignore[no-untyped-def]
    return {digest(*q.assertions) for q in obligations(model)[2]}


def test_records_of_the_spec_settle_only_the_mutants_identical_obligations(
        tmp_path: Path) -> None:
    """A mutant shares the formulas of the actions its mutation leaves alone; those, and only
    those, come from the spec's records, and it fails as it does without a cache."""
    cache = tmp_path / "proof.cache"
    assert prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache)).verdict == "holds"
    mutant = PROVED.replace("in Free when C[a].state == W {", "in Free {")
    assert mutant != PROVED
    alone = prove_all(_model(tmp_path, mutant, "alone.coh"), rlimit=PROOF_RLIMIT)
    result = prove_all(_model(tmp_path, mutant), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert alone.verdict == result.verdict == "fails"
    assert [f.name for f in alone.failures] == [f.name for f in result.failures]
    assert alone.ctis == result.ctis
    shared = _digests(_model(tmp_path, mutant)) & _digests(_model(tmp_path))
    mutated = {digest(*q.assertions) for q in obligations(_model(tmp_path, mutant))[2]
               if "Take" in q.what}
    assert mutated and not mutated & shared  # the mutated rule's formulas are all new
    assert 0 < result.cached <= len(shared)


def test_a_change_of_tries_keeps_the_records(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The key is the formula, not the code: other budgets for the tries find every record."""
    cache = tmp_path / "proof.cache"
    prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    monkeypatch.setattr(param, "FRESH_FIRST_WALL_SECONDS", 7.0)
    monkeypatch.setattr(param, "QUICK_WALL_SECONDS", 3.0)
    again = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert again.cached == len(_asked(_model(tmp_path))) == len(_records(cache))


def test_records_of_an_earlier_format_are_counted_not_used(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    cache.write_text(json.dumps({"v": 1, "key": "ab" * 32, "goal": "g", "what": "init"}) + "\n")
    result = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert result.verdict == "holds" and result.cached == 0
    assert f"{cache}: 1 record(s) of a format other than 3 (ignored)" in result.notes


def test_a_line_torn_by_a_kill_is_ended_and_reported(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    whole = cache.read_text().splitlines()
    cache.write_text("\n".join(whole[:3]) + "\n" + whole[3][:40])  # killed mid-write
    again = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert again.verdict == "holds"
    # the three whole lines: the initial state's (empty) set of hypotheses and two records
    assert again.cached == sum('"goal"' in line for line in whole[:3]) == 2
    assert f"{cache}:4: not a proof-cache record (ignored)" in again.notes
    lines = cache.read_text().splitlines()
    assert lines[3] == whole[3][:40]  # the user's bytes stay; the next record starts anew
    assert len(_records_skipping(cache)) == len(whole)


def _records_skipping(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def test_a_record_written_by_another_run_is_seen_while_this_one_runs(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    model = _model(tmp_path)
    reader = ProofCache(str(cache))
    writer = ProofCache(str(cache))
    queries = obligations(model)[2]
    key = reader.key(queries[-1].assertions)
    assert writer.key(queries[-1].assertions) == key
    assert not reader.has(key)
    writer.add(key, queries[-1].goal, queries[-1].what, 0.5, model.file)
    assert reader.has(key)
    assert not reader.has(reader.key(queries[0].assertions))


@pytest.mark.skipif(not forked.can_fork(), reason="fork is used on Linux only")
def test_forked_workers_record_their_shares(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    two = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, jobs=2, cache=str(cache))
    assert two.verdict == "holds" and two.jobs == 2
    asked = len(_asked(_model(tmp_path)))
    assert len({(r["anchor"], r["goal_digest"]) for r in _records(cache)}) == asked
    again = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert again.cached == asked


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coherence.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_cli_refuses_a_cache_it_cannot_use(tmp_path: Path) -> None:
    spec = tmp_path / "mutex.coh"
    spec.write_text(PROVED)
    fixed = _cli("prove", str(spec), "--agents", "3", "--induction", "1",
                 "--proof-cache", str(tmp_path / "c"), cwd=ROOT)
    assert fixed.returncode == 2
    assert "--proof-cache needs --agents any" in fixed.stderr
    assert "Traceback" not in fixed.stderr
    folder = _cli("prove", str(spec), "--agents", "any", "--proof-cache", str(tmp_path),
                  cwd=ROOT)
    assert folder.returncode == 2
    assert f"{tmp_path}: is a directory, not a proof-cache file" in folder.stderr
    assert "Traceback" not in folder.stderr


def test_the_cli_reports_what_the_cache_settled(tmp_path: Path) -> None:
    spec = tmp_path / "mutex.coh"
    spec.write_text(PROVED)
    cache = tmp_path / "proof.cache"
    args = ("prove", str(spec), "--agents", "any", "--proof-cache", str(cache), "--json")
    first = json.loads(_cli(*args, cwd=ROOT).stdout)
    second = _cli(*args[:-1], cwd=ROOT)
    assert first["verdict"] == "holds" and first["cached"] == 0
    assert second.returncode == 0
    assert (f"{len(_records(cache))} proof obligation(s) settled by earlier runs "
            "(--proof-cache)") in second.stdout


# ---------------------------------------------------------------- NOTE(proof-cache-subsets)

EXTRA = """
invariant aux taken_owner: Lock.state == Taken -> !isundefined(Lock.owner);
"""


def test_records_of_fewer_hypotheses_settle_the_same_goals_with_more(tmp_path: Path) -> None:
    """A spec whose aux lines grew keeps every record of the smaller set: its obligations are
    the old ones with one hypothesis more. Only the new line's own goals are asked."""
    cache = tmp_path / "proof.cache"
    first = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert first.verdict == "holds"
    records = _lines(cache)
    assert {r["v"] for r in records} == {4}
    sets = [r for r in records if "set" in r]
    # one set of hypotheses per action (the initial state's is empty), each written once
    assert len({r["set"] for r in sets}) == len(sets)
    grown = _model(tmp_path, PROVED + EXTRA, "grown.coh")
    again = prove_all(grown, rlimit=PROOF_RLIMIT, cache=str(cache))
    assert again.verdict == "holds"
    assert again.cached == len(_asked(_model(tmp_path)))
    new_goals = {r["goal"] for r in _lines(cache)[len(records):] if "goal" in r}
    assert new_goals == {"invariant:taken_owner"}


def test_records_of_more_hypotheses_do_not_settle_fewer(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    grown = _model(tmp_path, PROVED + EXTRA, "grown.coh")
    assert prove_all(grown, rlimit=PROOF_RLIMIT, cache=str(cache)).verdict == "holds"
    smaller = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert smaller.verdict == "holds"
    # only the initial state's obligations (no hypotheses) are the same formulas
    inits = [q for q in obligations(_model(tmp_path))[2] if q.what == "init"]
    assert smaller.cached == len(inits) > 0


def test_a_mutant_with_more_hypotheses_gets_no_record_of_its_mutated_action(
        tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    assert prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache)).verdict == "holds"
    mutant = (PROVED + EXTRA).replace("in Free when C[a].state == W {", "in Free {")
    alone = prove_all(_model(tmp_path, mutant, "alone.coh"), rlimit=PROOF_RLIMIT)
    result = prove_all(_model(tmp_path, mutant, "m.coh"), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert alone.verdict == result.verdict == "fails"
    assert [f.name for f in alone.failures] == [f.name for f in result.failures]


def test_format_3_records_are_upgraded_when_met(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "proof.cache"
    with monkeypatch.context() as m:  # a cache written before format 4: exact digests
        m.setattr(ProofCache, "entry", lambda self, assertions, anchor: None)
        first = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert {r["v"] for r in _records(cache)} == {3}
    asked = len(_asked(_model(tmp_path)))
    assert first.verdict == "holds" and len(_records(cache)) == asked
    second = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert second.cached == asked
    upgraded = [r for r in _records(cache) if r["v"] == 4]
    assert len(upgraded) == asked
    grown = prove_all(_model(tmp_path, PROVED + EXTRA, "grown.coh"), rlimit=PROOF_RLIMIT,
                      cache=str(cache))
    assert grown.verdict == "holds" and grown.cached == asked


def test_a_hypothesis_naming_a_fresh_symbol_of_its_own_has_no_subset_digest() -> None:
    import z3

    from coherence.smt.formula_digest import Digest
    # terms held: the digest keys nodes by Z3 ids, which a freed term gives back
    x, y, x2 = z3.FreshInt("x"), z3.FreshInt("y"), z3.FreshInt("x")
    held = [x > 0, x < 5, y < 5, x2 > 0, x2 < 5]
    anchor = Digest().add(held[0])
    assert anchor.relative(held[1]) is not None
    assert anchor.relative(held[2]) is None  # y would be renamed alike in two hypotheses
    # the same formula over the anchor's symbols reads the same from another process's names
    assert Digest().add(held[3]).relative(held[4]) == anchor.relative(held[1])
