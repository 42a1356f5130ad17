"""Houdini at a fixed number of agents (issue 17): a small set of the mined candidates that,
with the spec's own invariants, is inductive at a cutoff instance, found with one incremental
quantifier-free solver.

The candidates are universally quantified over at most two agents, three related ones, or
one message. At the
instance of ``agents`` agents (4 by default: the two agents a candidate names, the acting
agent and one agent the home points at) every candidate is the conjunction of its instances.
The search is counterexample-driven and target first (``_Lazy``): each query asks for a step
from a state satisfying the chosen candidates and the targets (the spec's invariants, no model
error, no message without a transition, one message per kind) to one violating one of them;
the simplest candidate false in its pre-state is chosen, or, when none is, every candidate
false after the step is dropped. Candidates are evaluated in Python from the values of their
*atoms* (``infer_atoms``; each is one Z3 term per agent or message slot, built once), by the
same rule (``_clause``) that builds their Z3 formulas, so only the chosen ones are encoded.
The chosen set is then minimised (``_Lazy.minimize``).

Inductive at one size is a heuristic for every size: the chosen set is proved again from
scratch by the parameterised prover (``param.prove_all``), which decides the verdict. The
quantifier-free parameterised weakening (``infer_qf``) is the other selection; this one asks
10-100x fewer, smaller queries.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Sequence
from itertools import permutations
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.errors import NO_SPAN, SpecError
from coherence.smt import interrupt
from coherence.smt.execute import TRUE, Exec, any_of, conc, truth
from coherence.smt.extract import state_of
from coherence.smt.infer_atoms import receiver_kinds, sender_kinds
from coherence.smt.infer_forward import Forward
from coherence.smt.infer_mine import Candidate, Templates, binding, is_relation
from coherence.smt.param import ONE_PER_KIND
from coherence.smt.state import Unsupported, num
from coherence.smt.system import Encoder, System

CHECK_RLIMIT = 2_000_000_000  # Z3 units per query (deterministic)
# NOTE(houdini-retry): a query's first try, about 40 s on the 2-core machine; past it, a fresh
# solver with another seed and twice the units, until CHECK_RLIMIT
FIRST_TRY_RLIMIT = 100_000_000
MINIMIZE_RLIMIT = 100_000_000  # a minimisation query that runs out keeps its candidate
STOPPED_REASONS = ("timeout", "canceled", "interrupted from keyboard")
REBUILD_EVERY = 20  # queries on one solver before a fresh one (NOTE(houdini-rebuild))
ATOM = "houdini_atom_"


@attrs.define
class FiniteResult:
    alive: list[int]  # the inductive subset at the cutoff (candidate indices)
    support: list[int]  # what the targets' preservation uses, closed under its own
    failed: list[str]  # targets some model falsifies
    stats: dict[str, Any]


# ---------------------------------------------------------------- atoms as Z3 terms


class AtomTerms:
    """The Z3 value and error condition of every atom column of the templates, per binding:
    ``glob[c]``, ``agent[c][k]`` (agent ``k``), ``msg[T][p][c]`` (message place ``p``), each a
    pair (value, cannot-be-evaluated); ``places[T][p]`` says whether place ``p`` holds a T."""

    def __init__(self, enc: Encoder, exprs: dict[tuple[str, int], ir.Expr], state: Any,
                 tpl: Templates | None = None) -> None:
        self.glob: dict[int, tuple[Any, Any]] = {}
        self.agent: dict[int, list[tuple[Any, Any]]] = {}
        self.rel: dict[int, dict[tuple[int, int], tuple[Any, Any]]] = {}  # relation, (x, y)
        self.msg: dict[str, list[dict[int, tuple[Any, Any]]]] = {}
        self.places: dict[str, list[Any]] = {}
        ex = _Exec(enc, state, 0)
        possible = _possible_keys(enc.model)
        for (kind, c), e in exprs.items():
            if kind == "g":
                self.glob[c] = _eval(ex, e, {})
            elif kind == "i":
                self.agent[c] = [_eval(ex, e, {"i": num(k)}) for k in range(enc.n)]
            elif kind == "r":
                self.rel[c] = {(x, y): _eval(ex, e, {"i": num(x), "j": num(y)})
                               for x in range(enc.n) for y in range(enc.n) if x != y}
        for msg in enc.model.messages:
            name = msg.name
            places = [(present, b) for present, b in
                      ((z3.simplify(present), b) for present, b in ex.messages(name))
                      if not z3.is_false(present) and _possible(possible, name, b[0], b[1])]
            self.places[name] = [present for present, _b in places]
            cols = [c for (kind, c) in exprs if kind == f"msg {name}"]
            same = self._agent_columns(tpl, name, cols)
            self.msg[name] = [
                {c: self._at_endpoint(same, c, binding, enc.n)
                 or _eval(ex, exprs[(f"msg {name}", c)], {"m": binding}) for c in cols}
                for _present, binding in places]

    def _agent_columns(self, tpl: Templates | None, message: str, cols: list[int]
                       ) -> dict[int, tuple[int, int]]:
        """NOTE(infer-endpoint-atoms): a message column that is an agent atom read at the
        message's source or destination: column -> (0 source or 1 destination, the agent
        column). Where the place's endpoint is a known agent (a keyed slot), the column's
        terms are that agent's, already made: MESI's message templates repeat every agent
        atom (counts of messages of other types among them) at both endpoints, and
        evaluating each again per place took the encoding past 15 minutes."""
        if tpl is None:
            return {}
        position = {id(a): k for k, a in enumerate(tpl.voc.agent)}
        slots = tpl.slots[f"msg {message}"]
        out: dict[int, tuple[int, int]] = {}
        for c in cols:
            atom, where = slots[c]
            if where in ("src", "dst") and id(atom) in position:
                out[c] = (0 if where == "src" else 1, position[id(atom)])
        return out

    def _at_endpoint(self, same: dict[int, tuple[int, int]], c: int, binding: Any,
                     n: int) -> tuple[Any, Any] | None:
        if c not in same:
            return None
        end, k = same[c]
        agent = conc(binding[end])
        if agent is None or not 0 <= agent < n:
            return None
        return self.agent[k][agent]


class _Exec(Exec):
    """``Exec`` with the message places of each type built once (atoms read them often), and
    each count and message quantifier built once per binding of the variables around it: an
    atom evaluates nothing but expressions of one state, so their value and errors depend on
    that binding only (MSI's ``Cache[z].acks + m.acks == count(...)`` counts the same agents
    for every message slot ``m`` to ``z``, and ten counts share four relations: minutes
    without it)."""

    def __init__(self, enc: Encoder, state: Any, line: int) -> None:
        super().__init__(enc, state, line)
        self._places: dict[str, Any] = {}
        self._counts: dict[Any, tuple[Any, list[Any]]] = {}
        self._counting = 0  # counts being built around the current expression
        self._free: dict[int, tuple[Any, frozenset[str]]] = {}

    def messages(self, message: str) -> Any:
        if message not in self._places:
            # NOTE(infer-fifo-keys): a queue no send can fill is empty, here as in the solver
            possible = _possible_keys(self.enc.model)
            self._places[message] = [(present, b) for present, b in super().messages(message)
                                     if _possible(possible, message, b[0], b[1])]
        return self._places[message]

    def count(self, e: ir.Count, c: Any) -> Any:
        self._counting += 1
        try:
            return self._once(e, c, super().count)
        finally:
            self._counting -= 1

    def msg_quant(self, e: ir.MsgQuant, c: Any) -> Any:
        # inside counts only: elsewhere the shared terms changed which models Z3 gives, and
        # so which lines Houdini picks (sharer_counter: 13 lines instead of 10)
        if not self._counting:
            return super().msg_quant(e, c)
        return self._once(e, c, super().msg_quant)

    def _once(self, e: Any, c: Any, build: Callable[[Any, Any], Any]) -> Any:
        # structural: the same count in two atoms; keyed by the variables it reads, not by
        # every one around it (MSI's ``forall z :: m.dst == z -> Cache[z].acks + m.acks ==
        # count(...z...)`` counts alike for every message slot ``m``: 5x faster)
        if id(e) not in self._free:
            self._free[id(e)] = (e, _free_locals(e))  # e kept: its id stays its own
        free = self._free[id(e)][1]
        key = (e, _binding_key({k: v for k, v in self.locals.items() if k in free}))
        if key not in self._counts:
            # its errors under "true", each put under the caller's path condition below
            start = len(self.errs)
            value = build(e, TRUE)
            self._counts[key] = (value, self.errs[start:])
            del self.errs[start:]
        value, errs = self._counts[key]
        for bad in errs:
            self.error(c, bad)
        return value


def _free_locals(e: Any) -> frozenset[str]:
    """The names of the quantifier variables and bound messages ``e`` reads unbound."""
    names, messages = ir.free_names(e)
    return frozenset([*names, *messages])


def _binding_key(x: Any) -> Any:
    """A hashable image of the local variables' values (Z3 terms, message bindings)."""
    if isinstance(x, dict):
        return tuple(sorted((k, _binding_key(v)) for k, v in x.items()))
    if isinstance(x, list | tuple):
        return tuple(_binding_key(v) for v in x)
    if isinstance(x, z3.AstRef):
        return x.get_id()
    return repr(x)


