"""What a failure of ``protocol_test`` shows: the replayed numbered trace and the command that
reproduces it, as ``coherence fuzz`` prints them, and nothing of Hypothesis's internals."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from coherence.testing.fuzz import FuzzResult

# unittest leaves frames of modules with this global out of its tracebacks
__unittest = True


class ProtocolTestFailure(AssertionError):
    """A ``protocol_test`` found a failing run. ``result`` is the whole ``FuzzResult``."""

    def __init__(self, text: str, result: FuzzResult) -> None:
        super().__init__(text)
        self.result = result


def fuzz_command(spec: str | Path, *, seed: int, budget: int, steps: int,
                 agents: int | None = None, params: Sequence[str] = (),
                 oracle: str = "coherence", shrink: str = "replay", skip: Iterable[str] = (),
                 database: str | None = None) -> str:
    """The ``coherence fuzz`` command line that repeats these runs."""
    parts = ["coherence", "fuzz", _shown_path(spec), "--seed", str(seed), "--budget",
             str(budget), "--steps", str(steps)]
    if agents is not None:
        parts += ["--agents", str(agents)]
    for p in params:
        parts += ["--param", p]
    if oracle != "coherence":
        parts += ["--oracle", oracle]
    if shrink != "replay":
        parts += ["--shrink", shrink]
    for s in skip:
        parts += ["--skip", s]
    if database is not None:
        parts += ["--database", database]
    return " ".join(shlex.quote(p) for p in parts)


def _shown_path(spec: str | Path) -> str:
    """Relative to the working directory when it is below it (as a user would type it)."""
    path = Path(spec)
    if not path.is_absolute():
        return str(spec)
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)


def failure_text(result: FuzzResult, reproduce: str) -> str:
    """The failure as ``coherence fuzz`` prints it: property, message, numbered steps."""
    f = result.failure
    assert f is not None
    where = ("a saved example replayed from the example database" if result.from_database
             else f"random run {result.stats.examples_to_failure} of {result.budget}")
    params = ", ".join(f"{k}={v}" for k, v in result.params.items())
    shrunk = (f", minimised by replay from {result.hypothesis_length}"
              if result.hypothesis_length is not None and result.hypothesis_length > f.length
              else "")
    lines = [f"{f.name} ({f.kind}): {f.message}",
             f"found in {where} of {result.spec} ({params}; seed {result.seed}) after "
             f"{result.stats.seconds_to_failure or result.seconds:.2f} s",
             f"trace ({f.length} step{'s' if f.length != 1 else ''}{shrunk}):"]
    lines += [s.render() for s in f.trace]
    lines.append(f"reproduce: {reproduce}")
    return "\n".join(lines)
