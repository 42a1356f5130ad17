"""Pass 1: text to parse tree (Lark LALR). Syntax errors become located SpecErrors.

The parse tree is then checked against the language's limits (``check_limits``): nesting depth
of expressions, statements and types, and the size of integer literals. Every later walker over
the tree or the IR (lowering, the semantics' compilers, the exporters, the prover, the diagram
printer, the compiled engine's code generator) may recurse on nesting, so this one iterative
check, made before any of them runs, is what keeps them all within Python's recursion limit.
The limits are documented in docs/language.md ("Limits").
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from coherence.errors import Span, SpecError

# The language's limits (docs/language.md, "Limits"), far above any real spec.
MAX_EXPR_DEPTH = 64    # operators nested in one expression (a chain a && b && c counts each)
MAX_STMT_DEPTH = 32    # if / else if / for nested in one block
MAX_TYPE_DEPTH = 4     # array<_, array<_, ...>>, set<_> nested
MAX_INT_DIGITS = 10    # digits of an integer literal ...
MAX_INT = 2**31 - 1    # ... and its largest value (a 32-bit signed int)

# Parse-tree nodes that are one level of expression nesting.
_EXPR_NODES = frozenset({
    "implies", "or_op", "and_op", "not_op", "compare", "member", "arith", "neg", "attr",
    "index", "call", "int_lit", "name", "set_lit", "quant", "not_member", "cond_expr",
    "node_is", "count_expr",
})
_STMT_NODES = frozenset({"if_stmt", "for_stmt"})

# Readable names for the terminals Lark reports as expected.
_TERMINAL_NAMES = {
    "SEMICOLON": "';'", "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "COLON": "':'", "COMMA": "','", "EQUAL": "'='",
    "NAME": "a name", "INT": "a number", "MORETHAN": "'>'", "LESSTHAN": "'<'",
    "__ANON_0": "':='", "DOT": "'.'", "STATE_KIND": "'stable', 'transient'",
    "MACHINE_KIND": "'cache', 'home'", "GHOST": "'ghost'", "AUX": "'aux'",
    "QUANT": "'forall', 'exists'", "CMP_OP": "a comparison", "ADD_OP": "'+', '-'",
    "ESCAPED_STRING": "a string", "PLUS": "'+'", "MINUS": "'-'", "BANG": "'!'",
    "FAIRNESS": "a fairness mark ('fair', 'unfair')", "COUNT": "'count'",
}


@cache
def _parser() -> lark.Lark:
    grammar = files("coherence.spec").joinpath("grammar.lark").read_text()
    return lark.Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _describe(token: lark.Token) -> str:
    if token.type == "$END":
        return "end of file"
    text = str(token)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def parse(text: str, file: str) -> lark.Tree:
    """The parse tree of ``text``, within the language's limits; a leading byte-order mark is
    ignored."""
    text = strip_bom(text)
    try:
        tree = _parser().parse(text)
    except UnexpectedToken as e:
        expected = sorted({_TERMINAL_NAMES.get(t, repr(t.lower())) for t in e.expected
                           if not t.startswith("__ANON") or t in _TERMINAL_NAMES})
        hint = f" (expected {', '.join(expected[:8])})" if expected else ""
        raise SpecError(f"unexpected {_describe(e.token)}{hint}",
                        Span(file, e.line, e.column), text) from None
    except UnexpectedCharacters as e:
        raise SpecError(f"unexpected character {e.char!r}",
                        Span(file, e.line, e.column), text) from None
    except UnexpectedEOF as e:
        lines = text.splitlines() or [""]
        raise SpecError("unexpected end of file", Span(file, len(lines), len(lines[-1]) + 1),
                        text) from e
    except UnexpectedInput as e:  # pragma: no cover - Lark's other cases
        raise SpecError(f"syntax error: {e}", Span(file, e.line, e.column), text) from None
    check_limits(tree, file, text)
    return tree


def strip_bom(text: str) -> str:
    """``text`` without a leading UTF-8 byte-order mark (some editors write one)."""
    return text[1:] if text.startswith("\ufeff") else text


def check_limits(tree: lark.Tree, file: str, text: str) -> None:
    """Reject a tree nested deeper than the language allows, or holding an integer literal too
    large, with a located error. Iterative (an explicit stack), so any input is safe here."""
    # (node, expression depth, statement depth, type depth) of the node's parent context
    stack: list[tuple[lark.Tree | lark.Token, int, int, int]] = [(tree, 0, 0, 0)]
    while stack:
        node, expr, stmt, typ = stack.pop()
        if isinstance(node, lark.Token):
            if node.type == "INT":
                _check_int(node, file, text)
            continue
        kind = node.data
        if kind in _EXPR_NODES:
            # a quantifier with k binders becomes k nested quantifiers
            expr += sum(1 for c in node.children
                        if isinstance(c, lark.Tree) and c.data == "binder") or 1
            if expr > MAX_EXPR_DEPTH:
                raise SpecError(f"expression nested deeper than {MAX_EXPR_DEPTH}",
                                _span(node, file), text)
        elif kind in _STMT_NODES:
            stmt += 1
            if stmt > MAX_STMT_DEPTH:
                raise SpecError(f"statements nested deeper than {MAX_STMT_DEPTH}",
                                _span(node, file), text)
        elif kind == "generic_type":
            typ += 1
            if typ > MAX_TYPE_DEPTH:
                raise SpecError(f"type nested deeper than {MAX_TYPE_DEPTH}",
                                _span(node, file), text)
        for child in node.children:
            if child is not None:
                stack.append((child, expr, stmt, typ))


def _check_int(token: lark.Token, file: str, text: str) -> None:
    digits = str(token).lstrip("0") or "0"
    if len(digits) > MAX_INT_DIGITS or int(digits) > MAX_INT:
        shown = digits if len(digits) <= 20 else f"{digits[:12]}... ({len(digits)} digits)"
        raise SpecError(f"integer {shown} is too large (at most {MAX_INT})",
                        Span(file, token.line or 0, token.column or 0), text)


def _span(node: lark.Tree, file: str) -> Span:
    meta = node.meta
    return Span(file, getattr(meta, "line", 0), getattr(meta, "column", 0))
