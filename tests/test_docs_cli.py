"""What the docs say about the command line, checked against the argparse parser itself:
which verbs take ``--param``, ``--agents`` and ``--json``, one ``--core`` default, and that
every ``coherence ...`` command named in README/docs (without its output: those are run by
test_docs.py) uses verbs and options that exist."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT

from coherence.cli import build_parser, main
from coherence.litmus.model import DEFAULT_CORE


def leaf_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every runnable command line ('check', 'bench prove', 'hw report', ...) and its parser."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[path] = parser
            return
        for name, sub in subs[0].choices.items():
            walk(sub, f"{path} {name}".strip())

    walk(build_parser(), "")
    return out


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def test_the_walk_finds_every_verb() -> None:
    leaves = leaf_parsers()
    assert {"check", "prove", "litmus", "mutants", "bench prove", "hw report"} <= set(leaves)
    assert len(leaves) >= 14


def _claim() -> str:
    text = " ".join(ROOT.joinpath("README.md").read_text().split())
    m = re.search(r"Every verb takes `--json`\..*?neither by [^.]*\.", text)
    assert m, "README: the sentence 'Every verb takes `--json`. ...' is missing"
    return m.group()


def _verbs(fragment: str) -> set[str]:
    return set(re.findall(r"`([a-z][a-z ]*[a-z])`", fragment))


def test_readme_says_exactly_which_verbs_take_param_agents_and_json() -> None:
    claim = _claim()
    both_part, _, rest = claim.partition("`--param` alone by")
    param_part, _, neither_part = rest.partition("neither by")
    assert both_part and param_part and neither_part, claim
    leaves = leaf_parsers()
    actual_both = {v for v, p in leaves.items() if {"--param", "--agents"} <= options(p)}
    actual_param = {v for v, p in leaves.items()
                    if "--param" in options(p) and "--agents" not in options(p)}
    actual_neither = {v for v, p in leaves.items() if not {"--param", "--agents"} & options(p)}
    assert not [v for v, p in leaves.items()
                if "--agents" in options(p) and "--param" not in options(p)]
    assert _verbs(both_part.partition("are taken by")[2]) == actual_both
    assert _verbs(param_part) == actual_param
    assert _verbs(neither_part) == actual_neither
    assert [v for v, p in leaves.items() if "--json" not in options(p)] == []


def test_litmus_and_hw_report_share_the_core_default() -> None:
    leaves = leaf_parsers()
    defaults = {}
    for verb, parser in leaves.items():
        for action in parser._actions:
            if "--core" in action.option_strings:
                defaults[verb] = action.default
    assert defaults == {"litmus": DEFAULT_CORE, "hw report": DEFAULT_CORE}
    assert leaves["litmus"].parse_args(["S", "MP"]).core == DEFAULT_CORE
    assert leaves["hw report"].parse_args(["r.json"]).core == DEFAULT_CORE


def test_mutants_and_bench_prove_apply_param(capsys: pytest.CaptureFixture[str]) -> None:
    mutant = str(ROOT / "specs" / "mutants" / "msi_snoop_owner_keeps_m.coh")
    states = []
    for extra in ([], ["--param", "lines=2"]):
        assert main(["mutants", mutant, "--json", *extra]) == 0
        states.append(json.loads(capsys.readouterr().out)["results"][0]["states"])
    assert states[1] > states[0]
    assert main(["mutants", mutant, "--param", "nope=1"]) == 2
    assert "no parameter 'nope'" in capsys.readouterr().err
    assert main(["bench", "prove", "--param", "agents=2", "--proofs"]) == 2
    assert "--agents-list" in capsys.readouterr().err


def test_hw_report_passes_param_to_every_model(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import coherence.spec.load as load

    doc = {"schema": 1, "provenance": {"gpu": "synthetic"}, "results": [
        {"test": "MP", "variant": "weak", "timeouts": 0, "shared_sm": {},
         "sass": {"checked": False}, "distinct_sm": {"1:r0=1 1:r1=1 x=1 y=1": 10}}]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    loaded: list[dict[str, int]] = []
    bound: list[dict[str, int]] = []
    real_load, real_rebind = load.load_spec, load.rebind

    def spy_load(spec: str, overrides: dict[str, int] | None = None) -> object:
        loaded.append(dict(overrides or {}))
        return real_load(spec, overrides)

    def spy_rebind(model: Any, overrides: dict[str, int]) -> Any:
        # the model each test runs on: the user's --param kept, agents set by the test
        result = real_rebind(model, overrides)
        bound.append({p.name: p.value for p in result.params})
        return result

    monkeypatch.setattr(load, "load_spec", spy_load)
    monkeypatch.setattr(load, "rebind", spy_rebind)
    wt = str(ROOT / "specs" / "gpu_write_through.coh")
    assert main(["hw", "report", str(path), "--model", wt, "--param", "capacity=1",
                 "--json"]) == 0
    assert loaded and all(o["capacity"] == 1 for o in loaded)
    assert bound and all(o["capacity"] == 1 and o["agents"] == 2 for o in bound)
    capsys.readouterr()
    assert main(["hw", "report", str(path), "--model", wt, "--param", "lines=3"]) == 2
    assert "set by each litmus test" in capsys.readouterr().err


# ---------------------------------------------------------------- commands named in the prose

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
INLINE = re.compile(r"`(coherence [^`]+)`")
INDENTED = re.compile(r"^ {4}(coherence .+)$", re.M)


def mentioned_commands() -> list[tuple[str, str]]:
    """(doc, command) for each ``coherence ...`` in inline code or an indented code line."""
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        out += [(doc.name, " ".join(c.split())) for c in INLINE.findall(text)]
        out += [(doc.name, c.strip()) for c in INDENTED.findall(text)]
    return out


def test_docs_name_commands() -> None:
    names = {c for _, c in mentioned_commands()}
    assert "coherence mutants specs/mutants/" in names and len(names) >= 30


@pytest.mark.parametrize(("doc", "command"), mentioned_commands())
def test_named_verb_and_options_exist(doc: str, command: str) -> None:
    """A command the docs name uses a verb and options the parser has; one with no
    placeholder (SPEC, N, [...], a|b) is parsed whole, as the shell would pass it."""
    leaves = leaf_parsers()
    words = command.split()[1:]
    verb = " ".join(words[:2]) if " ".join(words[:2]) in leaves else words[0]
    if verb not in leaves and len(words) == 1:  # a group: `coherence hw`, `coherence bench`
        assert any(v.startswith(f"{verb} ") for v in leaves), f"{doc}: `{command}`: no {verb!r}"
        return
    assert verb in leaves, f"{doc}: `{command}`: no verb {verb!r}"
    known = options(leaves[verb])
    for w in words:
        if w.startswith("--") or (w.startswith("-") and len(w) == 2):
            opt = w.strip("[]").split("=")[0]
            assert opt in known, f"{doc}: `{command}`: {verb} has no option {opt}"
    placeholder = re.search(r"[\[\]|…]|\.\.\.|\b[A-Z]{1,5}\b|SPEC", command)
    if not placeholder and re.search(r"/|\.(coh|json|litmus)\b", command):
        build_parser().parse_args(shlex.split(command)[1:])