def _possible(keys: set[tuple[str, int, int]], message: str, src: Any, dst: Any) -> bool:
    """Whether a FIFO queue from ``src`` to ``dst`` can hold ``message`` (an unordered
    slot's endpoints are terms: always)."""
    s, d = conc(src), conc(dst)
    if s is None or d is None:
        return True
    return (message, s, d) in keys


def _possible_keys(model: ir.Model) -> set[tuple[str, int, int]]:
    """(message, source, destination) of every message a sender can address to a receiver
    of it: agents ``0..n-1``, the home ``n``.

    NOTE(infer-self-keys): a node's message to itself is possible here wherever its kind both
    sends and receives the type, as it is in the parameterised encoding of the final proof.
    Without those keys the instance never held a ``Data`` from a cache to itself, so Houdini
    never needed ``forall m: Data :: (m.src != m.dst)`` nor what keeps it true, and MSI's and
    msi_home_acks' lines, inductive at 4 agents, had counterexamples to induction with one
    agent in the final proof (results/infer/README.md, session 21)."""
    senders, receivers = sender_kinds(model), receiver_kinds(model)
    n = model.agents

    def nodes(kinds: set[ir.MachineKind]) -> list[int]:
        return ([*range(n)] if ir.MachineKind.CACHE in kinds else []) + (
            [n] if ir.MachineKind.HOME in kinds else [])
    return {(msg.name, a, b) for msg in model.messages for a in nodes(senders[msg.name])
            for b in nodes(receivers[msg.name])}


def _eval(ex: Exec, e: ir.Expr, local: dict[str, Any]) -> tuple[Any, Any]:
    ex.errs = []
    ex.locals = dict(local)
    v = z3.simplify(truth(ex.expr(e, TRUE)))
    err = z3.simplify(any_of(ex.errs))
    return v, (False if z3.is_false(err) else err)


def atom_exprs(model: ir.Model, tpl: Templates) -> dict[tuple[str, int], ir.Expr]:
    """Every column of every template as an expression: key ("g", column of the global
    template), ("i", column of the agent template, free variable ``i``) or ("msg T", column of
    T's template, free variable ``m``). Parsed once, as invariants appended to the spec."""
    from coherence.spec.load import extend
    lines: list[str] = []
    keys: list[tuple[str, int]] = []
    ng = len(tpl.slots["global"])
    for c, (atom, _w) in enumerate(tpl.slots["global"]):
        keys.append(("g", c))
        lines.append(atom.literal(True))
    for c, (atom, w) in enumerate(tpl.slots["agent"]):
        if w == "i":
            keys.append(("i", c - ng))
            lines.append(f"forall i: agent :: ({atom.literal(True, 'i')})")
    # NOTE(infer-relations): a relation's column, with ``i`` and ``j`` free
    for r, atom in enumerate(tpl.voc.relations if tpl.pairs else []):
        keys.append(("r", r))
        lines.append("forall i: agent :: forall j: agent :: "
                     f"({atom.literal(True, 'i', 'm', 'j')})")
    for kind, slots in tpl.slots.items():
        if not kind.startswith("msg "):
            continue
        for c, (atom, w) in enumerate(slots):
            if w == "g":
                continue
            x, _y = binding(w)
            keys.append((kind, c))
            lines.append(f"forall m: {kind[4:]} :: ({atom.literal(True, x, 'm')})")
    text = "\n".join(f"invariant {ATOM}{k}: {t};" for k, t in enumerate(lines))
    ext = extend(model, "\n" + text + "\n")
    by_name = {inv.name: inv.expr for inv in ext.invariants}
    out: dict[tuple[str, int], ir.Expr] = {}
    for k, key in enumerate(keys):
        e = by_name[f"{ATOM}{k}"]
        for _ in range({"g": 0, "r": 2}.get(key[0], 1)):
            e = e.body  # type: ignore[attr-defined]
        out[key] = e
    return out


def _first(slots: list[tuple[Any, str]], where: str) -> int:
    return next(c for c, (_a, w) in enumerate(slots) if w == where)


# ---------------------------------------------------------------- candidates from atoms


