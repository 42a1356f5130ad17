"""Minimising a failing list of actions by replay, after Hypothesis has shrunk it.

Hypothesis shrinks the choices it made, so a deleted step can shift which instance a later
choice picks. Here the actions themselves are concrete, so deleting one keeps every other as
it was: a classic ddmin-style pass (Zeller & Hildebrandt, 2002) over chunks of halving size,
where a step that a deletion disabled (the receipt of a message no longer sent) is dropped
too.
Every candidate is judged by replaying it through the semantics with every check
(``coherence.testing.run.replay``), so the result is a real trace of the same failure.
"""

from __future__ import annotations

from collections.abc import Sequence

from coherence.semantics import Action, Semantics
from coherence.testing.run import Problem, replay


def same_failure(a: Problem, b: Problem | None) -> bool:
    if b is None or (a.kind, a.name) != (b.kind, b.name):
        return False
    return a.kind != "error" or a.message == b.message


def minimise(sem: Semantics, actions: Sequence[Action], problem: Problem,
             oracle: str = "coherence", coherence_name: str = "coherence",
             max_replays: int = 5000) -> tuple[list[Action], Problem]:
    """The shortest failing prefix of ``actions``, then chunks deleted while it still fails
    the same way. Returns the actions and the problem as the final replay reports it."""
    replays = 0

    def attempt(acts: list[Action]) -> tuple[list[Action], Problem] | None:
        nonlocal replays
        replays += 1
        found, taken = replay(sem, acts, oracle, coherence_name, skip_disabled=True)
        if found is not None and same_failure(problem, found):
            return taken, found
        return None

    first = attempt(list(actions))
    if first is None:
        raise ValueError("the actions do not reproduce the failure")
    best, found = first
    chunk = max(1, len(best) // 2)
    while replays < max_replays:
        changed = False
        i = 0
        while i < len(best) and replays < max_replays:
            got = attempt(best[:i] + best[i + chunk:])
            if got is not None:
                best, found = got
                changed = True
            else:
                i += chunk
        if chunk > 1:
            chunk //= 2
        elif not changed:
            break
    return best, found
