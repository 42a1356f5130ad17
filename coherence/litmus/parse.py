"""The litmus file format: a small hand-written parser with located errors.

Grammar (``//`` and ``/* */`` comments)::

    file     := "litmus" NAME [STRING] ";" "locations" NAME ("," NAME)* ";"
                ("init" NAME "=" INT ("," NAME "=" INT)* ";")*
                ("cached" INT NAME ";")*
                ("thread" INT "{" op* "}")+
                "exists" cond ";"
    op       := REG "=" "load" ann NAME ";" | "store" ann NAME (INT | REG) ";" | "fence" ann ";"
              | REG "=" "poll" ann NAME "==" INT ";"    (load again until it returns INT)
    ann      := ("." ORDER)? ("." SCOPE)?
    cond     := conj ("||" conj)* ;  conj := unit ("&&" unit)*
    unit     := "!" unit | "(" cond ")" | (INT ":" REG | NAME) ("==" | "!=") INT

Nothing read is ever evaluated as Python: the file is data (see DESIGN.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from coherence.errors import Span, SpecError, read_source
from coherence.litmus.program import (
    ORDERS_FENCE,
    ORDERS_LOAD,
    ORDERS_STORE,
    SCOPES,
    And,
    Atom,
    Cond,
    Litmus,
    Not,
    Op,
    Or,
)

_TOKEN = re.compile(r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"[^"\n]*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_+\-]*|[0-9]+\+[A-Za-z0-9_+\-]*)
  | (?P<int>[0-9]+)
  | (?P<op>==|!=|&&|\|\||[{}();,:=.!])
""", re.VERBOSE | re.DOTALL)

MAX_THREADS = 8
MAX_VALUE = 7


class _Tok:
    __slots__ = ("kind", "span", "text")

    def __init__(self, kind: str, text: str, span: Span) -> None:
        self.kind, self.text, self.span = kind, text, span

    def show(self) -> str:
        return "end of file" if self.kind == "eof" else repr(self.text)


