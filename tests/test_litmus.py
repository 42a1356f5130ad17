"""Litmus format: parsing, located errors, variants, the SC baseline."""

from __future__ import annotations

import pytest

from coherence.errors import SpecError
from coherence.litmus.catalogue import catalogue_names, find_test, load_catalogue
from coherence.litmus.parse import parse_litmus
from coherence.litmus.program import holds, outcome_dict, outcome_text
from coherence.litmus.sc import sc_outcomes
from coherence.litmus.variants import VARIANTS, apply_variant, variant_names

MP = """// message passing
litmus MP "message passing";
locations x, y;
thread 0 { store x 1; store y 1; }
thread 1 { r0 = load y; r1 = load x; }
exists 1:r0 == 1 && 1:r1 == 0;
"""

CATALOGUE = ["2+2W", "CoRR", "CoRW", "CoWR", "CoWW", "IRIW", "LB", "LB+data", "MP",
             "MP+cached", "R", "S", "SB", "WRC"]


def test_parse_mp() -> None:
    t = parse_litmus(MP, "mp.litmus")
    assert t.name == "MP" and t.doc == "message passing"
    assert t.locations == ("x", "y")
    assert [op.text() for op in t.threads[0]] == ["store x 1", "store y 1"]
    assert [op.text() for op in t.threads[1]] == ["r0 = load y", "r1 = load x"]
    assert t.condition.text() == "1:r0 == 1 && 1:r1 == 0"
    assert t.outcome_names() == ["1:r0", "1:r1", "x", "y"]
    assert not t.annotated()


def test_parse_annotations_cached_init_and_dependency() -> None:
    t = parse_litmus("""litmus T; locations x, y; init x = 0, y = 2; cached 1 y;
        thread 0 { r0 = load.acquire.gpu x; store.release.sys y r0; fence.sc.cta; }
        thread 1 { r1 = load.volatile y; store.weak x 3; fence.gpu; }
        exists (0:r0 == 1 || !(x != 3)) && y == 2;""", "t")
    ops = t.threads[0]
    assert (ops[0].order, ops[0].scope) == ("acquire", "gpu")
    assert (ops[1].order, ops[1].scope, ops[1].value) == ("release", "sys", "r0")
    assert (ops[2].order, ops[2].scope) == ("sc", "cta")
    assert (t.threads[1][2].order, t.threads[1][2].scope) == ("sc", "gpu")
    assert t.init == (("x", 0), ("y", 2)) and t.cached == ((1, "y"),)
    assert t.annotated() and variant_names(t) == ["as-written"]
    assert holds(t.condition, {"0:r0": 0, "1:r1": 0, "x": 3, "y": 2})
    assert not holds(t.condition, {"0:r0": 0, "1:r1": 0, "x": 2, "y": 2})


@pytest.mark.parametrize(("text", "where", "message"), [
    ("litmus T; locations x; thread 0 { store z 1; } exists x == 1;", "1:41",
     "unknown location 'z'"),
    ("litmus T; locations x;\nthread 0 { r0 = load x; }\nexists 0:r1 == 1;", "3:10",
     "thread 0 loads no register 'r1'"),
    ("litmus T; locations x; thread 0 { store.acquire x 1; } exists x == 1;", "1:41",
     "unknown or misplaced annotation 'acquire'"),
    ("litmus T; locations x; thread 1 { store x 1; } exists x == 1;", "1:31",
     "expected thread 0, got 1"),
    ("litmus T; locations x, x; thread 0 { store x 1; } exists x == 1;", "1:24",
     "declared twice"),
    ("litmus T; locations x; thread 0 { store x 9; } exists x == 1;", "1:43", "too large"),
    ("litmus T; locations x; thread 0 { store x r5; } exists x == 1;", "1:43",
     "register 'r5' is not loaded"),
    ("litmus T; locations x; thread 0 { store x 1; } exists x == 1", "1:61",
     "expected ';', got end of file"),
    ("litmus T; locations x; thread 0 { store x 1 } exists x == 1;", "1:45", "expected ';'"),
    ("litmus T; locations x; cached 3 x; thread 0 { store x 1; } exists x == 1;", "1:31",
     "no thread 3"),
    ("litmus T; locations x; thread 0 { store x 1; } exists x == 1; $", "1:63",
     "unexpected character '$'"),
    ("litmus T; locations x; thread 0 { fence; } exists x == 1;", "1:24", "at least one"),
])
def test_located_errors(text: str, where: str, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_litmus(text, "bad.litmus")
    assert e.value.location() == f"bad.litmus:{where}"
    assert message in e.value.message
    assert "^" in e.value.render()


def test_catalogue_is_complete_and_parses() -> None:
    assert catalogue_names() == sorted(CATALOGUE)
    tests = load_catalogue(["all"])
    assert [t.name for t in tests] == sorted(CATALOGUE)


def test_find_test_unknown_name() -> None:
    with pytest.raises(SpecError, match="no litmus test 'XYZ'"):
        find_test("XYZ")


def test_variants_annotate_everything() -> None:
    t = find_test("MP")
    assert variant_names(t) == list(VARIANTS)
    acq = apply_variant(t, "acqrel.gpu")
    assert [op.text() for op in acq.threads[0]] == ["store.release.gpu x 1",
                                                    "store.release.gpu y 1"]
    assert [op.text() for op in acq.threads[1]] == ["r0 = load.acquire.gpu y",
                                                    "r1 = load.acquire.gpu x"]
    f = apply_variant(t, "fence.cta")
    assert [op.text() for op in f.threads[1]] == ["r0 = load.relaxed.gpu y", "fence.sc.cta",
                                                  "r1 = load.relaxed.gpu x"]
    assert [op.text() for op in apply_variant(t, "weak").threads[0]] == ["store.weak x 1",
                                                                        "store.weak y 1"]
    with pytest.raises(SpecError, match="unknown variant"):
        apply_variant(t, "strong")


@pytest.mark.parametrize("name", CATALOGUE)
def test_sc_forbids_every_condition(name: str) -> None:
    """Every catalogue condition is a non-SC outcome: that is what makes it a litmus test."""
    t = find_test(name)
    assert not any(holds(t.condition, outcome_dict(t, o)) for o in sc_outcomes(t))


def test_sc_outcomes_of_sb_and_mp() -> None:
    sb = find_test("SB")
    assert sorted(outcome_text(sb, o) for o in sc_outcomes(sb)) == [
        "0:r0=0 1:r1=1 x=1 y=1", "0:r0=1 1:r1=0 x=1 y=1", "0:r0=1 1:r1=1 x=1 y=1"]
    mp = find_test("MP")
    assert sorted(outcome_text(mp, o) for o in sc_outcomes(mp)) == [
        "1:r0=0 1:r1=0 x=1 y=1", "1:r0=0 1:r1=1 x=1 y=1", "1:r0=1 1:r1=1 x=1 y=1"]


def test_sc_data_dependency_copies_the_register() -> None:
    t = find_test("LB+data")
    names = t.outcome_names()
    for o in sc_outcomes(t):
        d = dict(zip(names, o, strict=True))
        assert d["y"] == d["0:r0"]
