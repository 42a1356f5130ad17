"""NOTE(proof-cache): a proof for every N records the obligations it settled, and a later run
of the same spec and code skips them; a record never settles another spec's obligation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import AUX, MUTEX, PROOF_RLIMIT, ROOT

from coherence.smt import forked
from coherence.smt.param import obligations, prove_all
from coherence.smt.proof_cache import ProofCache, fingerprint
from coherence.spec.load import load_spec_text

PROVED = MUTEX + AUX  # holds for every N with its two aux invariants


def _model(tmp_path: Path, text: str = PROVED, name: str = "mutex.coh"):  # type: ignore[no-untyped-def]
    return load_spec_text(text, str(tmp_path / name))


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_second_run_takes_every_obligation_from_the_first(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    model = _model(tmp_path)
    first = prove_all(model, rlimit=PROOF_RLIMIT, cache=str(cache))
    assert first.verdict == "holds" and first.cached == 0
    records = _records(cache)
    assert len(records) == len(first.settled) == len(obligations(model)[2])
    assert {r["goal"] for r in records} == {q.goal for q in obligations(model)[2]}
    assert {"invariant:mutex", "invariant:owner", "error:error"} <= {r["goal"] for r in records}
    second = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert second.verdict == "holds"
    assert second.cached == len(records)
    assert sorted(second.settled) == sorted(first.settled)
    assert len(_records(cache)) == len(records)  # nothing recorded twice


def test_records_of_the_spec_never_settle_a_mutant(tmp_path: Path) -> None:
    """The mutant's obligations have the names of the spec's; its IR differs, so no key
    matches and it fails as it does without a cache."""
    cache = tmp_path / "proof.cache"
    assert prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache)).verdict == "holds"
    mutant = PROVED.replace("in Free when C[a].state == W {", "in Free {")
    assert mutant != PROVED
    result = prove_all(_model(tmp_path, mutant), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert result.cached == 0
    assert result.verdict != "holds"


def test_the_fingerprint_follows_the_ir_not_the_comments(tmp_path: Path) -> None:
    base = fingerprint(_model(tmp_path))
    commented = PROVED.replace("event Acquire;", "// acquire the lock\nevent Acquire;")
    assert fingerprint(_model(tmp_path, commented)) == base
    four = PROVED.replace("param agents = 3;", "param agents = 4;")
    assert fingerprint(_model(tmp_path, four)) != base
    assert fingerprint(_model(tmp_path, MUTEX)) != base  # without the aux lines


def test_a_line_torn_by_a_kill_is_ended_and_reported(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    whole = cache.read_text().splitlines()
    cache.write_text("\n".join(whole[:3]) + "\n" + whole[3][:40])  # killed mid-write
    again = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert again.verdict == "holds"
    assert again.cached == 3
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
    reader = ProofCache(str(cache), fingerprint(model))
    writer = ProofCache(str(cache), fingerprint(model))
    ident = ("invariant:mutex", 0, -1)
    assert not reader.has("invariant:mutex", "action X", ident)
    writer.add("invariant:mutex", "action X", ident, 0.5, model.file)
    assert reader.has("invariant:mutex", "action X", ident)
    assert not reader.has("invariant:mutex", "action Y", ident)


@pytest.mark.skipif(not forked.can_fork(), reason="fork is used on Linux only")
def test_forked_workers_record_their_shares(tmp_path: Path) -> None:
    cache = tmp_path / "proof.cache"
    two = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, jobs=2, cache=str(cache))
    assert two.verdict == "holds" and two.jobs == 2
    assert len({r["key"] for r in _records(cache)}) == len(two.settled)
    again = prove_all(_model(tmp_path), rlimit=PROOF_RLIMIT, cache=str(cache))
    assert again.cached == len(two.settled)


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
