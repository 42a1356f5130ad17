"""NOTE(formula-digest): a SHA-256 of Z3 formulas that is the same in every process that builds
them, so a record "this obligation is unsat" (NOTE(proof-cache)) can be found again by a run
on another machine, or by a later version of the tool that encodes the obligation the same way.

Z3's own printing does not do: it numbers let-bindings by term ids, and a fresh constant's
name (``s!12``) by how many were made before, both of which follow the order in which a
process made its terms (the same MSI obligation printed differently in two processes). The
digest reads the formula as a DAG instead, each distinct node once, in depth-first order from
the assertions in their order:
- a sort by its name; a datatype's (an enumeration's too) also by its constructors and their
  fields' sorts, as another process may declare the same name with other members;
- an application: its declaration's kind, name, parameters, domain and range, then its
  arguments (by their place in that order); an interpreted constant (a numeral, ``true``)
  also by its value;
- a quantifier or lambda: its kind, its bound variables' names (a fresh one without its
  number) and sorts, its body (patterns and weights change no model, and are left out); a
  bound variable: its de Bruijn index;
- a fresh name (``prefix!N``, made by ``FreshConst``/``FreshFunction``) is renamed by the order
  it is first met in: a one-to-one renaming of uninterpreted symbols, which keeps the
  formula's satisfiability. Every other name is kept as it is, under another prefix, so no
  renamed name can equal a kept one.
Two formulas with one digest are therefore the same formula up to renaming fresh symbols (as
far as SHA-256 is collision-free), and one is unsat exactly when the other is.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import z3

FRESH = re.compile(r"^(.*)!(\d+)$")


class Digest:
    """The digest's state after some assertions: a query's shared hypotheses are read once,
    and each goal after them from a copy (``extended``)."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}  # Z3 ast id -> its place in the order
        self.fresh: dict[str, str] = {}  # a fresh name -> its canonical name
        self.roots: list[int] = []
        self.hash = hashlib.sha256(b"coherence-formula-digest 2\n")
        self._sorts: dict[int, str] = {}
        self._decls: dict[int, str] = {}

    def copy(self) -> Digest:
        other = Digest.__new__(Digest)
        other.index = dict(self.index)
        other.fresh = dict(self.fresh)
        other.roots = list(self.roots)
        other.hash = self.hash.copy()
        other._sorts = self._sorts  # the same strings for the same ids: shared
        other._decls = dict(self._decls)  # a declaration's string holds a fresh name's rank
        return other

    def add(self, *formulas: Any) -> Digest:
        for f in formulas:
            self.roots.append(self._node(f))
        return self

    def extended(self, *formulas: Any) -> str:
        """The hex digest of what was added, then ``formulas`` (this state is unchanged)."""
        return self.copy().add(*formulas).hexdigest()

    def relative(self, formula: Any) -> str | None:
        """NOTE(proof-cache-subsets): the digest of ``formula`` read after what was added (the
        anchor), or None where it names a fresh symbol the anchor does not: formulas read
        this way from one anchor share their fresh symbols only through it, so a set of them
        stands for their conjunction up to the anchor's renaming."""
        other = self.copy()
        known = len(other.fresh)
        other.add(formula)
        return other.hexdigest() if len(other.fresh) == known else None

    def hexdigest(self) -> str:
        h = self.hash.copy()
        h.update(("roots " + ",".join(map(str, self.roots))).encode())
        return h.hexdigest()

    def _sort(self, s: Any) -> str:
        k = s.get_id()
        text = self._sorts.get(k)
        if text is None:
            text = self._sorts[k] = _sort_text(s)
        return text

    def _name(self, name: str) -> str:
        m = FRESH.match(name)
        if m is None:
            return f"n:{name}"
        canon = self.fresh.get(name)
        if canon is None:
            canon = self.fresh[name] = f"f:{m.group(1)}:{len(self.fresh)}"
        return canon

    def _param(self, p: Any) -> str:
        if isinstance(p, z3.FuncDeclRef):
            return "d:" + self._decl(p)
        if isinstance(p, z3.SortRef):
            return "s:" + self._sort(p)
        if isinstance(p, z3.ExprRef):
            return f"e:{self._node(p)}"
        return f"v:{type(p).__name__}:{p!r}"

    def _decl(self, d: Any) -> str:
        k = d.get_id()
        text = self._decls.get(k)
        if text is None:
            dom = ",".join(self._sort(d.domain(i)) for i in range(d.arity()))
            params = ",".join(self._param(p) for p in d.params())
            text = self._decls[k] = (f"{d.kind()}|{self._name(d.name())}|{params}|{dom}|"
                                     f"{self._sort(d.range())}")
        return text

    def _node(self, root: Any) -> int:
        index = self.index
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            e, ready = stack.pop()
            k = e.get_id()
            if k in index:
                continue
            if z3.is_quantifier(e):
                body = e.body()
                if not ready:
                    stack.append((e, True))
                    stack.append((body, False))
                    continue
                kind = "lambda" if e.is_lambda() else ("forall" if e.is_forall() else "exists")
                bound = ",".join(f"{_bound(e.var_name(i))}:{self._sort(e.var_sort(i))}"
                                 for i in range(e.num_vars()))
                line = f"Q|{kind}|{bound}|{index[body.get_id()]}"
            elif z3.is_var(e):
                line = f"V|{z3.get_var_index(e)}|{self._sort(e.sort())}"
            elif z3.is_app(e):
                args = [e.arg(i) for i in range(e.num_args())]
                if not ready:
                    stack.append((e, True))
                    stack.extend((a, False) for a in reversed(args))
                    continue
                decl = e.decl()
                line = f"A|{self._decl(decl)}|" + ",".join(
                    str(index[a.get_id()]) for a in args)
                if not args and decl.kind() != z3.Z3_OP_UNINTERPRETED:
                    line += f"|{e.sexpr()}"  # a numeral, true, a string: its value
            else:
                raise ValueError(f"no digest for a Z3 term of this kind: {e.sexpr()[:80]}")
            if k in index:  # reached twice on the stack before its first visit ended
                continue
            index[k] = len(index)
            self.hash.update(line.encode())
            self.hash.update(b"\n")
        return index[root.get_id()]


def _sort_text(s: Any) -> str:
    """A sort, a datatype with its constructors and their fields: two processes (two specs)
    may declare one name with other members, and `x == a || x == b` is valid for one only."""
    if s.kind() != z3.Z3_DATATYPE_SORT:
        return s.sexpr()
    ctors = []
    for i in range(s.num_constructors()):
        c = s.constructor(i)
        fields = ",".join(c.domain(j).sexpr() for j in range(c.arity()))  # by name: no loop
        ctors.append(f"{c.name()}({fields})")
    return f"{s.sexpr()}{{{'|'.join(ctors)}}}"


def _bound(name: str) -> str:
    """A bound variable's name, its fresh number dropped (``a!26`` -> ``a!``): a bound name
    changes no model, and ``FreshConst`` binders (a multicast's) are numbered by how many were
    made before, which made MSI's `GetM in S` digest differently in two processes."""
    m = FRESH.match(name)
    return name if m is None else f"{m.group(1)}!"


def digest(*formulas: Any) -> str:
    """The hex digest of the conjunction of ``formulas``, in their order."""
    return Digest().add(*formulas).hexdigest()
