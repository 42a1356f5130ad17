"""Progress on stderr (coherence/progress.py): each mode's format, and every long verb writing
a header first, progress, and a summary last (``--progress jsonl --progress-every 0``: a record
at every report, so nothing here depends on timing)."""

from __future__ import annotations

import io
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from coherence.cli import main
from coherence.commands.litmus import DEFAULT_MAX_STATES
from coherence.litmus.model import PROGRESS_STATES
from coherence.progress import (
    Reporter,
    duration,
    eta_seconds,
    fit,
    reporting,
    resolve_mode,
)
from coherence.smt.forked import can_fork

SPECS = Path(__file__).resolve().parent.parent / "specs"
MSI = str(SPECS / "msi_snooping.coh")
SCHEMA = json.loads(files("coherence.schemas").joinpath("progress.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain_console() -> Console:
    return Console(file=io.StringIO(), force_terminal=False, width=80)


def records(text: str) -> list[dict[str, Any]]:
    """The JSON-lines stream, each record checked against coherence/schemas/progress.json."""
    out = [json.loads(line) for line in text.splitlines()]
    for r in out:
        VALIDATOR.validate(r)
    return out


def test_modes() -> None:
    assert [resolve_mode(m, True) for m in ("auto", "always", "plain", "jsonl", "never")] == \
        ["live", "live", "plain", "jsonl", "off"]
    assert [resolve_mode(m, False) for m in ("auto", "always", "plain", "jsonl", "never")] == \
        ["off", "plain", "plain", "jsonl", "off"]
    with pytest.raises(ValueError, match="unknown progress mode"):
        resolve_mode("loud", True)


def test_helpers() -> None:
    assert [duration(s) for s in (0, 59.9, 60, 185, 7440)] == ["0s", "59s", "1m00s", "3m05s",
                                                                "2h04m"]
    assert eta_seconds(10.0, 1, 4) == 30.0  # a quarter done in 10 s: 30 s to go
    assert eta_seconds(10.0, 4, 4) == 0.0
    assert eta_seconds(10.0, 0, 4) is None and eta_seconds(10.0, 3, None) is None
    assert fit("abc", 80) == "abc"
    assert fit("x" * 100, 40) == "x" * 38 + "…" and len(fit("x" * 100, 40)) == 39
    assert fit("a\nb\rc", 80) == "a b c"  # a control character would break the line


def test_bmc_estimate_grows_with_the_depth() -> None:
    from coherence.commands.prove import bmc_eta
    assert bmc_eta([1.0], 3) is None  # one depth: no growth to fit (the linear estimate)
    assert bmc_eta([1.0, 2.0], 0) == 0.0
    assert bmc_eta([1.0, 2.0], 2) == pytest.approx(3.0 + 4.0)  # time ~ depth: 2 s at x=2
    assert bmc_eta([1.0, 1.0], 3) == pytest.approx(3.0)  # flat: as the last depth
    assert bmc_eta([1.0, 4.0], 1) == pytest.approx(9.0)  # time ~ depth^2: 4 s at x=2, 9 at 3
    assert bmc_eta([4.0, 1.0], 2) == pytest.approx(2.0)  # never shrinking below the last


def test_a_verbs_own_estimate_wins() -> None:
    now = [100.0]
    rep = Reporter("coherence prove", "plain", 0.0, plain_console(), io.StringIO(),
                   clock=lambda: now[0])
    rep.update("depth 3", done=4, total=13, eta=50.0)
    now[0] = 110.0
    assert rep.status()["eta_seconds"] == 40.0  # 50 s from then, 10 s ago
    rep.update("depth 4", done=5, total=13)  # none given: the linear estimate
    assert rep.status()["eta_seconds"] == pytest.approx(10.0 / 5 * 8)


def test_plain_lines_without_a_terminal() -> None:
    # --progress always with stderr not a terminal (a CI log): plain lines, header first
    stream = io.StringIO()
    with reporting("coherence check", "always", 0.0, plain_console(), stream) as rep:
        assert rep.kind == "plain"
        rep.header("x.coh", {"agents": 2}, "reference", {"max_states": None,
                                                         "memory_limit": 1 << 30})
        rep.update("states 10", done=1, total=4, states=10)
        rep.finish("holds", 0)
    header, line, done = stream.getvalue().splitlines()
    assert header == ("coherence check x.coh (agents=2); engine reference; bounds: "
                      "max_states none, memory_limit 1,024 MiB")
    assert re.fullmatch(r"\[0s\] coherence check: states 10  1/4  eta \d+s  rss [\d,]+ MiB",
                        line)
    assert re.fullmatch(r"\[0s\] coherence check: finished, holds \(exit 0\); peak rss [\d,]+ MiB",
                        done)


def test_plain_lines_are_rate_limited() -> None:
    stream = io.StringIO()
    now = [0.0]
    rep = Reporter("coherence fuzz", "plain", 10.0, plain_console(), stream, clock=lambda: now[0])
    rep._header_written = True  # no header, no ticker thread: the clock is driven by hand
    for t in (1.0, 2.0, 11.0, 12.0, 25.0):
        now[0] = t
        rep.update(f"at {t:g}")
    rep.update("milestone", force=True)
    lines = [line.split(": ", 1)[1].split("  ")[0] for line in stream.getvalue().splitlines()]
    assert lines == ["at 11", "at 25", "milestone"]


def test_never_and_auto_off_write_nothing() -> None:
    for mode in ("never", "auto"):  # auto: stderr (here a StringIO) is not a terminal
        stream = io.StringIO()
        with reporting("coherence check", mode, 0.0, plain_console(), stream) as rep:
            assert not rep.enabled
            rep.header("x.coh")
            rep.update("states 10")
            rep.finish("holds", 0)
        assert stream.getvalue() == ""


def test_jsonl_header_first_summary_last() -> None:
    stream = io.StringIO()
    with reporting("coherence prove", "jsonl", 0.0, plain_console(), stream) as rep:
        rep.header("x.coh", {"agents": 2}, "z3 bmc", {"depth": 3}, extra_key="kept")
        for k in range(4):
            rep.update(f"depth {k}", done=k + 1, total=4, depth=k)
        rep.note("a remark")
        rep.finish("bounded", 3, depth=3)
    recs = records(stream.getvalue())
    assert [r["type"] for r in recs] == ["header", *["progress"] * 4, "note", "summary"]
    assert recs[0]["bounds"] == {"depth": 3} and recs[0]["extra_key"] == "kept"
    assert [r["depth"] for r in recs[1:5]] == [0, 1, 2, 3]
    assert recs[4]["eta_seconds"] == 0.0 and recs[1]["done"] == 1 and recs[1]["total"] == 4
    assert all(r["rss_bytes"] > 0 for r in recs[1:5])
    assert recs[-1]["verdict"] == "bounded" and recs[-1]["exit_code"] == 3
    assert recs[-1]["peak_rss_bytes"] >= max(r["rss_bytes"] for r in recs[1:5])


def test_jsonl_summary_of_a_run_that_raised() -> None:
    stream = io.StringIO()
    with pytest.raises(RuntimeError), reporting("coherence check", "jsonl", 0.0,
                                                plain_console(), stream) as rep:
        rep.header("x.coh")
        raise RuntimeError("boom")
    recs = records(stream.getvalue())
    assert recs[-1]["type"] == "summary" and recs[-1]["verdict"] == "error"
    assert recs[-1]["message"] == "boom"


def test_live_line_never_exceeds_the_terminal_width() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=40, color_system=None)
    with reporting("coherence check", "auto", 0.0, console) as rep:
        assert rep.kind == "live"
        rep.header("x.coh")
        for n in (1, 10**6, 10**12):
            rep.update(f"states {n:,}  frontier {n:,}  depth 99  rules {n:,}  a long tail",
                       done=n, total=10**13)
        rep.finish("holds", 0)
    shown = ANSI.sub("", out.getvalue())
    pieces = [p for p in re.split(r"[\r\n]", shown) if p.strip()]
    live = [p for p in pieces if "coherence check: states" in p]
    assert live  # the live line was drawn
    assert pieces[0] == "coherence check x.coh"  # the header came first
    assert all(len(p) <= 39 for p in pieces[1:]), pieces


def test_a_cut_line_keeps_its_clock_estimate_and_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the process's own resident size would set the tail's width: 3 digits of MiB, as when
    # the test was written (a worker that built MSI's obligations first has over 1,000)
    monkeypatch.setattr("coherence.progress.rss_bytes", lambda: 812 << 20)
    rep = Reporter("coherence check", "plain", 0.0, plain_console(), io.StringIO())
    rep.update("states 123,456,789  frontier 98,765,432  depth 99  rules 1,234,567,890",
               done=5, total=10)
    for width in (70, 80, 100):
        line = rep.status_text(width)
        assert len(line) <= width - 1
        assert line.startswith("[0s] coherence check: states 123,456,789")
        assert re.search(r"…  5/10  eta \d+s  rss [\d,]+ MiB$", line), line
    assert "rules 1,234,567,890  5/10" in rep.status_text()  # uncut without a width
    assert len(rep.status_text(20)) == 19  # too narrow for both ends: the line is cut


# -- every long verb: header first, progress, summary last (jsonl on stderr, --json on stdout)

def run_verb(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any],
                                                                           list[dict[str, Any]]]:
    code = main([*argv, "--json", "--progress", "jsonl", "--progress-every", "0"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), records(captured.err)


def assert_stream(recs: list[dict[str, Any]], tool: str, code: int) -> None:
    assert recs[0]["type"] == "header" and recs[0]["tool"] == tool
    assert recs[-1]["type"] == "summary" and recs[-1]["exit_code"] == code
    assert any(r["type"] == "progress" for r in recs[1:-1])
    assert all(r["tool"] == tool for r in recs)


def test_check_json_and_jsonl_together(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, recs = run_verb(["check", MSI, "-n", "2", "--engine", "reference"], capsys)
    assert code == 0 and doc["verdict"] == "holds"
    assert_stream(recs, "coherence check", 0)
    assert recs[0]["params"]["agents"] == 2 and recs[0]["engine"] == "reference"
    assert "memory_limit" in recs[0]["bounds"]
    states = [r["states"] for r in recs if r["type"] == "progress" and "states" in r]
    assert len(states) > 10 and states == sorted(states)  # the engine's reports, in order
    assert states[-1] == doc["stats"]["states"] == recs[-1]["states"]


def test_check_compiled_engine(capsys: pytest.CaptureFixture[str]) -> None:
    from coherence.engines import EngineUnavailable, get_engine
    try:
        get_engine("compiled")
    except EngineUnavailable as err:
        pytest.skip(str(err))
    code, doc, recs = run_verb(["check", MSI, "-n", "2", "--engine", "compiled"], capsys)
    assert_stream(recs, "coherence check", code)
    assert recs[-1]["engine"] == "compiled" == doc["engine"]


@pytest.mark.parametrize("argv, done_total", [
    (["--bmc", "3"], (4, 4)),  # depth k of K: k + 1 of K + 1
    (["--induction", "1"], (2, 3)),  # base depths 0..k, then the step: k + 2 parts
])
def test_prove_reports_each_depth(argv: list[str], done_total: tuple[int, int],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _doc, recs = run_verb(["prove", MSI, "-n", "2", "--rlimit", "50000000", *argv], capsys)
    assert_stream(recs, "coherence prove", code)
    steps = [(r["done"], r["total"]) for r in recs if r["type"] == "progress"]
    assert steps[-1] == done_total
    assert recs[0]["bounds"]["rlimit"] == 50000000


def test_prove_for_every_n_reports_each_obligation(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, recs = run_verb(["prove", str(SPECS / "gpu_write_through.coh"), "--agents", "any",
                                "--skip", "coherent", "--rlimit", "2000000", "--jobs", "1"],
                               capsys)
    assert_stream(recs, "coherence prove", code)
    assert recs[0]["bounds"] == {"timeout": None, "rlimit": 2000000} and recs[0]["params"] == {}
    steps = [r for r in recs if r["type"] == "progress"]
    total = steps[0]["total"]
    assert total > 10 and all(r["total"] == total for r in steps)
    assert [r["done"] for r in steps[:total]] == list(range(total))  # one per obligation
    assert all(r["message"].startswith("obligation ") for r in steps[:total])
    assert recs[-1]["verdict"] == doc["verdict"]


def test_prove_for_every_n_writes_plain_lines_at_the_rate_asked(
        capsys: pytest.CaptureFixture[str]) -> None:
    # an obligation is a step, not a milestone: with a line an hour asked, the run (dozens of
    # obligations, seconds) writes the header, the last step and the summary, nothing between
    code = main(["prove", str(SPECS / "gpu_write_through.coh"), "--agents", "any", "--skip",
                 "coherent", "--rlimit", "2000000", "--jobs", "1", "--progress", "plain",
                 "--progress-every", "3600"])
    lines = capsys.readouterr().err.splitlines()
    assert code in (0, 3) and lines[0].startswith("coherence prove ")
    assert ": finished, " in lines[-1] and len(lines) == 3, lines
    total = re.search(r"  (\d+)/\1  ", lines[1])
    assert total is not None and int(total.group(1)) > 10, lines


def test_prove_over_two_processes_counts_every_processs_obligations(
        capsys: pytest.CaptureFixture[str]) -> None:
    # NOTE(forked-shares): the main process reports its own obligations, with what every
    # process has done and has to do (a worker's total counts once it has built its share)
    argv = ["prove", str(SPECS / "gpu_write_through.coh"), "--agents", "any", "--skip",
            "coherent", "--rlimit", "2000000"]
    _code, _doc, one = run_verb([*argv, "--jobs", "1"], capsys)
    obligations = next(r for r in one if r["type"] == "progress")["total"]
    code, doc, recs = run_verb([*argv, "--jobs", "2"], capsys)
    assert_stream(recs, "coherence prove", code)
    steps = [r for r in recs if r["type"] == "progress"]
    done = [r["done"] for r in steps]
    assert done == sorted(done) and all(r["done"] <= r["total"] for r in steps)
    assert all(r["message"].startswith(("obligation ", "looking for a counterexample"))
               for r in steps)
    assert max(r["total"] for r in steps) == obligations
    # the main process's share: about half of them, one record each
    assert obligations // 4 < len(steps) < obligations
    assert doc["jobs"] == (2 if can_fork() else 1) and recs[-1]["verdict"] == doc["verdict"]


def test_fuzz_reports_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, recs = run_verb(["fuzz", MSI, "--budget", "5", "--steps", "5"], capsys)
    runs_done = doc["stats"]["examples"]  # Hypothesis may try a few runs beyond the budget
    assert code == 0 and runs_done >= 5
    assert_stream(recs, "coherence fuzz", 0)
    runs = [r["runs"] for r in recs if r["type"] == "progress"]
    assert runs == list(range(1, runs_done + 1)) and recs[-1]["runs"] == runs_done
    assert recs[0]["bounds"] == {"budget": 5, "steps": 5}


@pytest.mark.parametrize("kind", ["fsm", "states", "trace"])
def test_diagram(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, recs = run_verb(["diagram", MSI, "-n", "2", "--kind", kind, "--format", "dot",
                                "--out", str(tmp_path)], capsys)
    assert code == 0
    assert_stream(recs, "coherence diagram", 0)
    assert recs[0]["kind"] == kind and recs[-1]["files"] == len(doc["files"])


def test_litmus_reports_each_program_and_its_states(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, recs = run_verb(["litmus", str(SPECS / "gpu_write_through.coh"), "WRC", "MP",
                                "-V", "weak"], capsys)
    assert code == 0
    assert_stream(recs, "coherence litmus", 0)
    assert recs[0]["bounds"] == {"max_states_per_program": DEFAULT_MAX_STATES}
    assert recs[0]["programs"] == 2 and doc["max_states"] == DEFAULT_MAX_STATES
    progress = [r for r in recs if r["type"] == "progress"]
    starts = [(r["test"], r["done"], r["total"]) for r in progress if r.get("states") == 0]
    assert starts == [("WRC", 0, 2), ("MP", 1, 2)]
    # WRC explores more than PROGRESS_STATES states: the explorer reports from inside the search
    assert any(r.get("states") == PROGRESS_STATES and r["test"] == "WRC" for r in progress)


def test_litmus_says_when_the_default_bound_stopped_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from coherence.commands import litmus
    monkeypatch.setattr(litmus, "DEFAULT_MAX_STATES", 20)
    wt = str(SPECS / "gpu_write_through.coh")
    assert main(["litmus", wt, "MP", "-V", "weak", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["max_states"] == 20 and doc["results"][0]["stopped"]
    assert doc["notes"] == ["stopped at the default bound of 20 states per program (result: "
                            "incomplete); raise it with --max-states N, or lift it with "
                            "--max-states 0"]
    assert main(["litmus", wt, "MP", "-V", "weak"]) == 3
    assert "note: stopped at the default bound of 20 states" in capsys.readouterr().out
    # an explicit bound is the user's own: no note; 0 lifts the bound
    assert main(["litmus", wt, "MP", "-V", "weak", "--max-states", "20", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["notes"] == []
    assert main(["litmus", wt, "MP", "-V", "weak", "--max-states", "0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["max_states"] is None and doc["results"][0]["stopped"] is None


def test_bench_check_reports_each_case(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, recs = run_verb(["bench", "check", MSI, "-n", "2"], capsys)
    assert code == 0 and [r["symmetry"] for r in doc["runs"]] == ["off", "exact"]
    assert_stream(recs, "coherence bench check", 0)
    cases = [r["message"] for r in recs if r["type"] == "progress" and "states" not in r]
    assert cases == ["case 1 of 2: symmetry off, run 1 of 1",
                     "case 2 of 2: symmetry exact, run 1 of 1"]
    assert any(r.get("states") for r in recs)  # the engine's reports, under their case


def test_bench_prove_reports_each_case(capsys: pytest.CaptureFixture[str]) -> None:
    code, _doc, recs = run_verb(["bench", "prove", MSI, "--agents-list", "2", "--bmc-depth",
                                 "2", "--proofs"], capsys)
    assert code == 0
    assert_stream(recs, "coherence bench prove", 0)
    messages = [r["message"] for r in recs if r["type"] == "progress"]
    assert messages[0] == "case 1 of 1: BMC agents=2"
    assert "case 1 of 1: BMC agents=2, BMC depth 2 checked" in " | ".join(messages)
    assert "checker BFS to depth 2 of 2" in messages[-2]


def test_bench_fuzz_reports_each_spec(capsys: pytest.CaptureFixture[str]) -> None:
    code, _doc, recs = run_verb(["bench", "fuzz", MSI, "-n", "2", "--seeds", "1", "--budget",
                                 "3", "--steps", "3"], capsys)
    assert code == 0
    assert_stream(recs, "coherence bench fuzz", 0)
    assert [r["message"] for r in recs if r["type"] == "progress"] == [
        f"spec 1 of 1: {MSI}", "1 spec measured"]


def test_bench_engines_reports_each_cell(capsys: pytest.CaptureFixture[str]) -> None:
    code, _doc, recs = run_verb(["bench", "engines", "--rows", "msi_snooping:2", "--tools",
                                 "reference"], capsys)
    assert code == 0
    assert_stream(recs, "coherence bench engines", 0)
    assert recs[1]["message"] == "cell 1 of 1: msi_snooping:2: reference ..."


def test_mutants_reports_each_mutant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (SPECS / "msi_snooping.coh").read_text(encoding="utf-8")
    for name in ("a", "b"):  # correct specs: each a missed mutant, found fast
        (tmp_path / f"{name}.coh").write_text(
            "// MUTANT OF: specs/msi_snooping.coh\n// CHANGE: none\n// EXPECT: swmr\n" + text,
            encoding="utf-8")
    code, doc, recs = run_verb(["mutants", str(tmp_path)], capsys)
    assert code == 1 and doc["caught"] == 0
    assert_stream(recs, "coherence mutants", 1)
    assert recs[0]["mutants"] == 2 and recs[-1]["verdict"] == "missed"
    assert [r["done"] for r in recs if r["type"] == "progress"] == [0, 1, 2]


def test_jsonl_stays_json_when_a_verb_has_remarks(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # a drawing refused as too large: the reason is in the summary, not loose text on stderr
    code = main(["diagram", MSI, "-n", "3", "--kind", "states", "--max-nodes", "2", "--out",
                 str(tmp_path), "--progress", "jsonl"])
    recs = records(capsys.readouterr().err)
    assert code == 3 and recs[-1]["verdict"] == "too-large"
    assert recs[-1]["message"].startswith("not drawn: msi_snooping.coh has more than 2 ")
    # nothing to prove: a note record after the header
    spec = tmp_path / "empty.coh"
    spec.write_text((SPECS / "msi_snooping.coh").read_text(encoding="utf-8"), encoding="utf-8")
    code = main(["prove", str(spec), "-n", "2", "--bmc", "0", "--skip", "swmr", "--skip",
                 "data_value", "--skip", "owner_tracked", "--skip", "coherent",
                 "--progress", "jsonl", "--progress-every", "0"])
    recs = records(capsys.readouterr().err)
    assert [r["type"] for r in recs[:2]] == ["header", "note"]
    assert recs[1]["message"].startswith("nothing to prove")


# -- bad input under --progress jsonl: stderr stays a stream of JSON records ----------------

@pytest.mark.parametrize("verb", ["check", "prove", "diagram"])
def test_bad_input_keeps_the_jsonl_stream_all_json(verb: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.coh"
    spec.write_text("protocol bad;\nthis is not a spec\n")
    extra = ["--kind", "fsm", "--out", str(tmp_path)] if verb == "diagram" else []
    assert main([verb, str(spec), *extra, "--progress", "jsonl"]) == 2
    err = capsys.readouterr().err
    recs = [json.loads(line) for line in err.splitlines()]
    assert recs, "no record at all"
    last = recs[-1]
    assert last["type"] == "summary" and last["verdict"] == "error" and last["exit_code"] == 2
    assert last["location"].startswith(str(spec) + ":1:"), last
    assert [r for r in recs if r["type"] == "summary"] == [last]


def test_a_bad_command_line_under_jsonl_is_one_json_record(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagram", MSI, "--progress", "jsonl"]) == 2  # --kind and --out missing
    recs = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert len(recs) == 1 and recs[0]["verdict"] == "error" and "--kind" in recs[0]["message"]
