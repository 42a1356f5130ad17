"""NOTE(goal-split): an obligation proved part by part, each part first from its own hypothesis.

An obligation of the inductive check is ``H, action |- P'``: ``P`` after the action, where the
hypotheses ``H`` hold every property before it. A property is a conjunction: "no expression of
it reads an undefined value" (a disjunction of existentials, one per place that could) and the
formula itself, often ``forall i :: body(i)``. Z3 is given all of it at once, and where the
spec counts (MSI's 158 inferred lines) it can spend minutes on one obligation that each of
its parts settles in well under a second. So here each part is its own query, and it is
first asked of a small context: the action, the state's domain and the same part of ``P``
before the action (its instance at the same witnesses), which is what most parts need;
only a part the small context leaves open is asked again with every hypothesis.

A counted set the action leaves alone is the one thing a small context still cannot see:
``count(y :: ...i...)`` after the action is ``card`` of another set term than before, and Z3
does not split on whether the two sets are equal (NOTE(count-set-names)). For each count of
a ``forall`` part and each of the same part before the action, at the same witnesses, a
frame query asks whether some agent is in one set and not the other (with the part refuted,
``¬body'(w)``); when none can be, the counts are equal and that equation is a lemma of the
part's query. This proves MSI's ``inferred_38`` at ``Dir.message GetM in S`` (``acks ==
count(...)``, where the directory sends ``Inv``s that name another requestor): the frame
query in 0.3 s, the part in 0.05 s, where the whole obligation was unknown after 150 s.

NOTE(error-split): an error goal ("action j errs after this action") is split the same way,
one part per place that could err, each asked first of the action, the domain and the same
place's error before the action at the **same witnesses** (``Obligations._error_before``).
The ``no_error`` hypothesis names its own witnesses (``e{j}|self``), so it says only that some
agent does not err, not the one asked about after the step: MSI's errors after `Evict in S`
(an evicting cache cannot make another cache's `Data` or `InvAck` err) stayed unknown after
60-270 s of every try, and each place is refuted in about 0.01 s from the same error before
it. This is sound because every error obligation is proved for arbitrary witnesses: the
invariant the induction establishes is "no action errs, for every agent and message", whose
instance at any witnesses is a hypothesis of the step.

Soundness: every query is the negated part with a subset of the obligation's hypotheses (or
instances of them) and lemmas proved from them, plus ``card(S) >= 0`` (a count is a natural)
and N < 2^39 (the encoding's own assumption, ``naturals``);
the obligation is the disjunction of its negated parts, so one unsat answer per part proves
it. A witness ``w`` for ``exists i :: ¬body'(i)`` is a fresh constant.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import z3

from coherence.smt import interrupt
from coherence.smt.nodes import NODE, is_agent, node_constants
from coherence.smt.param_count import CARD, SET, UNDEF_INT, agents_count, card_terms

MAX_WITNESS_AXIOMS = 2000  # NOTE(split-witness-axioms): per part
# Z3 checks: (solver, wall seconds) -> whether it answered unsat
Decide = Callable[[Any, float], bool]


def naturals() -> list[Any]:
    """A count is a natural, for every set, and the number of agents is below the undefined
    marker's magnitude. The error parts of a property ask whether a count under a quantifier,
    or a sum such as ``Cache[z].acks + m.acks``, is the marker ``UNDEF_INT`` (-2^40), which Z3
    cannot rule out with ``card`` uninterpreted and N unbounded (MSI's ``inferred_150`` at
    ``GetM in S``: ``acks`` may be -N). The encoding already takes the marker to lie outside
    every range (NOTE(param-count)), which is N < 2^40; this says so."""
    s = z3.Const("s_card", SET)
    return [z3.ForAll([s], CARD(s) >= 0, patterns=[CARD(s)]),
            agents_count() < -UNDEF_INT / 2]


def conjuncts(p: Any) -> list[Any]:
    """``p``'s top-level conjuncts; a Boolean read through the encoder's bit
    (``If(F, 1, 0) != 0``) is read as ``F``."""
    if z3.is_and(p):
        return [c for a in p.children() for c in conjuncts(a)]
    bit = _bit(p)
    return [p] if bit is None else conjuncts(bit)


def _is_zero(t: Any) -> bool:
    return _value(t) == 0


def _is_one(t: Any) -> bool:
    return _value(t) == 1


def _value(t: Any) -> int | None:
    return t.as_long() if z3.is_bv_value(t) or z3.is_int_value(t) else None


class Part:
    """One part of an obligation: ``refuted`` (it must be unsat) and ``before`` (the same
    part before the action, instantiated alike; a hypothesis) and the counts to frame."""

    def __init__(self, refuted: Any, before: Any | None, after_cards: list[Any] | None = None,
                 before_cards: list[Any] | None = None) -> None:
        self.refuted = refuted
        self.before = before
        self.after = after_cards or []
        self.before_cards = before_cards or []

    @property
    def counts(self) -> list[tuple[Any, Any]]:
        """(count after, count before) pairs to frame."""
        return [(a, b) for a in self.after for b in self.before_cards]


def parts(after: Any, before: Any | None, whole: bool = False) -> list[Part] | None:
    """The parts of ``after`` (a property after the action) paired with ``before`` (the same
    property before it) when their shapes agree; None when ``after`` has one part only and
    nothing to frame (the split would be the obligation itself), unless ``whole``."""
    posts = conjuncts(after)
    pres = conjuncts(before) if before is not None else []
    if len(pres) != len(posts):
        pres = []
    out: list[Part] = []
    for k, post in enumerate(posts):
        pre = pres[k] if pres else None
        if z3.is_not(post) and z3.is_or(post.arg(0)):
            # "no expression reads an undefined value": one part per place that could
            errs = post.arg(0).children()
            pre_errs = pre.arg(0).children() if pre is not None and z3.is_not(pre) and \
                z3.is_or(pre.arg(0)) and pre.arg(0).num_args() == len(errs) else None
            for j, e in enumerate(errs):
                opened, pre_opened = _opened(e, pre_errs[j] if pre_errs is not None else None)
                out.append(Part(opened, z3.Not(pre_opened) if pre_opened is not None else None,
                                _ground_cards(opened)))
        else:
            body, pre_body = witnessed(post, pre)
            out.append(Part(z3.Not(body), pre_body, _ground_cards(body),
                            _ground_cards(pre_body) if pre_body is not None else []))
    if len(out) == 1 and not out[0].after and not whole:
        return None
    return out


def _opened(e: Any, pre: Any | None) -> tuple[Any, Any | None]:
    """An error's existential opened at fresh witnesses (it is satisfiable exactly when the
    body is), and the same error before the action at the same witnesses (its negation is an
    instance of a hypothesis); ``pre`` whole where its variables differ (the encoder resolves
    ``m.dst == z`` away in one and not the other)."""
    if not (z3.is_quantifier(e) and e.is_exists()):
        return e, pre
    body, pre_body = _instantiated(e, pre)
    return body, pre if pre_body is None else pre_body


def _instantiated(q: Any, pre: Any | None) -> tuple[Any, Any | None]:
    """The body of the quantifier ``q`` at fresh witnesses, and that of ``pre`` at the same
    ones where it is a quantifier of the same kind over the same sorts (else None)."""
    ws = [z3.FreshConst(q.var_sort(i), "w") for i in range(q.num_vars())]
    body = z3.substitute_vars(q.body(), *reversed(ws))
    if pre is not None and z3.is_quantifier(pre) and pre.is_forall() == q.is_forall() \
            and pre.is_exists() == q.is_exists() and pre.num_vars() == q.num_vars() \
            and all(pre.var_sort(i).eq(q.var_sort(i)) for i in range(q.num_vars())):
        return body, z3.substitute_vars(pre.body(), *reversed(ws))
    return body, None


def witnessed(post: Any, pre: Any | None) -> tuple[Any, Any | None]:
    """``post`` with each universal quantifier in a positive place (under ``and``, ``or``,
    the conclusion of ``=>``) opened at fresh witnesses, and ``pre`` with the same quantifiers
    instantiated at the same witnesses (None where its shape differs). ``¬post`` is
    satisfiable exactly when ``¬witnessed(post)`` is, and the instance is implied by
    ``pre``."""
    if z3.is_quantifier(post) and post.is_forall():
        return witnessed(*_instantiated(post, pre))
    bit = _bit(post)
    if bit is not None:
        return witnessed(bit, _bit(pre) if pre is not None else None)
    opened: list[int] = []
    if z3.is_and(post) or z3.is_or(post):
        opened = list(range(post.num_args()))
    elif z3.is_implies(post):
        opened = [1]
    if not opened:
        return post, pre
    same = pre is not None and z3.is_app(pre) and pre.decl().eq(post.decl()) \
        and pre.num_args() == post.num_args()
    kids, pre_kids = post.children(), pre.children() if same else None
    for k in opened:
        kids[k], mine = witnessed(kids[k], pre_kids[k] if pre_kids is not None else None)
        if pre_kids is not None:
            if mine is None:
                pre_kids = None
            else:
                pre_kids[k] = mine
    rebuilt = post.decl()(*kids)
    return rebuilt, pre.decl()(*pre_kids) if pre_kids is not None else None


def _bit(p: Any) -> Any | None:
    """``F`` of the encoder's bit ``If(F, 1, 0) != 0``; None for anything else."""
    if z3.is_distinct(p) and p.num_args() == 2:
        for bit, zero in ((p.arg(0), p.arg(1)), (p.arg(1), p.arg(0))):
            if z3.is_app_of(bit, z3.Z3_OP_ITE) and _is_zero(zero) and _is_one(bit.arg(1)) \
                    and _is_zero(bit.arg(2)):
                return bit.arg(0)
    return None