def _not(a: Any) -> Any:
    return z3.BoolRef(z3.Z3_mk_not(a.ctx_ref(), a.as_ast()), a.ctx)


def _or(xs: list[Any]) -> Any:
    """``z3.Or`` without the Python API's per-argument casts (millions of calls here)."""
    if len(xs) == 1:
        return xs[0]
    arr = (z3.Ast * len(xs))(*[x.as_ast() for x in xs])
    return z3.BoolRef(z3.Z3_mk_or(xs[0].ctx_ref(), len(xs), arr), xs[0].ctx)


def _and(xs: list[Any]) -> Any:
    if len(xs) == 1:
        return xs[0]
    arr = (z3.Ast * len(xs))(*[x.as_ast() for x in xs])
    return z3.BoolRef(z3.Z3_mk_and(xs[0].ctx_ref(), len(xs), arr), xs[0].ctx)


class Logic:
    """The Boolean operations ``_clause`` composes with: on Z3 terms or on Python bools."""

    def __init__(self, z: bool) -> None:
        self.z = z

    def neg(self, a: Any) -> Any:
        return _not(a) if self.z else not a

    def conj(self, xs: list[Any]) -> Any:
        return (_and(xs) if xs else z3.BoolVal(True)) if self.z else all(xs)

    def disj(self, xs: list[Any]) -> Any:
        return (_or(xs) if xs else z3.BoolVal(False)) if self.z else any(xs)


def _clause(lg: Logic, lits: Sequence[tuple[tuple[Any, Any], bool]]) -> Any:
    """Whether the candidate's clause holds and can be evaluated, as its text is evaluated:
    ``!l1`` for one literal, else ``l1 && ... && l(k-1) -> !lk`` with ``&&`` and ``->``
    short-circuit (an error counts only where it is reached)."""
    if lg.z and all(e is False for (_v, e), _p in lits):  # the common case, in one term
        return _or([_not(v) if pos else v for (v, _e), pos in lits])
    errs = []
    held: list[Any] = []  # the literals so far (their values, signs applied)
    for (v, e), pos in lits:
        if e is not False:
            errs.append(lg.conj([*held, e]))
        held.append(v if pos else lg.neg(v))
    return lg.conj([lg.neg(lg.disj(errs)), lg.neg(lg.conj(held))])


def _columns(cand: Candidate, tpl: Templates) -> list[tuple[str, int, bool]]:
    """The candidate's literals as (where, atom key column, positive)."""
    slots = tpl.slots[cand.kind]
    ng = len(tpl.slots["global"])
    out = []
    for c, p in cand.cols:
        _atom, w = slots[c]
        if w == "g":
            out.append(("g", c, p))
        elif is_relation(w):
            out.append((w, c - _first(slots, w), p))
        elif cand.kind in ("agent", "pair"):
            na = len(tpl.slots["agent"]) - ng
            k = c - ng
            out.append(("i" if k < na else "j", k % na, p))
        else:
            out.append(("m", c, p))
    return out


def instances(cand: Candidate, tpl: Templates, at: AtomTerms, n: int
              ) -> list[tuple[Any, list[tuple[Any, bool]]]]:
    """Per instance of the candidate: (guard, its literals as ((value, error), positive)), as
    the atoms' terms (``formula`` makes Z3's of them, ``holds`` reads them in a model)."""
    cols = _columns(cand, tpl)
    if cand.kind == "global":
        return [(True, [(at.glob[c], p) for _w, c, p in cols])]
    if cand.kind in ("agent", "pair", "triple"):
        binds: Iterable[tuple[int, ...]] = (
            ((x,) for x in range(n)) if cand.kind == "agent" else
            permutations(range(n), 2 if cand.kind == "pair" else 3))
        out = []

        def term(w: str, c: int, b: dict[str, int]) -> Any:
            if w == "g":
                return at.glob[c]
            if is_relation(w):
                return at.rel[c][(b[w[0]], b[w[1]])]
            return at.agent[c][b[w]]
        for xs in binds:
            b = dict(zip("ijl", xs, strict=False))
            out.append((True, [(term(w, c, b), p) for w, c, p in cols]))
        return out
    name = cand.kind[4:]
    return [(present, [(at.glob[c] if w == "g" else terms[c], p) for w, c, p in cols])
            for present, terms in zip(at.places[name], at.msg[name], strict=True)]


def formula(cand: Candidate, tpl: Templates, at: AtomTerms, n: int) -> Any:
    lg = Logic(True)
    parts = []
    for g, lits in instances(cand, tpl, at, n):
        c = _clause(lg, lits)
        parts.append(c if g is True else _or([_not(g), c]))
    return _and(parts) if parts else z3.BoolVal(True)


def holds(terms: list[tuple[Any, list[tuple[Any, bool]]]],
          value: Callable[[Any], bool]) -> bool:
    """Whether a candidate holds in a model (``value``), from its ``instances``, which a
    caller that asks again and again keeps."""
    lg = Logic(False)

    def pick(t: Any) -> Any:
        return tuple([value(x) for x in t]) if isinstance(t, tuple) else value(t)
    return all((g is not True and not pick(g)) or _clause(lg, [(pick(t), p) for t, p in lits])
               for g, lits in terms)


# ---------------------------------------------------------------- targets


def unordered_keys(model: ir.Model) -> dict[str, list[tuple[int, int, int]]]:
    """Per unordered network, every (type, source, destination) a message can have
    (``_possible_keys``), in one order."""
    possible = _possible_keys(model)
    out: dict[str, list[tuple[int, int, int]]] = {}
    for t, msg in enumerate(model.messages):
        net = model.network(msg.network)
        if net.ordering is ir.Ordering.UNORDERED:
            out.setdefault(net.name, []).extend(
                sorted((t, a, b) for name, a, b in possible if name == msg.name))
    return out


def keyed_slots(enc: Encoder, state: Any, keys: dict[str, list[tuple[int, int, int]]]
                ) -> list[tuple[Any, Any]]:
    """The substitution that fixes a state's keyed slots (NOTE(infer-keyed-slots)): slot k
    has key k's type, source and destination."""
    out: list[tuple[Any, Any]] = []
    for net_i, net in enumerate(enc.model.networks):
        if net.name not in keys:
            continue
        slots, ks = state.nets[net_i], keys[net.name]
        for x, (t, a, b) in zip(slots, ks, strict=False):
            out += [(x.type, num(t)), (x.src, num(a)), (x.dst, num(b)), (x.line, num(0))]
        # a network no send fills has no key but one slot (a capacity is at least 1): empty
        out += [(x.valid, z3.BoolVal(False)) for x in slots[len(ks):]]
    return out


