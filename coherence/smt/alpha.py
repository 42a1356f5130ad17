"""Whether two Z3 terms are the same formula up to the names of their bound variables.

NOTE(frame-unchanged): a goal whose property after the action is its hypothesis is settled
without Z3. On MSI with its 154 inferred lines a third of the obligations are such frames,
and some of them (a count of messages in flight) kept the quantified solver, the ground try
and the CTI search busy for minutes. The proof finds them by the leaves each property reads
(NOTE(frame-unread), ``frame_reads``); this comparison is what the tests hold that shortcut
to (every property encoded again after the action and compared), and what tells named sets
apart from their definitions (NOTE(count-set-names)'s tests). The flat encoder names bound
variables by depth (NOTE(bound-names)); the hierarchical encoder and statements' loops make
fresh names (``i!1205``), hence "up to bound names".
"""

from __future__ import annotations

from typing import Any

import z3


def alpha_equal(a: Any, b: Any) -> bool:
    """``a`` and ``b`` differ at most in the names of bound variables (and patterns, which
    only guide instantiation): the same applications of the same declarations, the same
    quantifier kinds, variable sorts and de Bruijn indices. Iterative, each pair once."""
    todo = [(a, b)]
    seen: set[tuple[int, int]] = set()
    while todo:
        x, y = todo.pop()
        if x.eq(y):
            continue
        key = (x.get_id(), y.get_id())
        if key in seen:
            continue
        seen.add(key)
        if z3.is_quantifier(x) or z3.is_quantifier(y):
            if not (z3.is_quantifier(x) and z3.is_quantifier(y) and _same_binder(x, y)):
                return False
            todo.append((x.body(), y.body()))
        elif z3.is_var(x) or z3.is_var(y):
            if not (z3.is_var(x) and z3.is_var(y)
                    and z3.get_var_index(x) == z3.get_var_index(y) and x.sort().eq(y.sort())):
                return False
        elif not (x.decl().eq(y.decl()) and x.num_args() == y.num_args()):
            return False
        else:
            todo.extend(zip(x.children(), y.children(), strict=True))
    return True


def _same_binder(x: Any, y: Any) -> bool:
    return (x.is_forall() == y.is_forall() and x.is_exists() == y.is_exists()
            and x.is_lambda() == y.is_lambda() and x.num_vars() == y.num_vars()
            and all(x.var_sort(i).eq(y.var_sort(i)) for i in range(x.num_vars())))
