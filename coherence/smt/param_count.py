"""NOTE(param-count): counting in a proof for every number of agents.

``size(s)`` and ``count(a: agent :: P)`` are cardinalities of sets of agents: ``card(S)``, one
uninterpreted function from a set (an array ``Node -> Bool``) to a mathematical integer,
always applied to a set of agents only (``λy. is_agent(y) ∧ ...``). The number of agents is
the card of the set of every agent (``agents_count``). Variables and message fields whose
integer range depends on the number of agents (MSI's ``var acks: int[0 - agents..agents]``,
``Data(acks: int[0..agents])``) are integers too, their bounds linear in that number
(``scaled_ranges``); every other scalar stays a bit-vector.

Each solver sees as much of the meaning of ``card`` as it can use soundly:
- the quantified solver sees ``card`` uninterpreted (``0 <= card(S) <= N`` for the ground terms
  of the query): an unsatisfiable answer is a proof, a satisfiable one may be spurious and is
  never reported as a counterexample (``_settle`` in ``param``);
- the quantifier-free try (``param.Grounded``) adds the axioms of a pairwise Venn decomposition
  of the ground card terms (as in BAPA's reduction, Kuncak, Nguyen and Rinard, CADE 2005):
  for two sets, the counts of ``S∩T``, ``S\\T`` and ``T\\S`` are naturals that add up, a
  region of count 0 has no element among the ground nodes, a region of count >= 1 has a
  witness and one of count >= 2 two distinct witnesses. Every axiom holds for finite sets, so
  an unsatisfiable answer is still a proof for every N. The witnesses are what make
  ``card(S \\ {x}) = card(S) - 1`` follow: a second element of ``S`` minus ``S \\ {x}`` would
  have to be ``x`` too;
- the search for a counterexample to induction over a universe of K agents
  (``param_cti.expand``) replaces every card by its exact sum over that universe, so a
  counterexample it reports is real (and is replayed by the reference semantics).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.errors import NO_SPAN, Span, SpecError
from coherence.smt.nodes import HOME, NODE, UNDEF_N, finite, instances, is_agent
from coherence.smt.state import UNDEF_BV, Unsupported

INT = z3.IntSort()
SET = z3.ArraySort(NODE, z3.BoolSort())
UNDEF_INT = z3.IntVal(-(1 << 40))  # "undefined", outside every range
CARD = z3.Function("card", SET, INT)


def card(s: Any) -> Any:
    """The number of agents in the set ``s`` (its other nodes do not count)."""
    y = z3.Const("y_card", NODE)  # NOTE(bound-names): ``s`` never holds it free
    return _card(y, z3.And(is_agent(y), s[y]))


def count(x: Any, body: Any) -> Any:
    """``count(x: agent :: body)``, ``x`` a fresh constant that ``body`` mentions."""
    return _card(x, z3.And(is_agent(x), body))


def agents_count() -> Any:
    """N, the number of agents."""
    y = z3.Const("y_all", NODE)
    return _card(y, is_agent(y))


def _card(x: Any, member: Any) -> Any:
    """The number of nodes ``x`` with ``member``: a sum over the nodes of a fixed size
    (NOTE(finite-core)), else ``card`` of the set."""
    nodes = finite()
    if nodes is None:
        return CARD(z3.Lambda([x], member))
    return z3.Sum([z3.If(m, 1, 0) for m in instances(nodes, [x], member)])


def is_card(t: Any) -> bool:
    return z3.is_app(t) and t.decl().eq(CARD)


def is_int(v: Any) -> bool:
    return isinstance(v, z3.ArithRef) and v.is_int()


def to_int(v: Any) -> Any:
    """A bit-vector value as an integer (its undefined marker as ``UNDEF_INT``)."""
    if is_int(v):
        return v
    if z3.is_bv_value(v):
        signed = v.as_signed_long()
        return UNDEF_INT if signed == UNDEF_BV else z3.IntVal(signed)
    return z3.If(v == UNDEF_BV, UNDEF_INT, z3.BV2Int(v, is_signed=True))


@attrs.frozen
class Linear:
    """``a + b * N``: a bound of an integer type in terms of the number of agents N."""

    a: int
    b: int

    def term(self) -> Any:
        if self.b == 0:
            return z3.IntVal(self.a)
        return self.a + self.b * agents_count()

    def __str__(self) -> str:
        return str(self.a) if self.b == 0 else f"{self.a} + {self.b}*agents"


Ranges = dict[Span, tuple[Linear, Linear]]


def scaled_ranges(model: ir.Model) -> Ranges:
    """The variables and message fields whose integer range moves with the number of agents,
    keyed by their declaration's location, with their bounds as linear functions of it
    (found by binding the spec to two more sizes). A bound that is not linear is refused at
    its declaration."""
    from coherence.spec.load import rebind
    n = model.agents
    decls = _int_decls(model)
    sizes = [model]
    out: Ranges = {}
    for k in (1, 2):
        try:
            sizes.append(rebind(model, {"agents": n + k}))
        except SpecError as e:
            raise Unsupported(f"cannot bind the spec to {n + k} agents to find how its "
                              f"integer ranges depend on their number: {e.message}",
                              NO_SPAN) from None
        moved = {key for key, decl in _int_decls(sizes[-1]).items()
                 if key in decls and decl.type != decls[key].type}
        if not moved and k == 1:
            return out
    by_size = [_int_decls(m) for m in sizes]
    for key, decl in decls.items():  # by name: the same in each binding
        t0, t1, t2 = (d[key].type if key in d else None for d in by_size)
        if not (isinstance(t0, ir.IntT) and isinstance(t1, ir.IntT) and isinstance(t2, ir.IntT)):
            continue
        if (t0.lo, t0.hi) == (t1.lo, t1.hi) == (t2.lo, t2.hi):
            continue
        dlo, dhi = t1.lo - t0.lo, t1.hi - t0.hi
        if t2.lo - t1.lo != dlo or t2.hi - t1.hi != dhi:
            raise Unsupported(f"{key}: the range {t0} does not grow linearly with the number "
                              "of agents, which a proof for every N cannot encode", decl.span)
        out[decl.span] = (Linear(t0.lo - dlo * n, dlo), Linear(t0.hi - dhi * n, dhi))
    return out


def _int_decls(model: ir.Model) -> dict[str, ir.Var | ir.Field]:
    out: dict[str, ir.Var | ir.Field] = {}
    for v in model.globals:
        if isinstance(v.type, ir.IntT):
            out[v.name] = v
    for m in model.machines:
        for v in m.vars:
            if isinstance(v.type, ir.IntT):
                out[f"{m.name}.{v.name}"] = v
    for msg in model.messages:
        for f in msg.fields:
            if isinstance(f.type, ir.IntT):
                out[f"{msg.name}.{f.name}"] = f
    return out


def in_range(x: Any, bounds: tuple[Linear, Linear]) -> Any:
    lo, hi = bounds
    return z3.And(lo.term() <= x, x <= hi.term())


# ---------------------------------------------------------------- cardinality axioms


def card_terms(formulas: list[Any]) -> list[Any]:
    """The ``card`` applications of ``formulas`` outside any quantifier (ground terms), in the
    order first met."""
    return [t for t in _ground_subterms(formulas) if is_card(t)]


def subterms(t: Any) -> Iterator[Any]:
    """Every distinct subterm of ``t``, under its quantifiers too (a quantifier, then its
    body), each once, depth first."""
    seen: set[int] = set()
    todo = [t]
    while todo:
        x = todo.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        yield x
        if z3.is_quantifier(x):
            todo.append(x.body())
        elif z3.is_app(x):
            todo.extend(x.children())


def counts_anywhere(formula: Any) -> bool:
    """Whether ``formula`` applies ``card`` anywhere, under its quantifiers too (``card_terms``
    sees only the ground ones): MSI's ``forall i :: acks == count(y :: ...i...)``."""
    return any(is_card(x) for x in subterms(formula))