def _tokens(text: str, file: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos, line, col = 0, 1, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SpecError(f"unexpected character {text[pos]!r}", Span(file, line, col), text)
        kind = m.lastgroup or "ws"
        chunk = m.group()
        if kind != "ws":
            out.append(_Tok(kind, chunk, Span(file, line, col)))
        newlines = chunk.count("\n")
        if newlines:
            line += newlines
            col = len(chunk) - chunk.rfind("\n")
        else:
            col += len(chunk)
        pos = m.end()
    out.append(_Tok("eof", "", Span(file, line, col)))
    return out


class _Parser:
    def __init__(self, text: str, file: str) -> None:
        self.text, self.file = text, file
        self.toks = _tokens(text, file)
        self.i = 0

    # -------------------------------------------------------- helpers

    def err(self, message: str, span: Span) -> SpecError:
        return SpecError(message, span, self.text)

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, text: str) -> bool:
        return self.tok.kind in ("op", "name") and self.tok.text == text

    def expect(self, text: str) -> _Tok:
        if not self.at(text):
            raise self.err(f"expected {text!r}, got {self.tok.show()}", self.tok.span)
        return self.next()

    def name(self, what: str) -> _Tok:
        if self.tok.kind != "name":
            raise self.err(f"expected {what}, got {self.tok.show()}", self.tok.span)
        return self.next()

    def int_(self, what: str) -> _Tok:
        if self.tok.kind != "int":
            raise self.err(f"expected {what} (a number), got {self.tok.show()}", self.tok.span)
        return self.next()

    # -------------------------------------------------------- file

    def parse(self) -> Litmus:
        self.expect("litmus")
        name = self.name("the test's name").text
        doc = ""
        if self.tok.kind == "string":
            doc = self.next().text[1:-1]
        self.expect(";")
        self.expect("locations")
        locs = [self.name("a location")]
        while self.at(","):
            self.next()
            locs.append(self.name("a location"))
        self.expect(";")
        seen: dict[str, Span] = {}
        for t in locs:
            if t.text in seen:
                raise self.err(f"location {t.text!r} declared twice (first at {seen[t.text]})",
                               t.span)
            seen[t.text] = t.span
        self.locations = [t.text for t in locs]
        init: dict[str, int] = {}
        while self.at("init"):
            self.next()
            while True:
                loc = self.location()
                self.expect("=")
                init[loc] = self.value()
                if not self.at(","):
                    break
                self.next()
            self.expect(";")
        cached: list[tuple[int, str]] = []
        cached_spans: list[Span] = []
        while self.at("cached"):
            self.next()
            t = self.int_("a thread number")
            cached.append((int(t.text), self.location()))
            cached_spans.append(t.span)
            self.expect(";")
        threads: dict[int, tuple[Op, ...]] = {}
        while self.at("thread"):
            kw = self.next()
            t = self.int_("a thread number")
            tid = int(t.text)
            if tid in threads:
                raise self.err(f"thread {tid} defined twice", t.span)
            if tid != len(threads):
                raise self.err(f"threads must be numbered 0, 1, ... in order: expected "
                               f"thread {len(threads)}, got {tid}", t.span)
            if tid >= MAX_THREADS:
                raise self.err(f"at most {MAX_THREADS} threads", kw.span)
            threads[tid] = self.thread_body(kw.span)
        if not threads:
            raise self.err(f"expected 'thread', got {self.tok.show()}", self.tok.span)
        for (tid, _), span in zip(cached, cached_spans, strict=True):
            if tid not in threads:
                raise self.err(f"cached: there is no thread {tid}", span)
        self.threads = threads
        self.expect("exists")
        cond = self.cond()
        self.expect(";")
        if self.tok.kind != "eof":
            raise self.err(f"expected end of file, got {self.tok.show()}", self.tok.span)
        return Litmus(name=name, doc=doc, locations=tuple(self.locations),
                      init=tuple(sorted(init.items())), cached=tuple(cached),
                      threads=tuple(threads[i] for i in range(len(threads))),
                      condition=cond, file=self.file)

    def location(self) -> str:
        t = self.name("a location")
        if t.text not in self.locations:
            raise self.err(f"unknown location {t.text!r} (declared: "
                           f"{', '.join(self.locations)})", t.span)
        return t.text

    def value(self) -> int:
        t = self.int_("a value")
        v = int(t.text)
        if v > MAX_VALUE:
            raise self.err(f"value {v} is too large (at most {MAX_VALUE})", t.span)
        return v

    # -------------------------------------------------------- threads

    def thread_body(self, where: Span) -> tuple[Op, ...]:
        self.expect("{")
        ops: list[Op] = []
        regs: set[str] = set()
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.err("expected '}', got end of file", self.tok.span)
            op = self.op(regs)
            if op.kind == "load":
                regs.add(op.reg or "")
            ops.append(op)
        self.next()
        if not any(op.kind != "fence" for op in ops):
            raise self.err("a thread needs at least one load or store", where)
        return tuple(ops)

    def annotation(self, kind: str, orders: tuple[str, ...]) -> tuple[str | None, str | None]:
        order = scope = None
        while self.at("."):
            self.next()
            t = self.name("an ordering or scope")
            if t.text in orders and order is None and scope is None:
                order = t.text
            elif t.text in SCOPES and scope is None:
                scope = t.text
            else:
                raise self.err(f"{kind}: unknown or misplaced annotation {t.text!r} (orderings: "
                               f"{', '.join(orders)}; scopes: {', '.join(SCOPES)})", t.span)
        if kind == "fence" and order is None and scope is not None:
            order = "sc"
        if order in ("weak",) and scope is not None:
            raise self.err("a weak access takes no scope", self.toks[self.i - 1].span)
        return order, scope

    def op(self, regs: set[str]) -> Op:
        start = self.tok
        if self.at("store"):
            self.next()
            order, scope = self.annotation("store", ORDERS_STORE)
            loc = self.location()
            if self.tok.kind == "int":
                value: int | str = self.value()
            else:
                r = self.name("a value or a register")
                if r.text not in regs:
                    raise self.err(f"register {r.text!r} is not loaded earlier in this thread",
                                   r.span)
                value = r.text
            self.expect(";")
            return Op("store", loc, None, value, order, scope, start.span)
        if self.at("fence"):
            self.next()
            order, scope = self.annotation("fence", ORDERS_FENCE)
            self.expect(";")
            return Op("fence", None, None, None, order, scope, start.span)
        if self.tok.kind == "name" and self.toks[self.i + 1].text == "=":
            reg = self.next()
            if reg.text in regs:
                raise self.err(f"register {reg.text!r} is loaded twice in this thread", reg.span)
            if reg.text in self.locations:
                raise self.err(f"{reg.text!r} is a location, not a register", reg.span)
            self.expect("=")
            poll = self.at("poll")
            if poll:
                self.next()
            else:
                self.expect("load")
            order, scope = self.annotation("load", ORDERS_LOAD)
            loc = self.location()
            until = None
            if poll:
                self.expect("==")
                until = self.value()
            self.expect(";")
            return Op("load", loc, reg.text, None, order, scope, start.span, until)
        raise self.err(f"expected 'REG = load', 'REG = poll', 'store' or 'fence', got "
                       f"{start.show()}", start.span)

    # -------------------------------------------------------- conditions

    def cond(self) -> Cond:
        items = [self.conj()]
        while self.at("||"):
            self.next()
            items.append(self.conj())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def conj(self) -> Cond:
        items = [self.unit()]
        while self.at("&&"):
            self.next()
            items.append(self.unit())
        return items[0] if len(items) == 1 else And(tuple(items))

    def unit(self) -> Cond:
        if self.at("!"):
            self.next()
            return Not(self.unit())
        if self.at("("):
            self.next()
            c = self.cond()
            self.expect(")")
            return c
        start = self.tok
        if start.kind == "int":
            tid = int(self.next().text)
            self.expect(":")
            reg = self.name("a register")
            if tid not in self.threads:
                raise self.err(f"there is no thread {tid}", start.span)
            if not any(op.reg == reg.text for op in self.threads[tid]):
                raise self.err(f"thread {tid} loads no register {reg.text!r}", reg.span)
            name = f"{tid}:{reg.text}"
        elif start.kind == "name":
            name = self.location()
        else:
            raise self.err(f"expected 'T:reg' or a location, got {start.show()}", start.span)
        if not (self.at("==") or self.at("!=")):
            raise self.err(f"expected '==' or '!=', got {self.tok.show()}", self.tok.span)
        negated = self.next().text == "!="
        return Atom(name, self.value(), negated, start.span)


def parse_litmus(text: str, file: str = "<litmus>") -> Litmus:
    return _Parser(text, file).parse()


def load_litmus(path: str | Path) -> Litmus:
    text = read_source(path, "litmus")
    return parse_litmus(text, str(path))
