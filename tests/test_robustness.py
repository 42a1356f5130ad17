"""No traceback on any input (issue 14, item 1): the language's limits (nesting, integers,
parameters), decoding errors, output paths, numeric options and argparse errors under --json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.errors import SpecError
from coherence.spec.load import load_spec, load_spec_text
from coherence.spec.parse import MAX_EXPR_DEPTH, MAX_INT, MAX_STMT_DEPTH, MAX_TYPE_DEPTH

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "msi_snooping.coh"
DOC = ROOT / "docs" / "language.md"

BASE = """network net: unordered, capacity = 2;
message Ping;
event Go;
home machine H {{ state R; init R; var x: int[0..3] = 0; {hvar} on Ping in R {{ {body} }} }}
cache machine C {{
  stable state I, S;
  init I;
  var b: bool = false;
  on Go in I {{ send Ping to home; goto S; }}
}}
invariant inv: {inv};
"""


def spec(body: str = "x := 1;", inv: str = "true", hvar: str = "") -> str:
    return BASE.format(body=body, inv=inv, hvar=hvar)


def chain(op: str, n: int, term: str = "true") -> str:
    return f" {op} ".join([term] * n)


def nested_ifs(n: int, inner: str = "x := 1;") -> str:
    return "if x == 0 { " * n + inner + " }" * n


def else_ifs(n: int) -> str:
    return "if x == 0 { x := 1; }" + " else if x == 0 { x := 1; }" * (n - 1)


# Every kind of nesting at the limit (loads) and one past it (a located error).
NESTINGS = [
    ("not", lambda n: spec(inv="!" * (n - 1) + "true"), MAX_EXPR_DEPTH, "expression"),
    ("and", lambda n: spec(inv=chain("&&", n)), MAX_EXPR_DEPTH, "expression"),
    ("or", lambda n: spec(inv=chain("||", n)), MAX_EXPR_DEPTH, "expression"),
    ("implies", lambda n: spec(inv=chain("->", n)), MAX_EXPR_DEPTH, "expression"),
    ("plus", lambda n: spec(body=f"x := {chain('+', n - 1, '0')} + 0;"), MAX_EXPR_DEPTH,
     "expression"),
    ("neg", lambda n: spec(body="x := " + "-" * (n - 1) + "0;"), MAX_EXPR_DEPTH, "expression"),
    ("if", lambda n: spec(body=nested_ifs(n)), MAX_STMT_DEPTH, "statements"),
    ("else-if", lambda n: spec(body=else_ifs(n)), MAX_STMT_DEPTH, "statements"),
    ("type", lambda n: spec(hvar="var a: " + "array<bool, " * n + "bool" + ">" * n + " = false;"),
     MAX_TYPE_DEPTH, "type"),
]


@pytest.mark.parametrize(("name", "make", "limit", "what"), NESTINGS,
                         ids=[n[0] for n in NESTINGS])
def test_nesting_at_the_limit_loads_and_past_it_is_located(name: str, make: object, limit: int,
                                                          what: str) -> None:
    assert callable(make)
    load_spec_text(make(limit), "deep.coh")
    with pytest.raises(SpecError) as exc:
        load_spec_text(make(limit + 1), "deep.coh")
    assert exc.value.message == f"{what} nested deeper than {limit}"
    assert exc.value.span.line >= 1 and exc.value.span.col >= 1


def test_parentheses_do_not_nest() -> None:
    load_spec_text(spec(inv="(" * 2000 + "true" + ")" * 2000), "parens.coh")


@pytest.mark.parametrize("text", [
    spec(inv="!" * 5000 + "true"),
    spec(inv=chain("&&", 20000)),
    spec(inv=chain("->", 5000)),
    spec(body=nested_ifs(3000)),
    spec(body=else_ifs(3000)),
    spec(inv="".join(f"forall a{i}: agent :: " for i in range(3000)) + "true"),
], ids=["not", "and", "implies", "if", "else-if", "forall"])
def test_far_past_the_limit_is_an_error_not_a_recursion(text: str) -> None:
    with pytest.raises(SpecError, match="nested deeper than"):
        load_spec_text(text, "deep.coh")


def test_every_verb_that_walks_the_ir_runs_at_the_limits(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """The deepest spec the front end accepts: statements and expressions at their limits
    together, through every back end that recurses over the IR."""
    path = tmp_path / "deepest.coh"
    path.write_text(spec(body=nested_ifs(MAX_STMT_DEPTH,
                                         f"x := {chain('+', MAX_EXPR_DEPTH - 1, '0')};"),
                         inv=chain("&&", MAX_EXPR_DEPTH - 2, "0 + 0 == 0")))  # 3 deep each
    out = str(tmp_path / "out")
    verbs = [["check", "--max-states", "200"], ["export", "--to", "murphi"],
             ["export", "--to", "promela"], ["prove", "--bmc", "1", "--agents", "2"],
             ["diagram", "--kind", "fsm", "--format", "dot", "--out", out]]
    for verb in verbs:
        code = main([verb[0], str(path), *verb[1:]])
        err = capsys.readouterr().err
        assert code in (0, 1, 3), (verb, code, err)
        assert "Traceback" not in err


@pytest.mark.parametrize(("text", "where"), [
    (spec(hvar="", inv="true").replace("network", "param values = " + "9" * 5000 + ";\nnetwork"),
     (1, 16)),
    ("param capacity = 1 range 0.." + "9" * 20 + ";\n" + spec(), (1, 29)),
    (spec().replace("int[0..3]", "int[0.." + "9" * 4301 + "]"), (4, 49)),
    (spec(body="x := " + "9" * 4301 + ";"), (4, 78)),
    (spec(inv=f"{MAX_INT + 1} > 0"), (11, 16)),
], ids=["param", "range", "type", "statement", "invariant"])
def test_huge_integers_are_located(text: str, where: tuple[int, int]) -> None:
    with pytest.raises(SpecError, match=r"is too large \(at most 2147483647\)") as exc:
        load_spec_text(text, "big.coh")
    assert (exc.value.span.line, exc.value.span.col) == where


def test_largest_integer_literal_is_accepted() -> None:
    load_spec_text(spec(inv=f"{MAX_INT} > 0"), "big.coh")


@pytest.mark.parametrize(("decl", "message", "col"), [
    ("param agents = 40;", "agents = 40: at most 16 agents are supported", 7),
    ("param values = 2 range 1..100000;", "range 1..100000 of 'values' is outside the limit "
                                          "1..65536", 18),
    ("param capacity = 2 range 0..70000;", "range 0..70000 of 'capacity' is outside the limit "
                                           "0..65536", 20),
])
def test_absurd_parameters_are_located(decl: str, message: str, col: int) -> None:
    with pytest.raises(SpecError) as exc:
        load_spec_text(decl + "\n" + spec(), "p.coh")
    assert exc.value.message == message
    assert (exc.value.span.line, exc.value.span.col) == (1, col)


def test_bad_byte_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.coh"
    path.write_bytes(b"// caf\xc3\xa9\n//  \xc3\xa9 x \xff y\n" + SPEC.read_bytes())
    assert main(["check", str(path)]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first == f"{path}:2:9: error: not UTF-8 text: byte 0xff (invalid start byte)"


def test_binary_file_is_located_without_echoing_it(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bin.coh"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\xfe\x00")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:10: error: not UTF-8 text") and "ELF" not in err


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.coh"
    path.write_bytes(b"\xef\xbb\xbf" + SPEC.read_bytes())
    with_bom, plain = load_spec(path), load_spec(SPEC)
    assert [m.name for m in with_bom.machines] == [m.name for m in plain.machines]
    assert load_spec_text("\ufeff" + SPEC.read_text(), "bom.coh").invariants


def test_error_lines_count_newlines_only() -> None:
    """A form feed is not a line break for the parser, so it must not be for the caret."""
    with pytest.raises(SpecError) as exc:
        load_spec_text("// a\x0c b\nparam x = ;\n", "ff.coh")
    assert exc.value.span.line == 2
    assert exc.value.render().splitlines()[1].strip() == "param x = ;"


@pytest.mark.parametrize("argv", [
    ["check", str(SPEC), "--trace-out", "{tmp}/missing/t.json"],
    ["check", str(SPEC), "--trace-out", "{tmp}"],
    ["export", str(SPEC), "-o", "{tmp}/missing/m.m"],
    ["export", str(SPEC), "-o", "{tmp}"],
    ["diagram", str(SPEC), "--kind", "fsm", "--out", "{tmp}/file.txt/sub"],
    ["prove", str(SPEC), "--bmc", "1", "--trace-out", "{tmp}/missing/t.json"],
    ["check", str(SPEC), "--diagram", "{tmp}/file.txt"],
])
def test_bad_output_paths_are_refused_up_front(argv: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file.txt").write_text("keep me")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "file.txt").read_text() == "keep me"


def test_export_never_overwrites_the_spec(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.coh"
    path.write_bytes(SPEC.read_bytes())
    assert main(["export", str(path), "-o", str(path)]) == 2
    assert path.read_bytes() == SPEC.read_bytes()
    assert "is the spec being exported" in capsys.readouterr().err


def test_export_replaces_an_existing_output_whole(tmp_path: Path) -> None:
    out = tmp_path / "m.m"
    out.write_text("old")
    assert main(["export", str(SPEC), "-o", str(out)]) == 0
    assert out.read_text().startswith("--") and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("kind", ["binary", "directory"])
def test_hw_report_on_a_bad_file(kind: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r.json"
    if kind == "binary":
        target.write_bytes(b"\x00\xff\xfe")
    else:
        target.mkdir()
    assert main(["hw", "report", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(str(target)) and "Traceback" not in err


@pytest.mark.parametrize(("content", "message"), [
    (b"// MUTANT OF: x\n// \xff\n", "not UTF-8 text"),
    ("// MUTANT OF: x\n// CHANGE: y\n// EXPECT: swmr\n// AGENTS: \u0662\n".encode(),
     "AGENTS must be an integer 1..8"),
    (b"// MUTANT OF: x\n// CHANGE: y\n// EXPECT: swmr\n// AGENTS: 1_0\n",
     "AGENTS must be an integer 1..8"),
])
def test_mutants_with_bad_headers(content: bytes, message: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.coh").write_bytes(content)
    assert main(["mutants", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and re.match(re.escape(str(tmp_path / "m.coh")) + r":\d+:\d+: ", err)


@pytest.mark.parametrize("argv", [
    ["check", str(SPEC), "--max-states", "0"],
    ["check", str(SPEC), "--max-states", "-5"],
    ["check", str(SPEC), "--max-states", "1_000"],
    ["check", str(SPEC), "--max-depth", "-1"],
    ["check", str(SPEC), "--threads", "0"],
    ["check", str(SPEC), "--agents", "0"],
    ["check", str(SPEC), "--agents", "\u0662"],
    ["prove", str(SPEC), "--bmc", "1", "--timeout", "-1"],
    ["prove", str(SPEC), "--bmc", "1", "--timeout", "nan"],
    ["prove", str(SPEC), "--bmc", "-1"],
    ["prove", str(SPEC), "--induction", "0"],
    ["prove", str(SPEC), "--bmc", "1", "--rlimit", "0"],
    ["prove", str(SPEC), "--agents", "0", "--bmc", "1"],
    ["diagram", str(SPEC), "--kind", "states", "--out", "/tmp", "--max-nodes", "0"],
    ["fuzz", str(SPEC), "--budget", "0"],
    ["litmus", str(SPEC), "MP", "--max-states", "-1"],  # 0: no bound (docs/progress.md)
    ["check", str(SPEC), "--progress-every", "-1"],
    ["litmus", str(SPEC), "MP", "--progress-every", "nan"],
    ["mutants", "specs/mutants", "--agents", "9"],
])
def test_numeric_options_are_range_checked(argv: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--json"]) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["exit_code"] == 2 and doc["error"]["location"] == "<command line>"
    assert "argument" in doc["error"]["message"] and "error: argument" in err


@pytest.mark.parametrize("value", ["1_0", "0x2", "2e0", "\u0662", "2.0", "9" * 30])
def test_param_values_are_plain_decimal(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SPEC), "--param", f"agents={value}"]) == 2
    assert capsys.readouterr().err.startswith("<command line>: error: --param agents:")


def test_unknown_option_under_json_is_a_json_document(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["check", str(SPEC), "--frobnicate", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"error": {"message": "coherence: unrecognized arguments: --frobnicate",
                             "location": "<command line>"}, "exit_code": 2}


def test_the_documented_limits_are_the_enforced_ones() -> None:
    doc = DOC.read_text()
    section = doc[doc.index("## Limits"):]
    for text in (f"| nesting of one expression | {MAX_EXPR_DEPTH} |",
                 f"| nesting of statements (`if`, each `else if`, `for`) | {MAX_STMT_DEPTH} |",
                 f"| nesting of types (`array<…>`, `set<…>`) | {MAX_TYPE_DEPTH} |",
                 f"| an integer literal | {MAX_INT} "):
        assert text in section
