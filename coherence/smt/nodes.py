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
