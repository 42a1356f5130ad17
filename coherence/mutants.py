"""Seeded-bug specs (``specs/mutants/``): run each, require it to be caught, score the set.

A mutant is a complete spec whose header says what was changed and what should catch it:

    // MUTANT OF: specs/msi_directory.coh
    // CHANGE: GetM in S sends no Inv to the sharers
    // EXPECT: swmr,error        (property names, or the kinds deadlock / no-transition / error)
    // AGENTS: 2
    // SKIP: coherent            (optional: properties to leave out, comma separated)

Directives are parsed strictly (unknown keys and bad values are located errors), never
evaluated. The search stops at the first failure: BFS makes that the shortest counterexample.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import attrs

from coherence.errors import Span, SpecError, read_source

_DIRECTIVE = re.compile(r"^// ([A-Z]+(?: [A-Z]+)?):\s*(.*?)\s*$")
_KEYS = {"MUTANT OF", "CHANGE", "EXPECT", "AGENTS", "SKIP"}


@attrs.frozen
class Mutant:
    path: str
    base: str
    change: str
    expect: tuple[str, ...]
    agents: int
    skip: tuple[str, ...]


@attrs.frozen
class MutantResult:
    mutant: Mutant
    caught: bool
    expected_caught: bool  # one of EXPECT is among the failures
    failed: tuple[str, ...]  # names and kinds of the failures found
    length: int | None  # shortest counterexample length
    states: int
    seconds: float


def parse_header(path: Path) -> Mutant:
    fields: dict[str, str] = {}
    for i, line in enumerate(read_source(path, "mutant").splitlines(), 1):
        if not line.startswith("//"):
            break
        m = _DIRECTIVE.match(line)
        if m is None:
            continue
        key, value = m.groups()
        if key not in _KEYS:
            raise SpecError(f"unknown mutant directive '{key}' (expected: "
                            f"{', '.join(sorted(_KEYS))})", Span(str(path), i, 4))
        fields[key] = value
    for key in ("MUTANT OF", "CHANGE", "EXPECT"):
        if key not in fields:
            raise SpecError(f"mutant header lacks '// {key}: ...'", Span(str(path), 1, 1))
    agents = fields.get("AGENTS", "2")
    if re.fullmatch(r"[0-9]{1,2}", agents) is None or not 1 <= int(agents) <= 8:
        raise SpecError(f"AGENTS must be an integer 1..8, got {agents!r}", Span(str(path), 1, 1))
    split = lambda s: tuple(x.strip() for x in s.split(",") if x.strip())  # noqa: E731
    return Mutant(str(path), fields["MUTANT OF"], fields["CHANGE"], split(fields["EXPECT"]),
                  int(agents), split(fields.get("SKIP", "")))


def run_mutant(mutant: Mutant, agents: int | None = None,
               params: dict[str, int] | None = None) -> MutantResult:
    from coherence.engines import check
    from coherence.results import CheckOptions
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = drop_properties(load_spec(mutant.path, {**(params or {}),
                                                    "agents": agents or mutant.agents}),
                            list(mutant.skip))
    t0 = time.perf_counter()
    result = check(model, CheckOptions(symmetry=True, stop_at_first=True, liveness=True))
    seconds = time.perf_counter() - t0
    failed = tuple(sorted({f.name for f in result.failures} | {f.kind for f in result.failures}))
    return MutantResult(
        mutant, result.verdict == "fails", any(e in failed for e in mutant.expect), failed,
        min((f.length for f in result.failures), default=None), result.states, seconds)


def find_mutants(directory: str | Path) -> list[Path]:
    d = Path(directory)
    if d.is_file():
        return [d]
    if not d.is_dir():
        raise SpecError("no such directory", Span(str(directory), 0, 0))
    found = sorted(d.glob("*.coh"))
    if not found:  # a score of 0/0 would read as a verdict on nothing
        raise SpecError("no mutant specs (*.coh) in this directory", Span(str(directory), 0, 0))
    return found