def ground_nodes(formulas: list[Any], limit: int = 24) -> list[Any]:
    """The ``Node`` terms of ``formulas`` outside any quantifier (constants, Skolem terms,
    array reads), at most ``limit`` of them, in the order first met: where a region of count 0
    is checked to have no element."""
    return _ground_subterms(formulas, NODE, limit)


def _ground_subterms(formulas: list[Any], sort: Any = None, limit: int = -1) -> list[Any]:
    """The subterms of ``formulas`` outside any quantifier that are ``card`` applications
    (``sort`` None) or of ``sort``; on raw ASTs, since the Python wrappers cost microseconds
    per node and the grounded hypotheses have hundreds of thousands."""
    if not formulas:
        return []
    ctx = formulas[0].ctx
    ref = ctx.ref()
    card_decl = CARD.ast
    want = None if sort is None else sort.ast
    seen: set[int] = set()
    hits: list[Any] = []
    todo = [f.as_ast() for f in reversed(formulas)]
    while todo:
        a = todo.pop()
        key = z3.Z3_get_ast_id(ref, a)
        if key in seen:
            continue
        seen.add(key)
        if z3.Z3_get_ast_kind(ref, a) != z3.Z3_APP_AST:
            continue
        decl = z3.Z3_get_app_decl(ref, a)
        if want is None:
            if z3.Z3_is_eq_func_decl(ref, decl, card_decl):
                hits.append(a)
                continue
        elif z3.Z3_is_eq_sort(ref, z3.Z3_get_sort(ref, a), want):
            hits.append(a)
            if len(hits) == limit:
                break
        n = z3.Z3_get_app_num_args(ref, a)
        todo.extend(z3.Z3_get_app_arg(ref, a, k) for k in range(n - 1, -1, -1))
    return [z3.z3._to_expr_ref(a, ctx) for a in hits]