def _ground_cards(t: Any) -> list[Any]:
    """The card terms of ``t`` outside its quantifiers' scopes (a count under a quantifier
    of the body has no instance to frame)."""
    return [c for c in card_terms([t]) if _closed(c.arg(0))]


def _closed(t: Any) -> bool:
    todo, seen = [(t, 0)], set()
    while todo:
        x, depth = todo.pop()
        if (x.get_id(), depth) in seen:
            continue
        seen.add((x.get_id(), depth))
        if z3.is_var(x):
            if z3.get_var_index(x) >= depth:
                return False
        elif z3.is_quantifier(x):
            todo.append((x.body(), depth + x.num_vars()))
        elif z3.is_app(x):
            todo.extend((k, depth) for k in x.children())
    return True


def proves(small: list[Any], full: list[Any], after: Any, before: Any | None,
           check: Decide, small_seconds: float, full_seconds: float,
           deadline: float | None = None, small_only: bool = False,
           whole: bool = False) -> bool:
    """Whether every part of ``¬after`` is refuted: by ``small`` (the action and the state's
    domain), the part before the action and the frame lemmas of its counts, each check
    ``small_seconds``; a part left open, by ``full`` (every hypothesis) in ``full_seconds``,
    then with the lemmas of ``more_lemmas`` too (not with ``small_only``). ``deadline``: a
    ``time.perf_counter()`` past which no check starts. ``whole``: one part is asked too
    (an error goal: its small context is the point)."""
    split = parts(after, before, whole)
    if split is None:
        return False
    nat = naturals()
    for part in split:
        if deadline is not None and time.perf_counter() >= deadline:
            return False
        known = [part.before] if part.before is not None else []
        frame = Frame(small, full, known, part.refuted, check, small_seconds)
        lemmas = [a == b for a, b in part.counts if frame.equal(a, b)]
        if _unsat([*small, *known, *lemmas, *nat, part.refuted], check, small_seconds):
            continue
        if small_only:
            return False
        axioms = witness_axioms(part.refuted, small, full)
        if _unsat([*full, *axioms, *known, *lemmas, *nat, part.refuted], check, full_seconds):
            continue
        more = more_lemmas(part, frame)
        if more and _unsat([*full, *known, *lemmas, *more, *nat, part.refuted], check,
                           full_seconds):
            continue
        if deadline is not None and time.perf_counter() >= deadline:
            return False
        split_cases = cases(part)  # none: the part stays open
        if not split_cases or not all(
                _case_refuted(case, small, full, known, check, small_seconds, full_seconds)
                for case in split_cases):
            return False
    return True


