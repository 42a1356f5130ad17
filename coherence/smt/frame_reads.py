"""Which of a state's leaves (its arrays and constants) a formula mentions.

NOTE(frame-unread): an action that writes none of the leaves a property reads leaves that
property the very same formula, so the property after the action is not encoded at all: it is
its hypothesis, and the obligation is settled without Z3 (NOTE(frame-unchanged)). A property
that reads a leaf the action writes is encoded again and asked, never compared: its formula
then holds the written term, so it is not its hypothesis. German's final proof used to encode
each of its 26 properties after each of its 13 actions and compare each with its hypothesis
(``alpha.alpha_equal``); the two steps took about half of building its queries.

The same holds of another action's error after the action. Its hypothesis ("no action errs")
names one choice of that action's parameters, free constants; but each obligation proves the
error impossible for every choice, so the invariant the proof establishes is "no action errs
for any parameters", and an error whose leaves the action leaves alone is settled by it (92 of
German's 182 error obligations).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import z3


def leaf_index(leaves: Sequence[Any]) -> dict[int, int]:
    """Each leaf's AST id, mapped to its position (the state holds the terms, so the ids stay
    theirs)."""
    return {x.get_id(): k for k, x in enumerate(leaves) if isinstance(x, z3.AstRef)}


def leaves_read(formula: Any, index: dict[int, int]) -> frozenset[int]:
    """The positions of the leaves ``formula`` mentions (iterative, each subterm once)."""
    out: set[int] = set()
    seen: set[int] = set()
    todo = [formula]
    while todo:
        x = todo.pop()
        i = x.get_id()
        if i in seen:
            continue
        seen.add(i)
        k = index.get(i)
        if k is not None:
            out.add(k)
        elif z3.is_quantifier(x):
            todo.append(x.body())
        elif z3.is_app(x):
            todo.extend(x.children())
    return frozenset(out)


def leaves_written(before: Sequence[Any], after: Sequence[Any]) -> frozenset[int] | None:
    """The positions whose term differs after a step; None where the two states are not laid
    out alike (then every property is encoded again)."""
    if len(before) != len(after):
        return None
    return frozenset(k for k, (a, b) in enumerate(zip(before, after, strict=True))
                     if a is not b and not (isinstance(a, z3.AstRef) and isinstance(b, z3.AstRef)
                                            and a.eq(b)))
