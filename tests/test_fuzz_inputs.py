"""Hostile input never crashes the tool (issue 14, item 6): a Hypothesis strategy mutates the
bundled specs (token and line edits, huge numbers, deep nesting, bad bytes) and each mutant
goes through one verb of the command line, in-process through ``coherence.cli.main``: ``check``
with small bounds, ``export --to murphi|promela``, ``diagram --kind fsm --format dot``, or the
front end's ``load_spec``.

Every case must end with no traceback (no exception out of ``main``, no ``Traceback`` on
stderr), an exit code of 0, 1, 2 or 3 (1 only from ``check``), every error located
(``file:line:col: error:`` inside the file, or ``<command line>: error: --param ...`` for the
one command-line value the harness passes), ``--json`` output that is one JSON document with
the same exit code, and within a per-case time limit (a SIGALRM timer). A small sample also
runs as a real subprocess under a timeout.

A fifth of the cases start from a random well-formed spec (``tests/strategies.py``) instead,
as drawn or with one or two edits, so that what loads also reaches the back ends.

The default tier runs 1,000 cases (cheap ones: most mutants fail to load, and the expensive
verbs only run on those that load); the slow tier runs 10,000.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import hypothesis
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from strategies import specs as random_specs

from coherence.cli import main
from coherence.errors import SpecError
from coherence.spec.load import load_spec

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.coh"))
MUTANTS = sorted((ROOT / "specs" / "mutants").glob("*.coh"))
# The default tier mutates the bundled specs and a few mutants (cheaper); the slow tier all.
SMALL_CORPUS = [p.read_bytes() for p in SPECS + MUTANTS[::6]]
CORPUS = [p.read_bytes() for p in SPECS + MUTANTS]
CASE_SECONDS = 30  # per case; generous, as the machine may be loaded
VERBS = ("load", "load", "check", "murphi", "promela", "dot")  # load: the cheapest

_TOKEN = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|:=|->|&&|\|\||==|!=|<=|>=|\.\.|::|\S")
_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.DOTALL)
_POOL = [w.encode() for w in (  # noqa: SIM905
    "machine state on if else for send to goto forall exists param range message network var "
    "init invariant property rule when in let undefine broadcast except perform by assert stall "
    "ghost aux cache home stable transient true false self msg undefined agent value int set "
    "array bool node agents values lines coherence load store bus fifo unordered capacity "
    "; : , . .. :: := -> && || == != < > <= >= + - ! ( ) { } [ ] = 0 1 2 3 16 17 255 256 "
    "65536 65537 2147483647 2147483648 -1 \"s\" /* */ //").split()]
_BAD_BYTES = [b"\xff", b"\xc3", b"\x00", b"\xef\xbb\xbf", b"\r", b"\x0c", b"\xe2\x80\xa8",
              b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]


def _nest(kind: str, n: int) -> bytes:
    """``n`` levels of one kind of nesting, as a fragment to splice in."""
    if kind == "not":
        return b"!" * n + b"true"
    if kind == "parens":
        return b"(" * n + b"true" + b")" * n
    if kind == "and":
        return b" && ".join([b"true"] * n)
    if kind == "implies":
        return b" -> ".join([b"true"] * n)
    if kind == "plus":
        return b" + ".join([b"1"] * n)
    if kind == "neg":
        return b"-" * n + b"1"
    if kind == "if":
        return b"if true { " * n + b"goto I;" + b" }" * n
    if kind == "elif":
        return b"if true { }" + b" else if true { }" * n
    if kind == "forall":
        return b"".join(b"forall a%d: agent :: " % i for i in range(n)) + b"true"
    return b"array<agent, " * n + b"bool" + b">" * n  # a type


def _code_tokens(data: bytes) -> list[re.Match[bytes]]:
    """The tokens of ``data`` outside comments (edits inside comments change nothing)."""
    blank = _COMMENT.sub(lambda m: b" " * len(m.group()), data)
    return list(_TOKEN.finditer(blank))


@st.composite
def mutated_specs(draw: st.DrawFn, corpus: list[bytes] = CORPUS) -> tuple[str, bytes]:
    """A bundled spec with one to three edits."""
    return "bundled", _edit(draw, bytearray(draw(st.sampled_from(corpus))), corpus,
                            draw(st.integers(1, 3)))


@st.composite
def mutated_random_specs(draw: st.DrawFn) -> tuple[str, bytes]:
    """A random well-formed spec (tests/strategies.py), as drawn or with one or two edits."""
    text = draw(random_specs()).encode()
    return "random", _edit(draw, bytearray(text), [text], draw(st.integers(0, 2)))


def _edit(draw: st.DrawFn, data: bytearray, corpus: list[bytes], edits: int) -> bytes:
    """``data`` with ``edits`` edits; ``corpus`` gives lines to splice in."""
    for _ in range(edits):
        op = draw(st.sampled_from(["token", "token", "line", "number", "nest", "bytes"]))
        if op == "line":
            lines = bytes(data).split(b"\n")
            code = [i for i, ln in enumerate(lines)
                    if ln.strip() and not ln.lstrip().startswith(b"//")] or [0]
            i = draw(st.sampled_from(code))
            how = draw(st.sampled_from(["delete", "duplicate", "swap", "foreign"]))
            if how == "delete":
                del lines[i]
            elif how == "duplicate":
                lines.insert(i, lines[i])
            elif how == "swap":
                j = draw(st.sampled_from(code))
                lines[i], lines[j] = lines[j], lines[i]
            else:
                other = draw(st.sampled_from(corpus)).split(b"\n")
                lines.insert(i, draw(st.sampled_from(other)))
            data = bytearray(b"\n".join(lines))
            continue
        tokens = _code_tokens(bytes(data)) if op in ("token", "nest", "number") else []
        if op == "token" and tokens:
            t = draw(st.sampled_from(tokens))
            how = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
            new = {"delete": b"", "duplicate": t.group() + b" " + t.group(),
                   "replace": draw(st.sampled_from(_POOL)) if draw(st.booleans())
                   else draw(st.sampled_from(tokens)).group()}[how]
            data[t.start():t.end()] = new
        elif op == "number":
            ints = [t for t in tokens if t.group().isdigit()] or tokens
            if ints:
                t = draw(st.sampled_from(ints))
                digits = draw(st.sampled_from([10, 11, 19, 20, 100, 4300, 4301, 6000]))
                data[t.start():t.end()] = b"9" * digits
        elif op == "nest" and tokens:
            kind = draw(st.sampled_from(["not", "parens", "and", "implies", "plus", "neg", "if",
                                         "elif", "forall", "type"]))
            n = draw(st.sampled_from([4, 31, 32, 33, 63, 64, 65, 100, 330, 490, 1000, 3000]))
            t = draw(st.sampled_from(tokens))
            where = draw(st.sampled_from(["replace", "before"]))
            start = t.start()
            data[start:t.end() if where == "replace" else start] = _nest(kind, n)
        else:  # bad bytes, a byte-order mark, or a truncation
            how = draw(st.sampled_from(["insert", "insert", "bom", "truncate", "random"]))
            at = draw(st.integers(0, len(data)))
            if how == "insert":
                data[at:at] = draw(st.sampled_from(_BAD_BYTES))
            elif how == "bom":
                data[0:0] = b"\xef\xbb\xbf"
            elif how == "truncate":
                del data[at:]
            else:
                data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def alarm(signum: int, frame: FrameType | None) -> None:
        raise _Hang(f"no answer within {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _argv(verb: str, spec: Path, out: Path, symmetry: bool, as_json: bool,
          engine: str = "reference") -> list[str]:
    extra = ["--json"] if as_json else []
    if verb == "check":
        return ["check", str(spec), "--max-states", "200", "--agents", "2", "--engine", engine,
                *([] if symmetry else ["--no-symmetry"]), *extra]
    if verb in ("murphi", "promela"):
        return ["export", str(spec), "--to", verb, "-o", str(out / "model.out"), *extra]
    return ["diagram", str(spec), "--kind", "fsm", "--format", "dot", "--out", str(out / "d"),
            *extra]


def assert_located(message: str, spec: Path, text: bytes) -> None:
    """The first line of an error: ``file:line:col: error:`` inside the file, or a command-line
    error about the one parameter value the harness passes."""
    first = message.splitlines()[0] if message else ""
    if first.startswith("<command line>: error: --param agents=2:"):
        return
    m = re.match(re.escape(str(spec)) + r":(\d+):(\d+): error: \S", first)
    assert m is not None, f"unlocated error: {message[:300]!r}"
    line, col = int(m.group(1)), int(m.group(2))
    assert 1 <= line <= text.count(b"\n") + 1 and col >= 1, first


def run_case(text: bytes, verb: str, symmetry: bool, as_json: bool, work: Path,
             engine: str = "reference") -> int:
    """One mutant through one verb; returns the exit code after checking every rule above."""
    spec = work / "fuzz.coh"
    spec.write_bytes(text)
    if verb == "load":
        with _time_limit(CASE_SECONDS):
            try:
                load_spec(spec)
            except SpecError as err:
                assert_located(err.render(), spec, text)
                return 2
        return 0
    argv = _argv(verb, spec, work, symmetry, as_json, engine)
    out, err = io.StringIO(), io.StringIO()
    with _time_limit(CASE_SECONDS), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(argv)
    stderr = err.getvalue()
    assert "Traceback" not in stderr, stderr
    assert code in ((0, 1, 2, 3) if verb == "check" else (0, 2)), (argv, code, stderr[-500:])
    if code == 2:
        assert_located(stderr, spec, text)
    if as_json:
        doc = json.loads(out.getvalue())
        assert doc.get("exit_code", code) == code, (argv, doc.get("exit_code"), code)
    return code


def _campaign(cases: int, work: Path, seed: int, slow: bool) -> Counter[str]:
    counts: Counter[str] = Counter()
    bundled = mutated_specs(CORPUS if slow else SMALL_CORPUS)
    random = mutated_random_specs()
    texts = st.sampled_from([True, False, False, False, False]).flatmap(
        lambda pick_random: random if pick_random else bundled)  # a fifth are random specs

    # symmetry's soundness audit costs most of a small check, and the compiled engine a C
    # compiler run per spec: both in the slow tier only (--engine auto in one check in 20)
    @hypothesis.seed(seed)
    @settings(max_examples=cases, deadline=None, database=None,
              phases=[Phase.generate, Phase.shrink], print_blob=True,
              suppress_health_check=list(HealthCheck))
    @given(source=texts, verb=st.sampled_from(VERBS),
           symmetry=st.booleans() if slow else st.just(False), as_json=st.booleans(),
           engine=st.sampled_from(["reference"] * 19 + ["auto"]) if slow
           else st.just("reference"))
    def case(source: tuple[str, bytes], verb: str, symmetry: bool, as_json: bool,
             engine: str) -> None:
        origin, text = source
        code = run_case(text, verb, symmetry, as_json, work, engine)
        counts["cases"] += 1
        counts[f"{origin} specs"] += 1
        counts[f"{verb} exit {code}"] += 1

    case()
    return counts


def _report(counts: Counter[str], seconds: float) -> str:
    return f"{counts['cases']} cases in {seconds:.0f} s: " + ", ".join(
        f"{k} x{v}" for k, v in sorted(counts.items()) if k != "cases")


def test_fuzz_default_tier(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    counts = _campaign(1000, tmp_path, seed=0, slow=False)
    print(_report(counts, time.perf_counter() - t0))
    assert counts["cases"] >= 1000 and counts["random specs"] > 100
    # the campaign reaches both sides: mutants that load and run, and rejected ones
    assert sum(v for k, v in counts.items() if k.endswith("exit 2")) > 100
    assert sum(v for k, v in counts.items() if k.endswith("exit 0")) > 100


@pytest.mark.slow
def test_fuzz_slow_tier(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    counts = _campaign(10_000, tmp_path, seed=1, slow=True)
    print(_report(counts, time.perf_counter() - t0))
    assert counts["cases"] >= 10_000


@given(source=mutated_specs(), verb=st.sampled_from(["check", "murphi", "dot"]))
@settings(max_examples=4, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_fuzz_subprocess_sample(source: tuple[str, bytes], verb: str,
                                tmp_path_factory: pytest.TempPathFactory) -> None:
    """A few mutants as a real process under a timeout: no traceback, a known exit code."""
    text = source[1]
    work = tmp_path_factory.mktemp("fuzz")
    spec = work / "fuzz.coh"
    spec.write_bytes(text)
    argv = _argv(verb, spec, work, symmetry=True, as_json=False)
    proc = subprocess.run([sys.executable, "-m", "coherence.cli", *argv], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1, 2, 3), proc.stderr
    if proc.returncode == 2:
        assert_located(proc.stderr, spec, text)
