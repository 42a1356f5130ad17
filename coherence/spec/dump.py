"""A readable, deterministic text dump of the IR (golden tests; `coherence check --dump-ir`)."""

from __future__ import annotations

from typing import Any

import attrs


def dump(node: Any, indent: int = 0) -> str:
    pad = "  " * indent
    if attrs.has(type(node)):
        # spans are not part of the IR; an empty tuple left at its default (e.g. a spec with
        # no assumptions) is not shown, so that adding such a field changes no existing dump
        fields = [f for f in attrs.fields(type(node)) if f.eq and not (
            f.default == () and getattr(node, f.name) == ())]
        simple = all(not _is_complex(getattr(node, f.name)) for f in fields)
        name = type(node).__name__
        if simple:
            inner = ", ".join(f"{f.name}={_scalar(getattr(node, f.name))}" for f in fields)
            return f"{name}({inner})"
        lines = [f"{name}("]
        for f in fields:
            lines.append(f"{pad}  {f.name}={dump(getattr(node, f.name), indent + 1)}")
        lines.append(f"{pad})")
        return "\n".join(lines)
    if isinstance(node, tuple):
        if not node:
            return "()"
        if not any(_is_complex(x) for x in node):
            return "(" + ", ".join(_scalar(x) for x in node) + ")"
        return "(\n" + "\n".join(f"{pad}  {dump(x, indent + 1)}" for x in node) + f"\n{pad})"
    return _scalar(node)


def _is_complex(x: Any) -> bool:
    if isinstance(x, tuple):
        return any(_is_complex(y) or attrs.has(type(y)) for y in x)
    if attrs.has(type(x)):
        return any(_is_complex(getattr(x, f.name)) or attrs.has(type(getattr(x, f.name)))
                   for f in attrs.fields(type(x)) if f.eq)
    return False


def _scalar(x: Any) -> str:
    if attrs.has(type(x)):
        return dump(x)
    return repr(x)
