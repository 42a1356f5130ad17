"""Diagrams: DOT golden files, `dot` accepts everything we write, a real PNG, diagrams/ is
current, the state graph agrees with the checker, and `coherence diagram` end to end.

Regenerate the golden files after a deliberate change with COHERENCE_UPDATE_GOLDEN=1 and
review the diff; regenerate diagrams/ with `python -m coherence.diagrams.bundled`.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import struct
import subprocess
from importlib.resources import files as resource_files
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coherence.cli import main
from coherence.diagrams import bundled, fsm, msc, states
from coherence.diagrams.pretty import Printer, paths
from coherence.diagrams.render import write
from coherence.engines import check
from coherence.ir import Model
from coherence.results import CheckOptions
from coherence.semantics import Semantics
from coherence.spec.load import load_spec_text
from coherence.trace import replay_actions

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "diagrams"
TINY = GOLDEN / "tiny.coh"
SEED = GOLDEN / "seed_broadcast.coh"
BI = str(ROOT / "specs" / "broadcast_invalidate.coh")
ACKED = str(ROOT / "specs" / "broadcast_invalidate_acked.coh")
MSI_DIR = str(ROOT / "specs" / "msi_directory.coh")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot missing")


def rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def load(p: Path, params: dict[str, int] | None = None) -> Model:
    """The spec at ``p``, named by its path in the repository (golden files show that name)
    wherever pytest runs from."""
    return load_spec_text(p.read_text(encoding="utf-8"), rel(p), params)


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("COHERENCE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


# ---------------------------------------------------------------- golden DOT


def test_fsm_golden() -> None:
    model = load(TINY)
    for stem, g in fsm.spec_graphs(model):
        golden(f"{stem}.dot", g.source)


def test_msc_golden() -> None:
    model = load(SEED, {"agents": 2})
    result = check(model, CheckOptions())
    assert [f.name for f in result.failures] == ["data_value", "stale_copy_is_doomed"]
    golden("seed_broadcast.msc.stale_copy_is_doomed.dot",
           msc.chart(model, msc.as_failure(result.failures[1]), "check").source)


def test_states_golden() -> None:
    model = load(SEED, {"agents": 2, "capacity": 1})
    golden("seed_broadcast.states.dot", states.graph(model, states.explore(model)).source)


# ---------------------------------------------------------------- what the pictures say


def test_fsm_folds_tests_of_the_source_state() -> None:
    """`if state == M {...} else { goto IM }` in `on Store in I, M`: I goes to IM only."""
    model = load(TINY)
    source = fsm.machine_graph(model, model.machine("C")).source
    edges = re.findall(r"\ts_(\w+) -> s_(\w+) \[label=<(.*)> arrowsize", source)
    store = {(a, b) for a, b, label in edges if "Store(v)" in label}
    assert store == {("M", "M"), ("I", "IM")}
    m_m = next(label for a, b, label in edges if (a, b) == ("M", "M"))
    assert "perform store(v)" in m_m
    i_im = next(label for a, b, label in edges if (a, b) == ("I", "IM"))
    assert "perform store" not in i_im


def test_fsm_splits_branches_to_different_states() -> None:
    model = load(TINY)
    dir_ = model.machine("Dir")
    ack = next(t for t in dir_.transitions if t.name == "Ack")
    ways = paths(Printer(model, dir_, "Wait"), ack.body)
    assert [(dst, acts[-1]) for acts, dst in ways] == [
        (None, "sharers.remove(msg.src)"), ("Ready", "when size(sharers) <= 1")]
    # a constant condition (agents == 1 with agents = 2) is folded away
    get = next(t for t in dir_.transitions if t.name == "Get" and not t.stall)
    assert [dst for _, dst in paths(Printer(model, dir_, "Ready"), get.body)] == ["Wait"]


@pytest.mark.parametrize("spec", sorted(p.name for p in (ROOT / "specs").glob("*.coh")))
def test_fsm_shows_every_transition(spec: str) -> None:
    """Every (non-stall transition, source state) is on an edge leaving that state; every
    stall is written inside its state."""
    model = load(ROOT / "specs" / spec)
    for m in model.machines:
        source = fsm.machine_graph(model, m).source
        for t in m.transitions:
            for s in t.states:
                if t.stall:
                    node = re.search(rf"\ts_{s} \[label=<(.*)>", source)
                    assert node and "stall:" in node.group(1) and t.name in node.group(1)
                    continue
                leaving = re.findall(rf"\ts_{s} -> s_\w+ \[label=<(.*)> arrowsize", source)
                trigger = t.name if t.kind == "event" else (
                    f"?{t.name}" if t.kind == "message" else f"rule {t.name}")
                assert any(f">{trigger}" in x for x in leaving), (m.name, t.name, s)


def _random_trace(model: object, seed: int, length: int) -> list:
    sem = Semantics(model)  # type: ignore[arg-type]
    rng = random.Random(seed)
    state, actions = sem.initial_states()[0], []
    for _ in range(length):
        outs = [o for o in sem.enabled(state)[0] if o.state is not None]
        if not outs:
            break
        out = rng.choice(outs)
        actions.append(out.action)
        state = out.state
    return replay_actions(sem, actions)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(0, 10))
def test_msc_draws_every_message_once(seed: int, length: int) -> None:
    """On random walks: one lane per machine, one arrow per message sent (network or bus),
    each arrival at the row of the step that received it."""
    model = load(SEED, {"agents": 2})
    trace = _random_trace(model, seed, length)
    failure = msc.TraceFailure("walk", "test", "random walk", trace)
    source = msc.chart(model, failure, "test").source
    bus = msc.bus_messages(model, trace)
    sends = sum(len(s.sends) for s in trace) + sum(len(b) for b in bus)
    assert len(re.findall(r"\tm\d+ \[label=", source)) == sends
    assert len(re.findall(r"\tn\d+_0 \[label=", source)) == 3  # GPU[0], Home, GPU[1]
    for row, step in enumerate(trace, start=1):
        if step.received is not None:
            dst = msc.lanes(model).index(step.received.dst)
            assert re.search(rf"-> n{dst}_{row} \[color=", source), (row, step.event)


# ---------------------------------------------------------------- state graph vs checker


@pytest.mark.parametrize(("spec", "params"), [  # paths in the repository
    ("specs/broadcast_invalidate.coh", {"agents": 2, "capacity": 1}),
    ("tests/golden/diagrams/tiny.coh", {}),  # a deadlock
    ("tests/golden/diagrams/undefined_read.coh", {}),  # a model error
    ("specs/broadcast_invalidate_acked.coh", {"agents": 2, "values": 1}),
    # not symmetric (tests/test_symmetry_fallback.py): the audit turns the reduction off
    ("specs/mutants/msi_snoop_getm_not_broadcast.coh", {"agents": 3}),
])
@pytest.mark.parametrize("symmetry", [True, False])
def test_state_graph_counts_match_the_checker(spec: str, params: dict, symmetry: bool) -> None:
    model = states.without_monitors(load(ROOT / spec, params))
    sg = states.explore(model, 1000, symmetry)
    result = check(model, CheckOptions(symmetry=symmetry))
    assert len(sg.states) == result.states
    if result.failures:
        assert sg.failure_steps == min(f.length for f in result.failures)
    else:
        assert sg.path == [] and not sg.bad


def test_state_graph_too_large() -> None:
    with pytest.raises(states.TooLarge):
        states.explore(load(ROOT / "specs" / "broadcast_invalidate.coh", {"agents": 2}), 50)


# ---------------------------------------------------------------- dot, PNG, diagrams/


def _generated(tmp: Path) -> list[Path]:
    bundled.generate(tmp, ROOT / "specs", ("dot",))
    model = load(TINY)
    for stem, g in fsm.spec_graphs(model):
        write(g, tmp, stem, ("dot",))
    return sorted(tmp.glob("*.dot"))


@needs_dot
def test_dot_accepts_every_generated_file(tmp_path: Path) -> None:
    files = _generated(tmp_path)
    assert len(files) >= 10
    for f in files:
        proc = subprocess.run(["dot", "-Tsvg", "-o", os.devnull, str(f)], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0 and not proc.stderr.strip(), (f.name, proc.stderr)


@needs_dot
def test_png_is_a_real_image(tmp_path: Path) -> None:
    model = load(ROOT / "specs" / "msi_directory.coh")
    stem, g = fsm.spec_graphs(model)[1]
    files = write(g, tmp_path, stem, ("dot", "png"))
    data = Path(files[1]).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert 600 <= width <= 6000 and 300 <= height <= 4000, (width, height)
    assert len(data) > 20_000


def test_committed_diagrams_are_current(tmp_path: Path) -> None:
    problems = bundled.stale(ROOT / "diagrams", ROOT / "specs", tmp_path)
    assert not problems, ("diagrams/ is stale; run `python -m coherence.diagrams.bundled`: "
                          + "; ".join(problems))


# ---------------------------------------------------------------- the verb


SCHEMA = json.loads(resource_files("coherence.schemas").joinpath("diagram.json").read_text())


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    rc = main(["diagram", *argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == rc
    return rc, doc


def test_verb_fsm_dot_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json([MSI_DIR, "--kind", "fsm", "--format", "dot",
                        "--out", str(tmp_path)], capsys)
    assert rc == 0 and doc["exit_code"] == 0
    assert sorted(Path(f).name for f in doc["files"]) == [
        "msi_directory.fsm.Cache.dot", "msi_directory.fsm.Dir.dot"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        Path(f).name for f in doc["files"])


def test_verb_states_too_large(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json([BI, "--kind", "states", "-n", "2",
                        "--max-nodes", "40", "--out", str(tmp_path)], capsys)
    assert rc == 3 and doc["verdict"] == "too-large" and doc["files"] == []
    assert "more than 40 reachable states" in doc["summary"]
    assert not list(tmp_path.iterdir())
    rc, doc = run_json([BI, "--kind", "states", "-n", "2",
                        "--out", str(tmp_path)], capsys)
    assert rc == 3 and doc["max_nodes"] == 60  # the default


def test_verb_states_small(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json([BI, "--kind", "states", "-n", "2",
                        "-p", "capacity=1", "--format", "dot", "--out", str(tmp_path)], capsys)
    assert rc == 0 and doc["states"] == 26 and doc["failure_path"] == 4


@needs_dot
def test_saved_trace_draws_what_check_draws(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "t.json"
    live, again = tmp_path / "live", tmp_path / "again"
    rc = main(["check", BI, "-n", "2", "--skip", "coherent",
               "--trace-out", str(saved), "--diagram", str(live), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 and len(doc["diagrams"]) == 6
    rc, doc = run_json([BI, "--kind", "trace", "--trace",
                        str(saved), "--format", "dot", "--out", str(again)], capsys)
    assert rc == 0 and doc["failures"] == ["data_value", "stale_copy_is_doomed"]
    for f in sorted(again.glob("*.dot")):
        assert f.read_text() == (live / f.name).read_text()


def test_trace_kind_without_file_checks(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json([ACKED, "--kind", "trace", "-n", "2",
                        "--skip", "coherent", "--out", str(tmp_path)], capsys)
    assert rc == 0 and doc["failures"] == [] and doc["files"] == []
    assert doc["verdict"] == "nothing-to-draw"


@pytest.mark.parametrize(("content", "expected"), [
    ("not json", "not valid JSON"),
    ('{"format": "other"}', "not a saved trace file"),
    ('{"format": "coherence-traces/1", "traces": [{"property": "p"}]}', "not a valid trace"),
    ('{"format": "coherence-traces/1", "params": {"agents": 2}, "traces": [{"property": "p", '
     '"kind": "invariant", "message": "m", "steps": [{"index": 1, "actor": "CPU[0]", '
     '"event": "Load", "changes": [], "action": {}}]}]}', "does not fit"),
])
def test_bad_trace_files_are_located_errors(tmp_path: Path, content: str, expected: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    rc = main(["diagram", BI, "--kind", "trace", "--trace",
               str(bad), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and f"{bad}:" in err and expected in err and "Traceback" not in err


def test_a_saved_trace_is_replayed_on_the_spec_before_it_is_drawn(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A counterexample of the seed's literal scheme does not replay on the acknowledged
    scheme, which fixes it: it must not be drawn there as if it failed."""
    saved = tmp_path / "t.json"
    seed = str(ROOT / "specs" / "broadcast_invalidate.coh")
    acked = str(ROOT / "specs" / "broadcast_invalidate_acked.coh")
    assert main(["check", seed, "-n", "2", "--skip", "coherent", "--trace-out",
                 str(saved), "--json"]) == 1
    capsys.readouterr()
    assert main(["diagram", acked, "--kind", "trace", "--trace", str(saved), "--out",
                 str(tmp_path / "o"), "--format", "dot"]) == 2
    err = capsys.readouterr().err
    assert "does not replay on" in err and "is not enabled" in err
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