def bounds(terms: list[Any]) -> list[Any]:
    """``0 <= card(S) <= N`` for each term."""
    n = agents_count()
    return [z3.And(t >= 0, t <= n) for t in terms]


WITNESSES = 3  # per Venn region: counts up to 3 follow from the elements Z3 can name


def venn_axioms(terms: list[Any], pool: list[Any] | None) -> list[Any]:
    """The pairwise Venn axioms of the card ``terms`` (see the module's docstring), regions
    without elements checked at the nodes of ``pool``. Every term is paired with N, so that a
    set of count N holds every agent of ``pool``; two terms that each name nodes (``i`` in
    ``count(a: agent :: owes(a, i))``) are paired only when they name one in common, which
    keeps the axioms linear in the instances of such a count (fewer axioms: still sound).
    ``pool`` None: the per-node facts are quantified over every node instead (for the
    quantified solver)."""
    n = agents_count()
    terms = list({t.get_id(): t for t in [n, *terms]}.values())
    out = bounds(terms)
    fresh = itertools.count()

    def region(r: Any, member: Any) -> list[Any]:
        """``r`` counts the nodes satisfying ``member``: with at least j of them, there are
        j distinct witnesses; with at most j, every element of ``pool`` is one of the first
        j (so that j + 1 distinct known members make the count larger than j)."""
        ws = [z3.Const(f"card_w{next(fresh)}", NODE) for _ in range(WITNESSES)]
        ax = [r >= 0]
        for j, w in enumerate(ws, start=1):
            ax.append(z3.Implies(r >= j, z3.And(member(w), *[w != v for v in ws[:j - 1]])))
        y = z3.Const(f"card_y{next(fresh)}", NODE)
        facts = [z3.Implies(r == 0, z3.Not(member(y)))]
        facts += [z3.Implies(z3.And(r <= j, member(y)), z3.Or([y == v for v in ws[:j]]))
                  for j in range(1, WITNESSES + 1)]
        if pool is None:
            ax.append(z3.ForAll([y], z3.And(facts)))
        else:
            ax += [z3.substitute(f, (y, x)) for x in pool for f in facts]
        return ax

    named = {t.get_id(): _named_nodes(t) for t in terms}
    for t1, t2 in itertools.combinations(terms, 2):
        n1, n2 = named[t1.get_id()], named[t2.get_id()]
        if n1 and n2 and not n1 & n2:
            continue  # counts about different nodes (the acks owed to i and to j): unrelated
        s1, s2 = t1.arg(0), t2.arg(0)
        k = next(fresh)
        both, only1, only2 = (z3.Int(f"card_r{k}_{p}") for p in ("11", "10", "01"))
        out += [t1 == both + only1, t2 == both + only2, both + only1 + only2 <= n]
        out += region(both, lambda y, s1=s1, s2=s2: z3.And(member(s1, y), member(s2, y)))
        out += region(only1, lambda y, s1=s1, s2=s2: z3.And(member(s1, y),
                                                            z3.Not(member(s2, y))))
        out += region(only2, lambda y, s1=s1, s2=s2: z3.And(member(s2, y),
                                                            z3.Not(member(s1, y))))
    return out


def _named_nodes(t: Any) -> set[int]:
    """The ids of the ``Node`` constants a card term's set mentions, but the home and
    "undefined" (every set of agents mentions them)."""
    skip = {HOME.get_id(), UNDEF_N.get_id()}
    return {x.get_id() for x in subterms(t)
            if z3.is_app(x) and x.num_args() == 0 and x.sort() == NODE
            and x.get_id() not in skip and x.decl().kind() == z3.Z3_OP_UNINTERPRETED}


def exact(t: Any, elems: list[Any], expand: Any) -> Any:
    """``card(S)`` over the finite universe ``elems`` (``expand`` unrolls the quantifiers of
    each instance of the set's predicate)."""
    s = t.arg(0)
    return z3.Sum([z3.If(expand(member(s, e)), 1, 0) for e in elems]) if elems else z3.IntVal(0)


def member(s: Any, y: Any) -> Any:
    """``s[y]``, beta-reduced when ``s`` is a lambda (so that its quantifiers can be unrolled
    or grounded at ``y``)."""
    if z3.is_quantifier(s) and s.is_lambda() and s.num_vars() == 1:
        return z3.substitute_vars(s.body(), y)
    return s[y]
