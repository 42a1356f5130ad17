"""``coherence prove --agents any --infer``: mined candidates hold where they were mined, the
inferred invariants prove the specs without their hand-written ones and hold in the checker,
refuted specs and mutants are never proved, and ``--write`` never clobbers the user's text."""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import MUTEX, PROOF_RLIMIT, ROOT, SPECS, mutants, well_formed

from coherence.engines import check
from coherence.smt.infer import InferOptions, appended_text, infer
from coherence.smt.infer_mine import mine
from coherence.spec.load import extend, load_spec, load_spec_text
from coherence.spec.select import drop_properties

NOAUX = ROOT / "tests" / "specs" / "infer"
# Z3's deterministic budget per Houdini check (never a wall clock)
OPTS = dict(rlimit=20_000_000, final_rlimit=PROOF_RLIMIT)


def _model(path: Path) -> object:
    m = load_spec(path)
    return drop_properties(m, [p.name for p in m.properties])


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coherence.cli", *args], cwd=cwd,
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def _holds_at(model: object, lines: list[str], sizes: tuple[int, ...]) -> None:
    from coherence.spec.load import rebind
    with_lines = extend(model, appended_text(lines))  # type: ignore[arg-type]
    for n in sizes:
        result = check(rebind(with_lines, {"agents": n}))
        assert result.verdict == "holds", (n, result.failures[:1])


def test_mined_candidates_hold_in_the_checker_where_they_were_mined() -> None:
    model = _model(NOAUX / "broadcast_invalidate_acked.coh")
    cands, stats, _tpl = mine(model, sizes=(2,), max_literals={"global": 1, "agent": 2,
                                                               "pair": 2, "msg": 1})
    assert stats.sizes[0][2] and len(cands) == stats.kept > 20
    assert stats.generated > len(cands)
    # pasted into the spec, every candidate holds at 2 agents (they were mined there) ...
    _holds_at(model, [f"invariant aux c{k}: {c.text};" for k, c in enumerate(cands)], (2,))
    # ... and each pair clause is listed once, not once per order of i and j
    pairs = [c.text for c in cands if c.kind == "pair"]
    assert len(pairs) == len(set(pairs))


def _infer_in_fresh_process(path: Path) -> tuple[str, int, list[str], int, int]:
    model = load_spec(path)
    result = infer(model, InferOptions(**OPTS))
    return (result.proof.verdict, result.proof.exit_code, result.lines,
            result.stats["candidates"], result.stats["support"])


def test_mutex_without_aux_is_proved_with_inferred_invariants(tmp_path: Path) -> None:
    path = tmp_path / "mutex.coh"
    path.write_text(MUTEX)
    # NOTE(z3-context): in a fresh interpreter, as `coherence prove` runs it. In a worker that
    # ran other Z3 tests first the main context's term ids differ, Houdini's models and cores
    # with them, and the support found has been twice as large (12 lines) under xdist.
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        verdict, code, lines, candidates, support = pool.submit(
            _infer_in_fresh_process, path).result(timeout=600)
    assert verdict == "holds" and code == 0
    assert 0 < len(lines) <= 6
    assert candidates >= support == len(lines)
    _holds_at(load_spec(path), lines, (2, 3, 4))


@pytest.mark.slow
def test_mutants_of_the_mutex_are_never_proved_unless_they_hold() -> None:
    for text in well_formed(mutants(MUTEX)):
        model = load_spec_text(text, "mutant.coh")
        result = infer(model, InferOptions(**OPTS))
        if result.proof.verdict == "holds":  # then it holds at fixed sizes too
            for n in (2, 3):
                assert check(load_spec_text(text, "m.coh", {"agents": n})).verdict == "holds"


def test_refuted_spec_stays_refuted() -> None:
    model = _model(SPECS / "broadcast_invalidate.coh")
    result = infer(model, InferOptions(**OPTS))
    assert result.proof.verdict == "fails" and result.proof.exit_code == 1