def witness_axioms(refuted: Any, small: list[Any], full: list[Any]) -> list[Any]:
    """NOTE(split-witness-axioms): facts that only instantiate what the part's query holds,
    for the ground terms Z3's patterns do not reach: each existential of the refuted part
    over nodes (outside any quantifier) implied by its body at each node term of the query
    (``body(t) -> exists x :: body(x)``), and each hypothesis's universal over nodes at the
    part's own witnesses. MSI's `inferred_51` at `Inv in S` ("no Inv in flight" after the
    action takes one) needs an Inv still in flight to the witness, read through the queue
    the action pops (``Select(Store(count, ...), home, w)``), a term no pattern of the
    negated existential matches: the whole-hypothesis query gave up at 5 s with 6 random
    seeds of 6; with these facts it is unsat with all 6, in 1.9-3.3 s. Valid in every model,
    so they prove nothing the query did not imply."""
    terms = node_constants(z3.And(*small, refuted))
    known = {t.get_id() for t in node_constants(z3.And(*small))}
    own = [t for t in terms if t.get_id() not in known]
    out: list[Any] = []
    for e in _closed_exists(refuted):
        for combo in itertools.product(terms, repeat=e.num_vars()):
            out.append(z3.Implies(z3.substitute_vars(e.body(), *reversed(combo)), e))
    for h in full:
        for c in conjuncts(h):
            out += _at(c, own)
    return out[:MAX_WITNESS_AXIOMS]