def fifo_keys_sent(enc: Encoder, state: Any) -> list[Any]:
    """NOTE(infer-fifo-keys): a FIFO queue (src, dst) of the pre-state holds only the types
    some machine can send from ``src`` to ``dst`` (``_possible_keys``), as in every reachable
    state; a queue no send can fill is empty. Without it, half of the counterexamples of
    msi_home_acks were pre-states with a forward from the home to itself, which no candidate
    can rule out (heuristic only: the final proof is from scratch)."""
    possible = _possible_keys(enc.model)
    out: list[Any] = []
    for net_i, net in enumerate(enc.model.networks):
        if net.ordering is not ir.Ordering.FIFO:
            continue
        names = [m.name for m in enc.model.messages if m.network == net.name]
        for (src, dst, _line), q in state.nets[net_i].items():
            allowed = [enc.msg_index[n] for n in names if (n, src, dst) in possible]
            if not allowed:
                out.append(q.count == 0)
                continue
            for k, ty in enumerate(q.types):
                out.append(z3.Implies(q.count > k, any_of([ty == a for a in allowed])))
    return out


def _substituted(state: Any, fixed: list[tuple[Any, Any]]) -> Any:
    if not fixed:
        return state
    subst = {a.get_id(): b for a, b in fixed}
    out = state.copy()
    for net_i, slots in enumerate(out.nets):
        if not isinstance(slots, list):
            continue
        out.nets[net_i] = [attrs.evolve(x, **{f: subst.get(getattr(x, f).get_id(),
                                                          getattr(x, f))
                                              for f in ("valid", "type", "src", "dst", "line")})
                           for x in slots]
    return out


# ---------------------------------------------------------------- Houdini


def _agents_of(enc: Encoder, a: Any, keys: dict[str, list[tuple[int, int, int]]]
               ) -> set[int] | None:
    """The agents action ``a`` names: a cache's own step its agent, the home's own step none,
    a receipt the ends of its queue or slot that are agents. None for a receipt that never
    fires: on the slot of a network no send fills (``keyed_slots``: always empty), or on a
    keyed slot of another type or destination."""
    if a.kind is not ir.TransitionKind.MESSAGE:
        return set() if a.agent is None else {a.agent}
    net = enc.model.networks[a.net]
    if net.ordering is ir.Ordering.FIFO:
        src, dst, _line = a.where
    else:
        if a.where >= len(keys[net.name]):
            return None
        t, src, dst = keys[net.name][a.where]
        message = enc.model.machine(a.machine).transitions[a.transition].name
        if enc.msg_index[message] != t or (enc.n if a.agent is None else a.agent) != dst:
            return None
    return {x for x in (src, dst) if x < enc.n}


def _for_agent0(enc: Encoder, a: Any, keys: dict[str, list[tuple[int, int, int]]]) -> bool:
    """Whether the instance takes action ``a``: the home's own steps all, any other one that
    fires only where it names agent 0 (a cache's own step, a receipt agent 0 sends or gets)."""
    agents = _agents_of(enc, a, keys)
    if agents is None:
        return False
    home_step = a.kind is not ir.TransitionKind.MESSAGE and a.agent is None
    return home_step or 0 in agents


def _errors_read(enc: Encoder, a: Any, keys: dict[str, list[tuple[int, int, int]]]) -> bool:
    """NOTE(houdini-errors-after): whether the error target after the step reads the errors
    of action ``a``, which the instance does not take: one that fires and names only agents
    among 0, 1 and 2 (a permutation fixing agent 0 brings any other one's there)."""
    agents = _agents_of(enc, a, keys)
    return agents is not None and agents <= {0, 1, 2} and not _for_agent0(enc, a, keys)


@attrs.define
class Instance:
    """Houdini's encoding of the cutoff instance: what needs the templates but not the
    candidates, so ``infer`` makes it while a worker filters them (``mine``'s ``beside``)."""

    inst: ir.Model
    enc: Encoder
    cur: Any  # the pre-state, keyed slots fixed
    at_cur: AtomTerms
    at_nxt: AtomTerms
    targets: dict[str, tuple[Any, Any]]  # name -> (bad at cur, bad at nxt)
    tind: dict[str, Any]
    base: list[Any]
    states: list[Any]  # ``base`` without the transition
    seconds: float


def encode_instance(model: ir.Model, tpl: Templates, agents: int = 4) -> Instance:
    """The cutoff instance of ``agents`` agents, its atoms and Houdini's targets."""
    from coherence.spec.load import rebind
    t0 = time.perf_counter()
    if model.lines != 1:
        raise Unsupported("inference needs one line (--param lines=1)", NO_SPAN)
    try:
        inst = rebind(model, {"agents": agents})
    except SpecError:
        inst = rebind(model, {"agents": max(model.agents, 2)})
    keys = unordered_keys(inst)
    # NOTE(infer-keyed-slots): the parameterised encoding keeps one message per (type,
    # source, destination) on an unordered network and ignores its capacity; so does this
    # instance: one slot per possible key, its type and endpoints fixed, where a send of that
    # key goes (a second one is a model error). A receipt is then one action per slot, by the
    # slot's destination, and the solver never permutes slots.
    inst = attrs.evolve(inst, networks=tuple(
        attrs.evolve(net, capacity=max(1, len(keys[net.name])))
        if net.name in keys else net for net in inst.networks))
    enc = Encoder(inst)
    enc.keyed = {i: {key: k for k, key in enumerate(keys[net.name])}
                 for i, net in enumerate(inst.networks) if net.name in keys}
    # the candidates are closed under permuting agents, and so is the spec (--agents any
    # refuses literal agent ids): a step by any agent is one by agent 0 after a permutation
    every = enc.actions
    enc.actions = [a for a in every if _for_agent0(enc, a, keys)]
    system = System(enc, deadlock=False)
    # NOTE(houdini-errors-after): agent 0 takes the step, but the action that errs after it
    # may be another agent's: the error target also reads those of agents 1 and 2
    errs_after = [enc.step(system.cur, a).error for a in every if _errors_read(enc, a, keys)]
    fixed = keyed_slots(enc, system.cur, keys) + keyed_slots(enc, system.nxt, keys)

    def pre(f: Any) -> Any:
        return z3.substitute(f, *fixed) if fixed else f
    cur = _substituted(system.cur, fixed)
    nxt = _substituted(system.nxt, fixed)
    exprs = atom_exprs(inst, tpl)
    at_cur = AtomTerms(enc, exprs, cur, tpl)
    at_nxt = AtomTerms(enc, exprs, nxt, tpl)
    targets: dict[str, tuple[Any, Any]] = {}  # name -> (bad at cur, bad at nxt)
    for (kind, name), (bad, _extra) in system.groups.items():
        if kind == "deadlock":
            continue
        after = bad if (kind, name) != ("error", "error") else any_of([bad, *errs_after])
        targets[f"{kind}:{name}"] = (pre(bad), pre(system.at(after, system.nxt)))
    # the parameterised encoding's one message per kind: the step taken sent a message of a
    # key whose slot was full (a keyed pre-state never holds two)
    twice = any_of([z3.And(system.sel == i, r.sent_twice)
                    for i, r in enumerate(system.results) if not z3.is_false(r.sent_twice)])
    if not z3.is_false(twice):
        targets[ONE_PER_KIND] = (z3.BoolVal(False), pre(twice))
    tind = {t: z3.Bool(f"target_{k}") for k, t in enumerate(targets)}
    # made in this order (Z3's answers, so Houdini's picks, follow the order terms are made in)
    domain, assumed, trans = pre(system.domain), pre(system.assumed), pre(system.trans)
    base = [domain, assumed, trans, *fifo_keys_sent(enc, cur),
            *[z3.Implies(tind[t], z3.Not(bad)) for t, (bad, _b) in targets.items()]]
    # what a pre-state satisfies without the transition: all the minimisation's implication
    # pass (``_Lazy.implied``) needs
    states = [f for f in base if f is not trans]
    return Instance(inst, enc, cur, at_cur, at_nxt, targets, tind, base, states,
                    time.perf_counter() - t0)


