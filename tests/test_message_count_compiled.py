"""NOTE(message-count): ``count(m: Msg :: body)`` in the generated C, against the reference.

The C code generator (``coherence.engines.cgen.cexpr``) is shared by the compiled engine and
the GPU engine (NVRTC compiles the same successor code): a message count visits every message
of the type in flight on the line (duplicates included), adds one per true body, and, like a
count over agents, raises the least of its instances' model errors after the loop
(NOTE(quantifier-errors): no instance decides a count). Before it, every message quantifier
was generated as ``forall``/``exists``, so message_count_bad.coh held on the compiled engine.

Here: the two specs of tests/specs/count/ on both engines; specs whose count bodies raise
model errors (an undefined field read, an undefined agent index), on an unordered and on a
fifo network; a table of invariants comparing counts with literals, with each other and in
arithmetic (written-out verdicts and depths); random batches of such invariants (Hypothesis);
and the GPU engine's kernels built for the host (and, where CuPy and a GPU are, on the GPU).
No Z3 is imported (the GPU machine has none), so ``helpers`` is not used (the engine
comparison is ``quantifier_specs``'s).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from quantifier_specs import both, failures, host_kernels_as_cplusplus, summary

from coherence import ir, load_spec
from coherence.engines import check
from coherence.engines.cgen.codegen import generate
from coherence.engines.compiled import CompiledEngine
from coherence.engines.driver import run
from coherence.engines.gpu import GpuEngine
from coherence.engines.gpu.device import find_cc
from coherence.engines.gpu.source import kernel_source
from coherence.layout import Layout
from coherence.results import CheckOptions
from coherence.spec.load import load_spec_text

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "tests" / "specs" / "count"
GOOD = SPECS / "message_count.coh"
BAD = SPECS / "message_count_bad.coh"

needs_cc = pytest.mark.skipif(CompiledEngine().available() is not None,
                              reason=f"no C compiler: {CompiledEngine().available()}")
needs_host_kernels = pytest.mark.skipif(
    find_cc() is None or CompiledEngine().available() is not None, reason="no C compiler")
needs_gpu = pytest.mark.skipif(GpuEngine().available() is not None,
                               reason=f"no GPU engine here: {GpuEngine().available()}")


@pytest.fixture(scope="module", autouse=True)
def _quick_builds() -> Iterator[None]:
    """-O0: each spec here is a new C build (cached by source hash), and the searches are tiny.
    Module-scoped (not ``monkeypatch``) so that the Hypothesis test may use it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COHERENCE_CFLAGS", os.environ.get("COHERENCE_CFLAGS", "-O0"))
        yield


# ---------------------------------------------------------------- the specs of tests/specs/count

@needs_cc
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
@pytest.mark.parametrize(("agents", "states"), [(2, (10, 16)), (3, (20, 64))])
def test_message_count_holds_on_both_engines(agents: int, states: tuple[int, int],
                                             symmetry: bool) -> None:
    ours, ref = both(load_spec(GOOD, {"agents": agents}), symmetry)
    assert summary(ours) == summary(ref)
    assert ours.verdict == "holds"
    assert ours.states == states[0 if symmetry else 1]


@needs_cc
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
def test_message_count_bad_fails_on_both_engines(symmetry: bool) -> None:
    """one_ping at depth 2 (a request, then the two pings it is answered with), with the
    reference's counterexample step for step in one thread (with two, which of the equally
    short counterexamples comes first depends on the threads' timing: Cache[1]'s request
    instead of Cache[0]'s, seen once on a loaded machine without symmetry)."""
    ours, ref = both(load_spec(BAD), symmetry)
    assert summary(ours) == summary(ref)
    assert ours.verdict == "fails"
    assert failures(ours) == {("invariant", "one_ping"): 2}
    one = check(load_spec(BAD), CheckOptions(symmetry=symmetry, threads=1), engine="compiled")
    assert [f.trace for f in one.failures] == [f.trace for f in ref.failures]


# ---------------------------------------------------------------- model errors in the body

# Blank sends a Req with no fields, Ask one naming its sender with v = 1 (either, once).
ERRORS_HEAD = """param agents = 2;
message Req(who: agent, v: int[0..3]);
network net: ORDERING, capacity = 3;
home machine H { stable state R; init R; on Req { } }
cache machine C {
  stable state I, B, A;
  init I;
  rule Blank in I { send Req(undefined, undefined) to home; goto B; }
  rule Ask in I { send Req(self, 1) to home; goto A; }
}
"""