def _closed_exists(t: Any) -> list[Any]:
    """The existentials over nodes (at most two variables) of ``t`` outside its quantifiers
    that read no variable bound outside them."""
    out: list[Any] = []
    todo, seen = [t], set()
    while todo:
        x = todo.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_quantifier(x):
            if x.is_exists() and x.num_vars() <= 2 and _closed(x) and all(
                    x.var_sort(k) == NODE for k in range(x.num_vars())):
                out.append(x)
        elif z3.is_app(x):
            todo.extend(x.children())
    return out


def _at(c: Any, witnesses: list[Any]) -> list[Any]:
    """A universal over nodes with each of its variables in turn at each witness (the others
    still quantified); nothing for any other formula."""
    if not (z3.is_quantifier(c) and c.is_forall()) or not all(
            c.var_sort(k) == NODE for k in range(c.num_vars())):
        return []
    n = c.num_vars()
    out = []
    for k in range(n):
        for w in witnesses:
            names = [z3.FreshConst(NODE, "v") for _ in range(n)]
            body = z3.substitute(z3.substitute_vars(c.body(), *reversed(names)), (names[k], w))
            others = names[:k] + names[k + 1:]
            out.append(z3.ForAll(others, body) if others else body)
    return out


def cases(part: Part) -> list[Part]:
    """``part`` split on the condition that chooses a count (MSI's ``inferred_150`` at
    ``GetM in S``: the Data message the goal is about is the one the action sends, whose
    ``acks`` is ``size(sharers)``, or one already in flight), read from the part with every
    array read of a store or an if-then-else expanded; no cases (an empty list) where no
    count is chosen by a condition outside a quantifier."""
    refuted = z3.simplify(part.refuted, blast_select_store=True, expand_select_ite=True)
    found: dict[int, Any] = {}
    todo, seen = [refuted], set()
    while todo:
        x = todo.pop()
        if x.get_id() in seen or z3.is_quantifier(x) or not z3.is_app(x):
            continue
        seen.add(x.get_id())
        if z3.is_app_of(x, z3.Z3_OP_ITE) and _ground_cards(x.arg(1)) + _ground_cards(x.arg(2)) \
                and _closed(x.arg(0)):
            found.setdefault(x.arg(0).get_id(), x.arg(0))
        todo.extend(x.children())
    if len(found) != 1:  # one condition: two cases (more would multiply the queries)
        return []
    [cond] = found.values()
    out = []
    for side in (cond, z3.Not(cond)):
        case = z3.simplify(z3.And(side, z3.substitute(refuted, (cond, z3.BoolVal(
            side is cond)))))
        out.append(Part(case, part.before, _ground_cards(case), part.before_cards))
    return out