# NOTE(houdini-select-smaller): the set is chosen and minimised at ``select_at`` agents (3),
# then the cutoff's selection starts from it and adds what its own counterexamples need, and
# only those additions are minimised there. A query at 3 agents is cheaper than at 4, and the
# chosen set comes out inductive at the cutoff and at every smaller size as before (the final
# proof for every N decides anyway). German's Houdini took 3.9-4.1 s at the cutoff alone and
# 2.1-2.9 s this way, side by side (results/infer/README.md, "Session 25"); both give 24 lines.
# The instances below the cutoff are made beside the filter (``infer``'s ``encode``).
# NOTE(houdini-ladder): with a cutoff above 4 (``prove --houdini-agents``), every size between
# completes the set in turn (3, 4, then 5), each adding what its own counterexamples need:
# most of them are met at the cheaper sizes. MSI chosen at 3 and completed at 5 directly had,
# after 200 queries at 5 agents, one query still running at 26 min (results/infer/README.md,
# "Session 29"); at 5 agents what is left are the counterexamples only 5 agents have (a cycle
# of three requestors beside an owner's chain of two).
def houdini_finite(model: ir.Model, cands: list[Candidate], tpl: Templates, agents: int = 4,
                   progress: Callable[[str], None] | None = None,
                   rlimit: int = CHECK_RLIMIT, seconds: float | None = None,
                   instance: Instance | Unsupported | None = None,
                   select_at: int | None = None,
                   smaller_instances: dict[int, Instance | None] | None = None,
                   keep_global: bool = False) -> FiniteResult:
    """A small set of candidates (``support``) that, with the targets, is inductive at
    ``agents`` agents; ``alive`` is what no counterexample dropped. ``seconds``: a wall-clock
    cap on the whole selection (``prove --timeout``); past it, ``Unsupported``.
    ``instance``: ``encode_instance(model, tpl, agents)`` made earlier (or why it could not
    be: raised here), else made here. ``select_at``: the size the set is chosen and minimised
    at before the cutoff completes it (NOTE(houdini-select-smaller)); ``smaller_instances``:
    instances below the cutoff made earlier (``smaller_instance``), by size.
    ``keep_global``: minimisation keeps every chosen global line (NOTE(minimize-keeps-global))."""
    say = progress or (lambda _s: None)

    def keep(k: int) -> bool:
        return keep_global and cands[k].kind == "global"
    if isinstance(instance, Unsupported):
        raise instance
    ins = instance if instance is not None else encode_instance(model, tpl, agents)
    t0 = time.perf_counter() - ins.seconds  # as if encoded here: the cap counts it
    n = ins.enc.n
    targets = ins.targets
    # Z3 reuses the ids of freed terms, and its answers (so Houdini's picks) follow the ids:
    # free every garbage term now, so the search starts alike whether the filter ran in this
    # process or in a worker (``prove --jobs``), and collections come at the same points after
    gc.collect()
    deadline = None if seconds is None else t0 + seconds
    smaller = _Smaller(model, cands, tpl, rlimit, deadline, say)
    smaller.instances.update(smaller_instances or {})
    first = ins
    if select_at is not None and 1 <= select_at < n:  # NOTE(houdini-select-smaller)
        first = smaller._instance(select_at) or ins
    forwards: dict[int, Forward] = {}  # NOTE(houdini-forward), per size
    runs: list[_Lazy] = []  # every selection's, for the stats

    def on(at: Instance) -> _Lazy:
        run = _lazy_on(at, cands, tpl, rlimit, deadline)
        if at.enc.n not in forwards:
            forwards[at.enc.n] = Forward(at.inst, tpl, cands)
        fw = forwards[at.enc.n]
        run.forward = lambda m, alive: fw.dropped(state_of(at.enc, m, at.cur), alive)
        runs.append(run)
        return run
    run = on(first)
    t1 = time.perf_counter()
    say(f"Houdini at {first.enc.n} agents: {len(cands)} candidates, atoms encoded "
        f"({ins.seconds:.1f} s)")
    chosen, alive, failed = run.solve(say)
    t2 = time.perf_counter()
    picked = len(chosen)
    chosen, implied = _minimised(run, first, chosen, set(targets) - set(failed), say,
                                 keep=keep)
    # NOTE(houdini-ladder): each size above it completes what the size below chose
    completed_at: list[int] = []
    for m in range(first.enc.n + 1, n + 1):
        at = ins if m == n else smaller._instance(m)
        if at is None:  # a size the spec's agents range excludes
            continue
        completed_at.append(m)
        run = on(at)
        before = set(chosen)
        chosen, alive, failed = run.solve(say, chosen, alive, failed)
        added = chosen - before
        picked += len(added)
        if added:
            chosen, more = _minimised(run, at, chosen, set(targets) - set(failed), say,
                                      only=added, keep=keep)
            implied += more
    minimized = len(chosen)
    t3 = time.perf_counter()
    for _pass in range(SMALLER_PASSES):
        chosen, alive, failed, changed = smaller.complete(range(1, n), chosen, alive, failed)
        if not changed:
            break
        # what the smaller sizes added or dropped: the cutoff's selection again, from there
        again = on(ins)
        before_pass = (set(chosen), set(alive), list(failed))
        chosen, alive, failed = again.solve(say, chosen, alive, failed)
        if (chosen, alive, failed) == before_pass:
            break
    t4 = time.perf_counter()
    stats = {"queries": sum(r.queries for r in runs), "selection_queries": sum(
                 r.picks for r in runs), "unknown": 0,
             "retries": sum(r.retries for r in runs),
             "kept_unknown": sum(r.kept_unknown for r in runs),
             "implied": implied, "witnessed": sum(r.witnessed for r in runs),
             "forward_states": sum(f.explored for f in forwards.values()),
             "forward_disagreements": sum(f.disagreements for f in forwards.values()),
             "dropped": len(cands) - len(alive), "agents": n, "selected_at": first.enc.n,
             "keep_global": keep_global,
             "completed_at": completed_at,
             "picked": picked, "minimized": minimized, "smaller": smaller.stats,
             "final": len(chosen),
             "seconds": {"encode": round(t1 - t0, 3), "fixpoint": round(t2 - t1, 3),
                         "support": round(t3 - t2, 3), "smaller": round(t4 - t3, 3)}}
    return FiniteResult(sorted(alive), sorted(chosen), failed, stats)