def test_cli_infer_needs_agents_any_and_write_needs_infer(tmp_path: Path) -> None:
    path = tmp_path / "mutex.coh"
    path.write_text(MUTEX)
    r = _cli("prove", str(path), "--agents", "2", "--infer")
    assert r.returncode == 2 and "--infer needs --agents any" in r.stderr
    r = _cli("prove", str(path), "--agents", "any", "--write")
    assert r.returncode == 2 and "--write needs --infer" in r.stderr


COUNTING = """
param agents = 3;
home machine H { stable state R; init R; var acks: int[0..agents] = 0;
  rule Start when acks == 0 { acks := agents - 1; }
}
cache machine C { stable state I; init I; }
invariant fine: H.acks >= 0;
"""


def test_cli_unsupported_spec_is_a_located_error_before_exploring(tmp_path: Path) -> None:
    path = tmp_path / "counting.coh"
    path.write_text(COUNTING)
    r = _cli("prove", str(path), "--agents", "any", "--infer")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{path}:4:" in r.stderr and "number of agents" in r.stderr


@pytest.mark.slow
def test_cli_write_appends_after_a_marker_and_the_result_is_proved(tmp_path: Path) -> None:
    path = tmp_path / "mutex.coh"
    path.write_text(MUTEX)
    r = _cli("prove", str(path), "--agents", "any", "--infer", "--write", "--json",
             "--rlimit", str(PROOF_RLIMIT))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    lines = doc["inferred"]["invariants"]
    assert lines and doc["inferred"]["written_to"] == str(path)
    text = path.read_text()
    assert text.startswith(MUTEX)  # the user's text is untouched
    assert text[len(MUTEX):] == appended_text(lines)
    r = _cli("prove", str(path), "--agents", "any", "--rlimit", str(PROOF_RLIMIT))
    assert r.returncode == 0, r.stdout


def test_write_appends_the_block_and_keeps_the_users_text(tmp_path: Path) -> None:
    from coherence.commands.prove_infer import _append
    path = tmp_path / "mutex.coh"
    path.write_text(MUTEX.rstrip("\n"))  # no newline at the end: one is added first
    model = load_spec(path)
    lines = ["invariant aux inferred_1: forall a: agent :: C[a].state != W || true;"]
    assert _append(str(path), model, appended_text(lines)) == str(path)
    assert path.read_text() == MUTEX.rstrip("\n") + "\n" + appended_text(lines)
    assert "inferred_1" in {i.name for i in load_spec(path).invariants}


def test_write_refuses_a_spec_changed_since_it_was_read(tmp_path: Path) -> None:
    from coherence.commands.prove_infer import _append
    from coherence.errors import SpecError
    path = tmp_path / "mutex.coh"
    path.write_text(MUTEX)
    model = load_spec(path)
    path.write_text(MUTEX + "// edited meanwhile\n")
    with pytest.raises(SpecError, match="changed since it was read"):
        _append(str(path), model, appended_text(["invariant aux x: true;"]))
    assert path.read_text() == MUTEX + "// edited meanwhile\n"


@pytest.mark.slow
@pytest.mark.xfail(reason="issue 17 is not done: eager Houdini needs about one query per "
                          "candidate it drops (docs/prove.md, --infer)", strict=False)
@pytest.mark.parametrize("name", ["german", "broadcast_invalidate_acked"])
def test_bundled_protocols_without_aux_are_proved_for_every_n(name: str) -> None:
    model = _model(NOAUX / f"{name}.coh")
    assert not any(i.aux for i in model.invariants)
    result = infer(model, InferOptions(**OPTS))
    assert result.proof.verdict == "holds", (result.missing, result.proof.reason)
    _holds_at(model, result.lines, (2, 3, 4))


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted([*(SPECS / "mutants").glob("german_*.coh"),
                                            *(SPECS / "mutants").glob("acked_*.coh")]),
                         ids=lambda p: p.stem)
def test_german_and_acked_mutants_are_never_proved(mutant: Path) -> None:
    model = _model(mutant)
    result = infer(model, InferOptions(**OPTS))
    assert result.proof.verdict != "holds"
