"""Pass 1: text to parse tree (Lark LALR). Syntax errors become located SpecErrors."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from coherence.errors import Span, SpecError

# Readable names for the terminals Lark reports as expected.
_TERMINAL_NAMES = {
    "SEMICOLON": "';'", "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "COLON": "':'", "COMMA": "','", "EQUAL": "'='",
    "NAME": "a name", "INT": "a number", "MORETHAN": "'>'", "LESSTHAN": "'<'",
    "__ANON_0": "':='", "DOT": "'.'", "STATE_KIND": "'stable', 'transient'",
    "MACHINE_KIND": "'cache', 'home'", "GHOST": "'ghost'", "AUX": "'aux'",
    "QUANT": "'forall', 'exists'", "CMP_OP": "a comparison", "ADD_OP": "'+', '-'",
    "ESCAPED_STRING": "a string", "PLUS": "'+'", "MINUS": "'-'", "BANG": "'!'",
}


@cache
def _parser() -> lark.Lark:
    grammar = files("coherence.spec").joinpath("grammar.lark").read_text()
    return lark.Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _describe(token: lark.Token) -> str:
    if token.type == "$END":
        return "end of file"
    return repr(str(token))


def parse(text: str, file: str) -> lark.Tree:
    try:
        return _parser().parse(text)
    except UnexpectedToken as e:
        expected = sorted({_TERMINAL_NAMES.get(t, repr(t.lower())) for t in e.expected
                           if not t.startswith("__ANON") or t in _TERMINAL_NAMES})
        hint = f" (expected {', '.join(expected[:8])})" if expected else ""
        raise SpecError(f"unexpected {_describe(e.token)}{hint}",
                        Span(file, e.line, e.column), text) from None
    except UnexpectedCharacters as e:
        raise SpecError(f"unexpected character {text[e.pos_in_stream]!r}",
                        Span(file, e.line, e.column), text) from None
    except UnexpectedEOF as e:
        lines = text.splitlines() or [""]
        raise SpecError("unexpected end of file", Span(file, len(lines), len(lines[-1]) + 1),
                        text) from e
    except UnexpectedInput as e:  # pragma: no cover - Lark's other cases
        raise SpecError(f"syntax error: {e}", Span(file, e.line, e.column), text) from None