# NOTE(minimize-keeps-global): ``keep_global`` (``prove --keep-global-lines``) keeps every
# chosen line about no agent (the home's state, the message types in flight) out of the
# implication pass and the minimisation. At Houdini's size a chain through the agents can
# imply such a line, which must end there; for every N the quantified queries cannot follow
# the chain, and an obligation that the line settles in seconds stays unknown without it. MSI's
# `forall i :: Dir.state == M && Cache[i].state == S -> inflight(Inv, i)` at `GetM in I`
# was unknown after 270 s of every try; with `Dir.state == I -> !inflight(Inv)`, chosen and
# then minimised away, it is proved in about 20 s (results/infer/README.md, "Session 32").
# Such lines are few (German: 8 of 28 with it, 4 of 24 without) and their own obligations
# cheap (MSI: 55 of 56 proved, most in 1-2 s).
def _minimised(run: _Lazy, at: Instance, chosen: set[int], live_t: set[str],
               say: Callable[[str], None], only: set[int] | None = None,
               keep: Callable[[int], bool] = lambda _k: False) -> tuple[set[int], int]:
    """``chosen`` without what the rest implies and what minimisation drops (of ``only``,
    when given; never one ``keep`` holds of, NOTE(minimize-keeps-global)), on a solver free
    of the selection's goals and learnt clauses (2x faster); and how many were implied."""
    run.solver = z3.SolverFor("QF_BV")
    run.solver.set("rlimit", run.rlimit)
    run.solver.add(*at.base, *[z3.Implies(run.ind[k], run.pre[k]) for k in chosen])
    only = {k for k in (chosen if only is None else only) if not keep(k)}
    implied = run.implied(chosen, live_t, only)
    return run.minimize(chosen - implied, live_t, say, only=only - implied), len(implied)


SMALLER_PASSES = 3  # rounds of "smaller sizes, then the cutoff again", at most


def _lazy_on(ins: Instance, cands: list[Candidate], tpl: Templates, rlimit: int,
             deadline: float | None) -> _Lazy:
    """A selection on a fresh solver of ``ins`` (one that starts from a chosen set)."""
    solver = z3.SolverFor("QF_BV")
    solver.set("rlimit", rlimit)
    solver.add(*ins.base)
    run = _Lazy(solver, cands, tpl, ins.at_cur, ins.at_nxt, ins.enc.n, ins.targets, ins.tind)
    run.base, run.states, run.rlimit, run.deadline = ins.base, ins.states, rlimit, deadline
    return run


class _Smaller:
    """NOTE(houdini-smaller): the chosen set, inductive at the cutoff, completed at every
    smaller size. The final proof is for every N, 1 included, and a set inductive at 4 agents
    need not be at 1: a fact about two agents says nothing there, and what it stood for must
    be said about one. Each size's selection starts from the chosen set (``_Lazy.solve``) and
    adds the candidates its counterexamples need, or drops those they break (then the cutoff
    is asked again). Instances are encoded once, on first use; a size the spec's ``agents``
    range excludes is skipped."""

    def __init__(self, model: ir.Model, cands: list[Candidate], tpl: Templates, rlimit: int,
                 deadline: float | None, say: Callable[[str], None]) -> None:
        self.model, self.cands, self.tpl, self.rlimit = model, cands, tpl, rlimit
        self.deadline, self.say = deadline, say
        self.instances: dict[int, Instance | None] = {}
        self.stats: dict[str, Any] = {"queries": 0, "added": 0, "dropped": 0, "sizes": []}

    def _instance(self, m: int) -> Instance | None:
        if m not in self.instances:
            self.instances[m] = smaller_instance(self.model, self.tpl, m)
        found = self.instances[m]
        if found is not None and m not in self.stats["sizes"]:
            self.stats["sizes"].append(m)
        return found

    def complete(self, sizes: Iterable[int], chosen: set[int], alive: set[int],
                 failed: list[str]) -> tuple[set[int], set[int], list[str], bool]:
        changed = False
        for m in sizes:
            ins = self._instance(m)
            if ins is None:
                continue
            run = _lazy_on(ins, self.cands, self.tpl, self.rlimit, self.deadline)
            new_chosen, new_alive, new_failed = run.solve(self.say, chosen, alive, failed)
            self.stats["queries"] += run.queries
            added, dropped = new_chosen - chosen, alive - new_alive
            self.stats["added"] += len(added)
            self.stats["dropped"] += len(dropped)
            if added or dropped or new_failed != failed:
                changed = True
                self.say(f"Houdini at {m} agents: {len(added)} candidates added, "
                         f"{len(dropped)} dropped ({run.queries} queries)")
            chosen, alive, failed = new_chosen, new_alive, new_failed
        return chosen, alive, failed, changed


def smaller_instance(model: ir.Model, tpl: Templates, agents: int) -> Instance | None:
    """The instance of ``agents`` agents below the cutoff, None if the spec's range excludes
    the size (made beside the filter by ``infer``, or on first use by ``_Smaller``)."""
    from coherence.spec.load import rebind
    try:
        rebind(model, {"agents": agents})
    except SpecError:
        return None
    return encode_instance(model, tpl, agents)


