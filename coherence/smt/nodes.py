"""The ``Node`` sort of the parameterised encoding (``param``) and its named constants: its own
module so that the encoding's helpers (``param_count``) share them without importing ``param``."""

from __future__ import annotations

from typing import Any

import z3

NODE = z3.DeclareSort("Node")
HOME = z3.Const("home", NODE)
UNDEF_N = z3.Const("undefined_node", NODE)


def is_agent(x: Any) -> Any:
    return z3.And(x != HOME, x != UNDEF_N)


def node_constants(t: Any) -> list[Any]:
    """The uninterpreted ``Node`` constants of ``t`` outside its quantifiers."""
    seen: set[int] = set()
    out: list[Any] = []
    todo = [t]
    while todo:
        x = todo.pop()
        if x.get_id() in seen or z3.is_quantifier(x) or not z3.is_app(x):
            continue
        seen.add(x.get_id())
        if (x.num_args() == 0 and x.sort() == NODE
                and x.decl().kind() == z3.Z3_OP_UNINTERPRETED):
            out.append(x)
        todo.extend(x.children())
    return out