def _case_refuted(case: Part, small: list[Any], full: list[Any], known: list[Any],
                  check: Decide, small_seconds: float, full_seconds: float) -> bool:
    frame = Frame(small, full, known, case.refuted, check, small_seconds)
    lemmas = [a == b for a, b in case.counts if frame.equal(a, b)]
    lemmas += more_lemmas(case, frame)
    return _unsat([*full, *known, *lemmas, *naturals(), case.refuted], check, full_seconds)


class Frame:
    """Frame queries of one part: set equations that hold where the part is refuted, from
    the small context first, then from every hypothesis. Each equation proved is a fact of
    the later queries (an empty set makes another equal to a third: MSI's Invs now in flight
    for the requestor are the sharers, once none was in flight before)."""

    def __init__(self, small: list[Any], full: list[Any], known: list[Any], refuted: Any,
                 check: Decide, seconds: float) -> None:
        self.contexts = [[*small, *known, refuted], [*full, refuted]]
        self.facts: list[Any] = []
        self.check, self.seconds = check, seconds

    def equal(self, a: Any, b: Any | None) -> bool:
        """Whether the sets counted by ``a`` and ``b`` (the empty set for None) agree."""
        y = z3.FreshConst(NODE, "frame")
        differ = a.arg(0)[y] if b is None else a.arg(0)[y] != b.arg(0)[y]
        if not any(_unsat([*c, *self.facts, differ], self.check, self.seconds)
                   for c in self.contexts):
            return False
        other = z3.K(NODE, z3.BoolVal(False)) if b is None else b.arg(0)
        self.facts.append(a.arg(0) == other)
        return True


def more_lemmas(part: Part, frame: Frame) -> list[Any]:
    """Counts of sets that are empty, then a count after the action that equals another
    after it (MSI's ``inferred_150`` at ``GetM in S``: the Invs now in flight for the
    requestor are the sharers its Data counts) or one before it (again, with the empty sets
    known); tried only where the frame lemmas were not enough (each is a query). The set of
    every agent is left out of the equations."""
    after = [a for a in part.after if not _every_agent(a)]
    out = [a == 0 for a in [*after, *part.before_cards] if frame.equal(a, None)]
    pairs = [*itertools.combinations(after, 2), *(part.counts if out else [])]
    return out + [a == b for a, b in pairs if frame.equal(a, b)]


def _every_agent(card: Any) -> bool:
    lam = card.arg(0)
    return z3.is_quantifier(lam) and lam.is_lambda() and lam.body().eq(
        is_agent(z3.Var(0, NODE)))


def _unsat(assertions: list[Any], check: Decide, seconds: float) -> bool:
    solver = z3.Solver()
    solver.add(*assertions)
    return check(solver, seconds)


def wall_check(solver: Any, seconds: float) -> bool:
    """An unsat answer within ``seconds`` of wall-clock time (a measurement's ``Decide``)."""
    interrupt.cap(solver, seconds)
    try:
        return bool(interrupt.check(solver) == z3.unsat)
    except z3.Z3Exception:
        return False