# invariant -> its failures (key -> shortest length), the same on both networks
ERRORS: dict[str, dict[tuple[str, ...], int]] = {
    # an agent index read from an undefined field: an error as soon as a blank Req is out
    "count(m: Req :: C[m.who].state == A) <= 2": {("error", "x"): 1},
    # an undefined field compared: the count errs even though the comparison is not needed
    # to tell that the count is below 5 (no instance decides a count)
    "count(m: Req :: m.v == 1) < 5": {("error", "x"): 1},
    # the blank Req's sender is not in A: its instance reads the undefined field
    "count(m: Req :: C[m.src].state == A || m.v == 1) >= 0": {("error", "x"): 1},
    # a count nested in a count
    "count(m: Req :: count(r: Req :: r.v == m.v) == 1) <= 2": {("error", "x"): 1},
    # the count's error goes to the enclosing forall, where a false instance decides it:
    # Ask alone breaks the invariant at 1 step, Blank alone is an error
    "forall i: agent :: count(m: Req :: m.src == i && m.v == 1) == 0":
        {("error", "x"): 1, ("invariant", "x"): 1},
    # ... and exists: Blank and Ask by two caches is an error, Ask twice a violation
    "exists i: agent :: count(m: Req :: m.src == i && m.v == 1) == 0":
        {("error", "x"): 2, ("invariant", "x"): 2},
    # short-circuited: no error, only the second count's violation
    "count(m: Req :: false && m.v == 1) + count(m: Req :: true) <= 1": {("invariant", "x"): 2},
}


@needs_cc
@pytest.mark.parametrize("ordering", ["unordered", "fifo"])
@pytest.mark.parametrize("invariant", sorted(ERRORS))
def test_errors_in_a_count_body_match_the_reference(invariant: str, ordering: str) -> None:
    text = ERRORS_HEAD.replace("ORDERING", ordering) + f"invariant x: {invariant};\n"
    model = load_spec_text(text, "errors.coh")
    for symmetry in (True, False):
        ours, ref = both(model, symmetry)
        assert summary(ours) == summary(ref)
        assert failures(ours) == ERRORS[invariant]


# Both sends a blank Req and then an asking one: every state with a blank Req in flight also
# holds a true instance, which must not clear the blank one's error (on the fifo network the
# blank one is listed first, so a true instance after it would hide it; in the unordered one
# they are listed by their encoding).
BOTH = ERRORS_HEAD.replace(
    "rule Blank in I {",
    "rule Both in I { send Req(undefined, undefined) to home; send Req(self, 1) to home; "
    "goto A; }\n  rule Blank in B {")


@needs_cc
@pytest.mark.parametrize("ordering", ["unordered", "fifo"])
@pytest.mark.parametrize("body", ["C[m.src].state != A || m.v == 1",
                                  "m.v == 1 || C[m.src].state == A"], ids=["state", "field"])
def test_a_true_message_does_not_hide_another_messages_error(body: str, ordering: str) -> None:
    text = BOTH.replace("ORDERING", ordering) + f"invariant x: count(m: Req :: {body}) >= 0;\n"
    assert "rule Both" in text
    model = load_spec_text(text, "both.coh")
    for symmetry in (True, False):
        ours, ref = both(model, symmetry)
        assert summary(ours) == summary(ref)
        assert failures(ours) == {("error", "x"): 1}


# ---------------------------------------------------------------- counts compared and summed

PROTOCOL = GOOD.read_text().split("// What a waiting cache")[0] + """
network snoop: bus;
message Snoop on snoop;  // never sent (a bus holds nothing between steps anyway)
"""

# invariant -> the depth of its shortest counterexample at 2 agents (None: it holds). Req is on
# an unordered network (capacity 2), Ping on a fifo one; each request is answered by Ping(0)
# then Ping(1) to the requester.
VARIANTS: dict[str, int | None] = {
    "count(m: Ping :: true) <= 1": 2,
    "count(m: Ping :: true) < 4": 4,
    "count(m: Req :: true) <= 1": 2,
    "count(m: Req :: true) != 2": 2,
    "count(m: Ping :: m.val == 1) > 1": 0,
    "forall i: agent :: count(m: Ping :: m.src == home && m.dst == i) < 2": 2,
    "count(m: Ping :: Cache[m.dst].got == 1) < 1": 3,
    "count(m: Ping :: Cache[m.dst].got == 1) <= 2": None,
    "count(m: Ping :: true) >= count(m: Req :: true)": 1,
    "count(m: Ping :: true) - count(m: Req :: true) < 3": 4,
    "count(m: Ping :: m.val == 0) <= count(m: Ping :: m.val == 1)": None,
    "count(m: Req :: m.dst == home) == count(m: Req :: true)": None,
    "count(m: Req :: Cache[m.src].state == W) == count(m: Req :: true)": None,
    "(if count(m: Req :: true) > 0 then count(m: Req :: true) else 5) >= 1": None,
    # counts of nothing
    "count(m: Req :: m.src == home) == 0": None,
    "count(m: Ping :: m.dst == home) == 0": None,
    "count(m: Req :: false) == 0": None,
    "count(m: Snoop :: true) == 0": None,
    "count(m: Snoop :: true) + count(m: Ping :: false) > 0": 0,
    # nested in quantifiers and in each other
    "count(m: Ping :: count(r: Req :: r.src == m.dst) == 0) == count(m: Ping :: true)": None,
    "forall i: agent :: count(m: Ping :: m.dst == i) + count(m: Req :: m.src == i) <= 1": 2,
    "exists i: agent :: count(m: Ping :: m.dst == i) == 0": 4,
    "forall i: agent :: count(m: Ping :: m.dst == i && (exists r: Req :: r.src == i)) == 0":
        None,
}