@pytest.mark.parametrize("argv", [
    [str(ROOT / "specs" / "none.coh"), "--kind", "fsm"],
    [BI, "--kind", "states", "--max-nodes", "0"],
    [BI, "--kind", "fsm", "-p", "agents=x"],
])
def test_bad_input_exits_2(tmp_path: Path, argv: list[str],
                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagram", *argv, "--out", str(tmp_path)]) == 2
    assert "error" in capsys.readouterr().err


def test_msc_reads_change_lines_of_every_shape() -> None:
    names = ["GPU[0]", "Home", "GPU[1]"]
    assert msc._parse_change("GPU[0]: state I → IS_D", names) == ("GPU[0]", None, 0, "I → IS_D")
    assert msc._parse_change("GPU[1].data (line 1): undefined → 0", names) == (
        "GPU[1]", "data", 1, "undefined → 0")
    assert msc._parse_change("Home (line 2): state Ready → Wait", names) == (
        "Home", None, 2, "Ready → Wait")
    assert msc._parse_change("Home sends Inv to GPU[0]", names) is None
    assert msc._parse_change("latest: 0 → 1", names) is None


@pytest.mark.parametrize("producer", [
    ["prove", BI, "-n", "2", "--bmc", "5", "--skip", "coherent"],
    ["fuzz", BI, "-n", "2", "--seed", "0"],
])
def test_traces_saved_by_prove_and_fuzz_draw(tmp_path: Path, producer: list[str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "t.json"
    assert main([*producer, "--trace-out", str(saved), "--json"]) == 1
    capsys.readouterr()
    rc, doc = run_json([BI, "--kind", "trace", "--trace",
                        str(saved), "--format", "dot", "--out", str(tmp_path / "o")], capsys)
    assert rc == 0 and doc["verdict"] == "drawn" and doc["failures"]
    for f in doc["files"]:
        text = Path(f).read_text()
        assert f"from {producer[0]}" in text and "VIOLATED" in text


def test_too_large_says_so_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagram", BI, "--kind", "states", "-n", "2",
                 "--out", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("not drawn:") and "--max-nodes" in err