class _Lazy:
    """Counterexample-driven Houdini on one solver, target first (NOTE(lazy-houdini)).

    The chosen set C starts empty. Each query asks for a step from a state satisfying C and
    the live targets to one violating one of them. If the counterexample's pre-state falsifies
    an alive candidate not in C, the simplest such one joins C (it rules the state out). If
    it falsifies none, the state satisfies every alive candidate, so it is a counterexample
    to the induction of the whole alive set, as eager Houdini would find: every alive
    candidate false in its post-state is dropped (from C too), and so is every target. The
    loop ends when the query is unsatisfiable: C with the targets is inductive at ``n``.

    Candidates are encoded as formulas only when they join C: the alive set is evaluated in
    Python from the atoms' values (``holds``), so a thousand candidates cost no solver time."""

    def __init__(self, solver: z3.Solver, cands: list[Candidate], tpl: Templates,
                 at_cur: AtomTerms, at_nxt: AtomTerms, n: int,
                 targets: dict[str, tuple[Any, Any]], tind: dict[str, Any]) -> None:
        self.solver, self.cands, self.tpl, self.n = solver, cands, tpl, n
        self.at_cur, self.at_nxt = at_cur, at_nxt
        self.targets, self.tind = targets, tind
        self.base: list[Any] = []  # what every solver holds (``rebuild``)
        self.states: list[Any] = []  # the part of ``base`` about the pre-state alone
        # NOTE(houdini-witnesses): the models of the sat queries, as valuers
        self.witnesses: list[Callable[[Any], bool]] = []
        self.model: Any = None  # the last sat query's model
        self.witnessed = 0  # minimisation queries a witness answered
        self.rlimit = CHECK_RLIMIT
        self.ind: dict[int, Any] = {}
        self.pre: dict[int, Any] = {}
        self.post: dict[int, Any] = {}
        self.queries = self.picks = 0
        self.retries = 0  # NOTE(houdini-retry): checks run again on a fresh solver
        self.kept_unknown = 0  # minimisation queries that ran out (their candidate stays)
        self.deadline: float | None = None  # time.perf_counter() past which no query runs
        # (model, alive) -> more candidates to drop (NOTE(houdini-forward)), or None
        self.forward: Callable[[Any, set[int]], set[int]] | None = None
        # (candidate, after the step?) -> its instances as terms, for ``_holds``
        self._instances: dict[tuple[int, bool], list[tuple[Any, list[tuple[Any, bool]]]]] = {}

    def _holds(self, k: int, after: bool, value: Callable[[Any], bool]) -> bool:
        """Whether candidate ``k`` holds in a model's pre-state (post-state: ``after``)."""
        terms = self._instances.get((k, after))
        if terms is None:
            at = self.at_nxt if after else self.at_cur
            terms = self._instances[(k, after)] = instances(self.cands[k], self.tpl, at,
                                                            self.n)
        return holds(terms, value)

    def _encode(self, k: int) -> None:
        if k not in self.ind:
            self.ind[k] = z3.Bool(f"cand_{k}")
            self.pre[k] = formula(self.cands[k], self.tpl, self.at_cur, self.n)
            self.solver.add(z3.Implies(self.ind[k], self.pre[k]))
            self.post[k] = formula(self.cands[k], self.tpl, self.at_nxt, self.n)

    def _query(self, chosen: set[int], live_t: set[str], without: int | None = None,
               unknown_ok: bool = False) -> Any:
        """Is there a step from a state satisfying ``chosen`` and the targets ``live_t`` to
        one violating one of them? (sat: a counterexample to induction, in the model)
        ``without``: a candidate that, with ``chosen``, is inductive; its pre-state is then
        asked to falsify it, which only narrows the search (NOTE(minimize-without))."""
        act = z3.Bool(f"round_{self.queries}")
        goal = [self.targets[t][1] for t in sorted(live_t)]
        goal += [_not(self.post[k]) for k in sorted(chosen)]
        if self.queries and self.queries % REBUILD_EVERY == 0:
            self.rebuild()
        asked = any_of(goal)
        if without is not None:
            asked = z3.And(asked, _not(self.pre[without]))
        self.solver.add(z3.Implies(act, asked))
        self.queries += 1
        self._bound_by_deadline()
        assumptions = [act, *[self.ind[k] for k in sorted(chosen)],
                       *[self.tind[t] for t in sorted(live_t)]]
        answer = self._retried(assumptions, z3.Implies(act, asked))
        if answer == z3.unknown and not unknown_ok:
            raise Unsupported(f"Houdini at {self.n} agents: Z3 answered unknown "
                              f"({self.solver.reason_unknown()})", NO_SPAN)
        if answer == z3.sat:
            # one model per query (Z3 builds it anew on each call: 3 ms each for German)
            self.model = self.solver.model()
            self.witnesses.append(_valuer(self.model))
        return answer

    def _retried(self, assumptions: list[Any], goal: Any) -> Any:
        """NOTE(houdini-retry): the check, first with ``FIRST_TRY_RLIMIT`` units; when it runs
        out, again on a fresh solver (``rebuild``, with ``goal``) with another random seed and
        twice the units, up to ``self.rlimit``. MSI's query 331 ran over 10 minutes on one
        solver with the order atoms (NOTE(message-position)); one solver's hard search is
        often another's easy one (NOTE(houdini-rebuild)). Deterministic: each try's end is a
        count of units, not a time."""
        limit = min(FIRST_TRY_RLIMIT, self.rlimit)
        seed = 0
        while True:
            self.solver.set("rlimit", limit)
            answer = interrupt.check(self.solver, *assumptions)
            # a tactic that runs out of units says so, or says "no reason given"; a timeout
            # (--timeout's deadline) or an interrupt is the caller's to report
            if (answer != z3.unknown or limit >= self.rlimit
                    or self.solver.reason_unknown() in STOPPED_REASONS):
                self.solver.set("rlimit", self.rlimit)
                return answer
            seed += 1
            self.retries += 1
            limit = min(2 * limit, self.rlimit)
            self.rebuild()
            self.solver.set("random_seed", seed)
            self._bound_by_deadline()
            self.solver.add(goal)

    def _bound_by_deadline(self) -> None:
        """The solver's timeout: what is left of ``prove --timeout``; none left, Unsupported."""
        if self.deadline is None:
            return
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise Unsupported(f"Houdini at {self.n} agents: --timeout reached after "
                              f"{self.queries - 1} queries", NO_SPAN)
        self.solver.set("timeout", max(1, int(left * 1000)))

    def _witness(self, chosen: set[int], live_t: set[str]) -> bool:
        """NOTE(houdini-witnesses): whether an earlier sat query's model answers the query
        ``_query(chosen, live_t)`` (sat) without asking. Every query's formula is the same base
        (the transition, the domain, the targets' indicators) with other assumptions, so a model
        of one is a step of the instance: if its pre-state satisfies ``chosen`` and the live
        targets, and its post-state violates one of them, it is a model of this query too."""
        # NOTE(infer-hash-seed): the targets in sorted order, never the set's: which terms
        # a model evaluates (so the ids of every later term, which Z3's answers follow) must
        # not depend on PYTHONHASHSEED
        targets = [self.targets[t] for t in sorted(live_t)]
        for value in reversed(self.witnesses):
            if any(value(pre) for pre, _post in targets):
                continue
            if not all(self._holds(k, False, value) for k in chosen):
                continue
            if (any(value(post) for _pre, post in targets)
                    or not all(self._holds(k, True, value) for k in chosen)):
                return True
        return False

    def implied(self, chosen: set[int], live_t: set[str],
                only: set[int] | None = None) -> set[int]:
        """The chosen candidates that the others and the live targets imply in every state of
        the instance (one query each, without the transition: 10-100x cheaper than
        ``minimize``'s), the most complex first. Dropping one leaves a set that holds in the
        same states, so it stays inductive; ``minimize`` then asks fewer, smaller queries
        (German: 13 of 44 chosen, in 0.04 s)."""
        solver = z3.SolverFor("QF_BV")
        solver.set("rlimit", self.rlimit)
        solver.add(*self.states, *[z3.Implies(self.ind[k], self.pre[k]) for k in chosen])
        out = set(chosen)
        for k in self._simplest_last(chosen if only is None else only):
            negated = z3.Bool(f"negated_{k}")
            solver.add(z3.Implies(negated, _not(self.pre[k])))
            if interrupt.check(solver, negated, *[self.ind[j] for j in sorted(out - {k})],
                            *[self.tind[t] for t in sorted(live_t)]) == z3.unsat:
                out.discard(k)
        return set(chosen) - out

    def _simplest_last(self, chosen: set[int]) -> list[int]:
        cands = self.cands
        return sorted(chosen, key=lambda k: (-cands[k].size, -_KIND_RANK.get(cands[k].kind, 3),
                                             -k))

    def rebuild(self) -> None:
        """NOTE(houdini-rebuild): a fresh solver with the base and every encoded candidate,
        without the earlier rounds' goals and learnt clauses. On one solver, MSI's queries
        grew from 0.4 s to minutes (one ran over 9 min at query 280); rebuilt every
        ``REBUILD_EVERY`` queries they stayed near 0.5 s (1,370 queries in 624 s)."""
        self.solver = z3.SolverFor("QF_BV")
        self.solver.set("rlimit", self.rlimit)
        self.solver.add(*self.base, *[z3.Implies(self.ind[k], self.pre[k]) for k in self.ind])

    def minimize(self, chosen: set[int], live_t: set[str],
                 progress: Callable[[str], None] | None = None,
                 only: set[int] | None = None) -> set[int]:
        """Drop every chosen candidate the others and the targets do without, the most
        complex first (one query each: the issue's minimal output). The lazy selection adds a
        candidate per counterexample, and a later one often subsumes an earlier one.

        NOTE(minimize-without): ``out`` is inductive with the targets throughout (the chosen
        set is, ``implied`` keeps it so, and a candidate leaves only when the rest is). So a
        step from a state of ``out - {k}`` that breaks it starts where ``k`` is false (where
        ``k`` holds, the state satisfies ``out``, whose steps break nothing): each query asks
        for such a pre-state, the same answer in a narrower search, and the same set comes
        out.

        NOTE(houdini-retry): a query here only makes the output smaller, so it gets
        ``MINIMIZE_RLIMIT`` units, and one that runs out keeps its candidate (sound: the
        set stays inductive). MSI's 285 chosen candidates met queries that ran for minutes."""
        out = set(chosen)
        say = progress or (lambda _s: None)
        full, self.rlimit = self.rlimit, min(self.rlimit, MINIMIZE_RLIMIT)
        try:
            asking = self._simplest_last(chosen if only is None else only)
            for asked, k in enumerate(asking):
                say(f"Houdini at {self.n} agents: minimising, {asked} of {len(asking)} asked, "
                    f"{len(out)} kept")
                if self._witness(out - {k}, live_t):
                    self.witnessed += 1
                    continue
                answer = self._query(out - {k}, live_t, without=k, unknown_ok=True)
                if answer == z3.unsat:
                    out.discard(k)
                elif answer == z3.unknown:
                    self.kept_unknown += 1
        finally:
            self.rlimit = full
        return out

    def solve(self, say: Callable[[str], None], chosen: Iterable[int] = (),
              alive: Iterable[int] | None = None, failed: Iterable[str] = ()
              ) -> tuple[set[int], set[int], list[str]]:
        """Where the selection starts: ``chosen`` (empty: the lazy Houdini's start; a set
        chosen earlier, at another size, is then completed), ``alive`` (default: every
        candidate) and the targets already ``failed``."""
        cands, n = self.cands, self.n
        alive = set(range(len(cands))) if alive is None else set(alive)
        failed = list(failed)
        live_t = set(self.targets) - set(failed)
        chosen = set(chosen) & alive
        for k in sorted(chosen):
            self._encode(k)
        order = sorted(alive, key=lambda k: (cands[k].size, _KIND_RANK.get(cands[k].kind, 3),
                                             k))
        said = self.queries
        while True:
            if self._query(chosen, live_t) == z3.unsat:
                return chosen, alive, failed
            if self.queries - said >= 10:  # a pick or a drop: MSI's picks alone run minutes
                said = self.queries
                say(f"Houdini at {n} agents: {len(chosen)} chosen, {len(alive)} alive after "
                    f"{self.queries} queries")
            value = self.witnesses[-1]  # the model of this query's answer
            pick = next((k for k in order if k in alive and k not in chosen
                         and not self._holds(k, False, value)), None)
            if pick is not None:
                self.picks += 1
                chosen.add(pick)
                self._encode(pick)
                continue
            dropped = {k for k in alive if not self._holds(k, True, value)}
            if self.forward is not None:  # NOTE(houdini-forward)
                dropped |= self.forward(self.model, alive)
            broke = [t for t in sorted(live_t) if value(self.targets[t][1])]
            if not dropped and not broke:  # the composition and the formula disagree
                dropped = {k for k in chosen if not value(self.post[k])}
                if not dropped:
                    raise AssertionError("Houdini: a model falsifies no goal")
            alive -= dropped
            chosen -= dropped
            for t in broke:
                live_t.discard(t)
                failed.append(t)
                # said at once: a long run (MSI's, half an hour) shows which target broke
                say(f"Houdini at {n} agents: target {t} dropped at query {self.queries}")


_KIND_RANK = {"global": 0, "agent": 1, "pair": 2, "triple": 3}


def _valuer(m: z3.ModelRef) -> Callable[[Any], bool]:
    # keyed by the Python object (the atoms' terms are built once and asked for again and
    # again); the cache holds each term, so no other object can take its id meanwhile
    cache: dict[int, tuple[Any, bool]] = {}

    def value(t: Any) -> bool:
        if t is True or t is False:
            return t
        hit = cache.get(id(t))
        if hit is None:
            hit = cache[id(t)] = (t, z3.is_true(m.eval(t, model_completion=True)))
        return hit[1]
    return value