def _variants_model() -> ir.Model:
    names = {text: f"v{i}" for i, text in enumerate(VARIANTS)}
    text = PROTOCOL + "".join(f"invariant {names[t]}: {t};\n" for t in VARIANTS)
    return load_spec_text(text, "variants.coh", {"agents": 2})


def _expected_variants() -> dict[tuple[str, ...], int]:
    return {("invariant", f"v{i}"): depth for i, depth in enumerate(VARIANTS.values())
            if depth is not None}


@needs_cc
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
def test_count_invariants_match_the_reference(symmetry: bool) -> None:
    """Each invariant of the table is its own property: both engines find the same failures,
    at the written-out depths, in the same state space."""
    ours, ref = both(_variants_model(), symmetry)
    assert summary(ours) == summary(ref)
    assert failures(ref) == _expected_variants()


_BODIES = {  # under ``forall i: agent`` or ``exists i: agent``
    "Req": ["true", "false", "m.src == i", "m.src != i", "m.dst == home",
            "Cache[m.src].state == W", "Cache[m.src].got == 0"],
    # Cache[m.src] on a Ping (sent by the home) is a model error ("not an agent")
    "Ping": ["true", "m.val == 0", "m.val == 1", "m.dst == i", "m.dst != i", "m.src == home",
             "Cache[m.dst].got == 1", "Cache[m.src].got == 0",
             "m.val == 0 || Cache[m.src].got == 0", "Cache[i].state == W && m.val == 1"],
}


@st.composite
def _counts(draw: st.DrawFn) -> str:
    message = draw(st.sampled_from(sorted(_BODIES)))
    return f"count(m: {message} :: {draw(st.sampled_from(_BODIES[message]))})"


@st.composite
def _invariants(draw: st.DrawFn) -> str:
    """``forall i: agent :: COUNT OP N`` (or exists), COUNT a count or the sum or difference
    of two."""
    left = draw(_counts())
    if draw(st.booleans()):
        left += f" {draw(st.sampled_from(['+', '-']))} {draw(_counts())}"
    op = draw(st.sampled_from(["<", "<=", "==", "!=", ">=", ">"]))
    quant = draw(st.sampled_from(["forall", "exists"]))
    return f"{quant} i: agent :: {left} {op} {draw(st.integers(0, 4))}"


@needs_cc
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(invariants=st.lists(_invariants(), min_size=1, max_size=4),
       agents=st.sampled_from([2, 3]), symmetry=st.booleans())
def test_random_count_invariants_match_the_reference(invariants: list[str], agents: int,
                                                     symmetry: bool) -> None:
    text = GOOD.read_text().split("// What a waiting cache")[0] + "".join(
        f"invariant r{i}: {t};\n" for i, t in enumerate(invariants))
    note(text)
    ours, ref = both(load_spec_text(text, "random.coh", {"agents": agents}), symmetry)
    assert summary(ours) == summary(ref)


# ---------------------------------------------------------------- the GPU engine's code

def _gpu_specs() -> list[tuple[str, ir.Model]]:
    return [("good-3", load_spec(GOOD, {"agents": 3})), ("bad", load_spec(BAD)),
            ("variants", _variants_model())]


def test_the_nvrtc_source_holds_the_generated_count() -> None:
    """The NVRTC source holds the generated model unchanged (no compiler needed)."""
    model = load_spec(BAD)
    generated = generate(model, Layout(model))
    assert generated.source in kernel_source(generated, 1, "nvrtc")


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_the_generated_counts_are_also_cplusplus(tmp_path: Path) -> None:
    """NVRTC compiles C++17, where a jump (a count instance's error) may not skip a
    declaration still in scope: the host build of the kernels, read as C++."""
    for name, model in [("variants", _variants_model()),
                        ("both", load_spec_text(BOTH.replace("ORDERING", "fifo") + (
                            "invariant x: count(m: Req :: m.v == 1) >= 0;\n"), "both.coh"))]:
        proc = host_kernels_as_cplusplus(model, tmp_path / f"{name}.cc")
        assert proc.returncode == 0, proc.stderr[:2000]
        assert proc.stderr == "", name


@needs_host_kernels
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
def test_host_kernels_count_messages_like_the_compiled_engine(symmetry: bool) -> None:
    """The GPU engine's kernels built for the host (``GpuEngine("host")``)."""
    options = CheckOptions(symmetry=symmetry, threads=2)
    for name, model in _gpu_specs():
        gpu = run(GpuEngine("host"), model, options)
        assert gpu.engine == "gpu", name
        assert summary(gpu) == summary(run(CompiledEngine(), model, options)), name
        assert summary(gpu) == summary(check(model, options, engine="reference")), name


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
def test_gpu_counts_messages_like_the_reference(symmetry: bool) -> None:
    """On a GPU (NVRTC's build of the same code; tests/test_gpu_device.py's conditions)."""
    options = CheckOptions(symmetry=symmetry)
    for name, model in _gpu_specs():
        gpu = run(GpuEngine(), model, options)
        assert summary(gpu) == summary(check(model, options, engine="reference")), name
