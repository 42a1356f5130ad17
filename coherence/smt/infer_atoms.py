"""The literals candidate invariants are made of, each as spec text and as a reader of concrete
states (``semantics`` tuples), so that mining evaluates a literal once per state and the
candidate it ends up in is plain spec text, checked by the prover like a hand-written one.

Three scopes: *global* atoms read the home node and the globals (``Home.CurCmd == Empty``,
``inflight(Inv)``); *agent* atoms read one agent ``{x}`` and its relations to the rest
(``Cache[{x}].state == E``, ``{x} in Home.ShrSet``, ``inflight(GntS, {x})``); *field* atoms
read a message ``m`` in flight (``m.data == AuxData``); *relations* read two agents ``{x}``
and ``{y}`` (``exists k: Inv :: k.dst == {y} && k.req == {x}``, NOTE(infer-relations)).
``{x}`` is replaced by ``i``, ``j``, ``m.src``, ``m.dst`` or the agent a field names
(``m.req``) when a clause is printed. A variable seen undefined in an explored state
is compared under ``!isundefined(...)``, since comparing "undefined" is a model error; every
scalar also has its ``isundefined`` atom, so that "x is always defined" is a candidate (a
comparison of x without a guard is false, as a model error, where x is undefined).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any

import attrs

from coherence import ir
from coherence.semantics import UNDEF, Semantics, State


@attrs.frozen
class Env:
    """One explored state taken apart: globals, home, caches, and per message type the
    (src, dst, fields) of each message in flight, and in ``placed`` the same with its place
    in its fifo queue (NOTE(message-position))."""

    globals: tuple
    home: tuple
    caches: tuple
    msgs: dict[str, list[tuple[int, int, tuple]]]
    placed: dict[str, list[tuple[int, int, tuple, int]]]

    @staticmethod
    def of(sem: Semantics, state: State) -> Env:
        lines, nets, _ = state
        g, h, c = lines[0]
        placed = {m.name: sem.placed(nets, 0, m.name) for m in sem.model.messages}
        return Env(g, h, c, {n: [(s, d, f) for s, d, f, _p in ms] for n, ms in placed.items()},
                   placed)


@attrs.frozen
class Atom:
    """``text`` is a boolean spec expression (with ``{x}`` for agent atoms and ``{m}`` for the
    message of field atoms); ``group`` names the variable it tests: two atoms of one group that
    are both ``exclusive`` cannot both hold (``x == a`` and ``x == b``)."""

    text: str
    group: str
    exclusive: bool
    read: Callable[..., bool]
    neg_text: str = ""
    parts: frozenset[str] = frozenset()  # groups of the atoms this one is the disjunction of
    counted: bool = False  # NOTE(param-count): a count atom (only concludes a clause)
    alone: bool = False  # NOTE(message-position): a clause by itself, never with others

    def literal(self, positive: bool, x: str = "", m: str = "m", y: str = "") -> str:
        t = self.text if positive else (self.neg_text or f"!{_paren(self.text)}")
        return t.replace("{x}", x).replace("{y}", y).replace("{m}", m)


def _paren(t: str) -> str:
    simple = all(ch.isalnum() or ch in "._[]{}" for ch in t)
    return t if simple or (t.startswith("(") and t.endswith(")") and _balanced(t[1:-1])) \
        else f"({t})"


def _balanced(t: str) -> bool:
    depth = 0
    for ch in t:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


Reader = Callable[..., Any]


def _values(t: ir.Type) -> list[tuple[str, int]] | None:
    """(spec text, value) of every value of a small finite type compared with constants; None
    for data values (symmetric: only compared with each other), agents and sets."""
    if isinstance(t, ir.BoolT):
        return [("true", 1)]  # printed as the bare variable, see _eq_atoms
    if isinstance(t, ir.EnumT):
        return [(name, k) for k, name in enumerate(t.members)]
    if isinstance(t, ir.IntT) and t.hi - t.lo <= 4:
        return [(str(v), v) for v in range(t.lo, t.hi + 1)]
    return None


def _eq_atoms(text: str, t: ir.Type, read: Reader, maybe_undef: bool, group: str,
              with_undef: bool = True) -> list[Atom]:
    """``x == c`` for each constant of a small type, and ``isundefined(x)``."""
    out = []
    guard = f"!isundefined({text}) && " if maybe_undef else ""
    vals = _values(t)
    if vals is not None:
        if isinstance(t, ir.BoolT):
            atom_t = f"({guard}{text})" if guard else text
            neg = f"!{text}" if not guard else ""
            out.append(Atom(atom_t, group, True, lambda *a, r=read: r(*a) == 1, neg))
        else:
            for name, v in vals:
                atom_t = f"({guard}{text} == {name})" if guard else f"{text} == {name}"
                neg = "" if guard else f"{text} != {name}"
                out.append(Atom(atom_t, group, True, lambda *a, r=read, v=v: r(*a) == v, neg))
    if with_undef:
        out.append(Atom(f"isundefined({text})", group, True,
                        lambda *a, r=read: r(*a) == UNDEF))
    return out


@attrs.define
class Vocabulary:
    """The atoms of one model, and the message types whose endpoints are agents."""

    globals: list[Atom]
    agent: list[Atom]
    fields: dict[str, list[Atom]]  # per message type
    src_is_agent: dict[str, bool]
    dst_is_agent: dict[str, bool]
    # NOTE(infer-relations): atoms relating two agents ``{x}`` and ``{y}`` (read(e, x, y)),
    # and per message type its agent-valued fields never seen undefined (field index, name)
    relations: list[Atom] = attrs.Factory(list)
    agent_fields: dict[str, list[tuple[int, str]]] = attrs.Factory(dict)


def _machine_vars(model: ir.Model) -> tuple[ir.Machine | None, ir.Machine | None]:
    home = model.home
    cache = model.caches[0] if model.caches else None
    return home, cache


def vocabulary(model: ir.Model, undef: set[str]) -> Vocabulary:
    """Every atom of ``model``; ``undef`` names the variables (``Home.x``, ``Cache.x``,
    ``G.x``, ``msg.T.f``) seen undefined in some explored state."""
    home, cache = _machine_vars(model)
    gl: list[Atom] = []
    ag: list[Atom] = []
    # value-typed terms compared with each other: (text, reader of the env, key)
    gvalues: list[tuple[str, Reader, str]] = []

    def scalar_globals(text: str, t: ir.Type, read: Reader, key: str) -> None:
        mu = key in undef
        if isinstance(t, ir.ValueT):
            gvalues.append((text, read, key))
            gl.append(Atom(f"isundefined({text})", key, True,
                           lambda e, r=read: r(e) == UNDEF))
        elif isinstance(t, ir.AgentT | ir.NodeT):
            gl.append(Atom(f"isundefined({text})", key, True,
                           lambda e, r=read: r(e) == UNDEF))
            agent_vars.append((text, read, key))
        elif isinstance(t, ir.SetT):
            # (no emptiness atom: ``size(s) == 0`` is a quantifier inside every clause using
            # it, which Z3 handles badly; membership atoms say the same per agent)
            agent_sets.append((text, read, key))
        else:
            gl.extend(_eq_atoms(text, t, read, mu, key))
            if isinstance(t, ir.IntT):
                counters.append((text, read, key))

    agent_vars: list[tuple[str, Reader, str]] = []
    counters: list[tuple[str, Reader, str]] = []  # integers that may count a set
    agent_sets: list[tuple[str, Reader, str]] = []
    for k, v in enumerate(model.globals):
        scalar_globals(v.name, v.type, lambda e, k=k: e.globals[k], f"G.{v.name}")
    if home is not None:
        hs = home.state_type.members
        if len(hs) > 1:
            for k, name in enumerate(hs):
                gl.append(Atom(f"{home.name}.state == {name}", "H.state", True,
                               lambda e, k=k: e.home[0] == k,
                               f"{home.name}.state != {name}"))
        for k, v in enumerate(home.vars):
            scalar_globals(f"{home.name}.{v.name}", v.type,
                           lambda e, k=k + 1: e.home[k], f"H.{v.name}")
    # NOTE(param-count): a counter kept beside a set (``Dir.n == size(Dir.sharers)``)
    for (tc, rc, kc), (ts, rs, ks) in ((c, st) for c in counters for st in agent_sets):
        guard = f"!isundefined({tc}) && " if kc in undef else ""
        gl.append(Atom(f"({guard}{tc} == size({ts}))" if guard else f"{tc} == size({ts})",
                       f"{kc}=size.{ks}", False,
                       lambda e, r=rc, rset=rs: r(e) != UNDEF and rset(e) != UNDEF
                       and r(e) == bin(rset(e)).count("1")))
    for (ta, ra, ka), (tb, rb, kb) in _pairs(gvalues):
        gl.append(_value_eq(ta, ra, ka in undef, tb, rb, kb in undef, f"{ka}={kb}", 1))
    for msg in model.messages:
        gl.append(Atom(f"inflight({msg.name})", f"in.{msg.name}", False,
                       lambda e, n=msg.name: bool(e.msgs[n])))

    # agent atoms: {x} is the agent
    if cache is not None:
        cs = cache.state_type.members
        for k, name in enumerate(cs):
            ag.append(Atom(f"{cache.name}[{{x}}].state == {name}", "C.state", True,
                           lambda e, a, k=k: e.caches[a][0] == k,
                           f"{cache.name}[{{x}}].state != {name}"))
        for k, v in enumerate(cache.vars):
            text = f"{cache.name}[{{x}}].{v.name}"
            key = f"C.{v.name}"
            read: Reader = lambda e, a, k=k + 1: e.caches[a][k]  # noqa: E731
            if isinstance(v.type, ir.ValueT):
                ag.append(Atom(f"isundefined({text})", key, True,
                               lambda e, a, r=read: r(e, a) == UNDEF))
                for tg, rg, kg in gvalues:
                    ag.append(_value_eq(text, read, key in undef, tg,
                                        lambda e, a, r=rg: r(e), kg in undef, f"{key}={kg}", 2))
            elif isinstance(v.type, ir.AgentT | ir.NodeT | ir.SetT | ir.ArrayT):
                continue
            else:
                ag.extend(_eq_atoms(text, v.type, read, key in undef, key))
    for text, read_s, key in agent_sets:
        ag.append(Atom(f"{{x}} in {text}", f"{key}.in", False,
                       lambda e, a, r=read_s: r(e) != UNDEF and bool((r(e) >> a) & 1)))
    for text, read_a, key in agent_vars:
        guard = f"!isundefined({text}) && " if key in undef else ""
        ag.append(Atom(f"({guard}{text} == {{x}})" if guard else f"{text} == {{x}}",
                       f"{key}.is", False, lambda e, a, r=read_a: r(e) == a,
                       "" if guard else f"{text} != {{x}}"))

    tables_senders = sender_kinds(model)
    receivers = receiver_kinds(model)
    src_agent = {m.name: tables_senders[m.name] == {ir.MachineKind.CACHE}
                 for m in model.messages}
    dst_agent = {m.name: receivers[m.name] == {ir.MachineKind.CACHE} for m in model.messages}
    # NOTE(infer-relations): a type both the home and the caches receive (MSI's Data) is
    # told apart by where it goes: to the home, or (``to.T`` below) to an agent
    both = {ir.MachineKind.CACHE, ir.MachineKind.HOME}
    for msg in model.messages:
        if tables_senders[msg.name] == both and ir.MachineKind.CACHE in receivers[msg.name]:
            ag.append(Atom(f"(exists k: {msg.name} :: k.src == home && k.dst == {{x}})",
                           f"home.{msg.name}", False,
                           lambda e, a, n=msg.name: any(s >= len(e.caches) and d == a
                                                        for s, d, _f in e.msgs[n])))
        if receivers[msg.name] == both and ir.MachineKind.CACHE in tables_senders[msg.name]:
            ag.append(Atom(f"(exists k: {msg.name} :: k.src == {{x}} && k.dst == home)",
                           f"tohome.{msg.name}", False,
                           lambda e, a, n=msg.name: any(s == a and d >= len(e.caches)
                                                        for s, d, _f in e.msgs[n])))
        if receivers[msg.name] == both:
            gl.append(Atom(f"inflight({msg.name}, home)", f"in.{msg.name}.home", False,
                           lambda e, n=msg.name: any(d >= len(e.caches)
                                                     for _s, d, _f in e.msgs[n])))
    # messages to and from {x}, one atom per type and one per network and direction
    by_net_to: dict[str, list[str]] = {}
    by_net_from: dict[str, list[str]] = {}
    for msg in model.messages:
        # NOTE(infer-relations): a message caches receive, the home too (MSI's Data), is
        # still one "to {x}" atom: {x} is an agent whatever else the type reaches
        if ir.MachineKind.CACHE in receivers[msg.name]:
            ag.append(Atom(f"inflight({msg.name}, {{x}})", f"to.{msg.name}", False,
                           lambda e, a, n=msg.name: any(d == a for _s, d, _f in e.msgs[n])))
            by_net_to.setdefault(msg.network, []).append(msg.name)
        if src_agent[msg.name]:
            ag.append(Atom(f"(exists k: {msg.name} :: k.src == {{x}})", f"from.{msg.name}",
                           False,
                           lambda e, a, n=msg.name: any(s == a for s, _d, _f in e.msgs[n])))
            by_net_from.setdefault(msg.network, []).append(msg.name)
    for net, names in by_net_to.items():
        if len(names) > 1:
            ag.append(Atom("(" + " || ".join(f"inflight({n}, {{x}})" for n in names) + ")",
                           f"to.{net}", False,
                           lambda e, a, ns=tuple(names): any(
                               d == a for n in ns for _s, d, _f in e.msgs[n]),
                           parts=frozenset(f"to.{n}" for n in names)))
    for net, names in by_net_from.items():
        if len(names) > 1:
            ag.append(Atom("(" + " || ".join(f"(exists k: {n} :: k.src == {{x}})"
                                             for n in names) + ")",
                           f"from.{net}", False,
                           lambda e, a, ns=tuple(names): any(
                               s == a for n in ns for s, _d, _f in e.msgs[n]),
                           parts=frozenset(f"from.{n}" for n in names)))

    int_vars = [(k, v) for k, v in enumerate(cache.vars if cache is not None else ())
                if isinstance(v.type, ir.IntT)]
    # only where a cache has a counter: a count is costly to encode (an agent quantifier over
    # a message quantifier) and, without one, says what membership atoms say
    counts = _counted_relations(model, src_agent, dst_agent) if int_vars else []
    for ctext, cread, single in counts:
        # NOTE(param-count): nobody owes {x} anything (per relation: that of a disjunction
        # is their conjunction), and a counter of what is owed to it
        if single:
            ag.append(Atom(f"{ctext} == 0", f"count.{ctext}", False,
                           lambda e, a, r=cread: r(e, a) == 0, counted=True))
        for k, v in int_vars:
            text = f"{cache.name}[{{x}}].{v.name}"  # type: ignore[union-attr]
            guard = f"!isundefined({text}) && " if f"C.{v.name}" in undef else ""
            ag.append(Atom(f"({guard}{text} == {ctext})" if guard else f"{text} == {ctext}",
                           f"C.{v.name}=count.{ctext}", False,
                           lambda e, a, k=k + 1, r=cread: e.caches[a][k] != UNDEF
                           and e.caches[a][k] == r(e, a), counted=True))

    # NOTE(message-count): how many messages of one type a fifo queue to {x} holds, where it
    # can hold two (MSI's PutAck behind a forward): "at most one" is what tells a reachable
    # queue from one with two equal acknowledgements, which no other atom can
    for msg in model.messages:
        net = model.network(msg.network)
        if (net.ordering is ir.Ordering.FIFO and net.capacity >= 2
                and ir.MachineKind.CACHE in receivers[msg.name]):
            ag.append(Atom(f"count(k: {msg.name} :: k.dst == {{x}}) <= 1", f"fifo1.{msg.name}",
                           False, lambda e, a, n=msg.name: sum(
                               d == a for _s, d, _f in e.msgs[n]) <= 1, counted=True))
    ag += _order_atoms(model, receivers)

    fields: dict[str, list[Atom]] = {}
    for msg in model.messages:
        fa: list[Atom] = []
        if ir.MachineKind.CACHE in receivers[msg.name]:
            fa += _sum_counts(msg, cache, int_vars, counts, undef, dst_agent[msg.name])
        # NOTE(infer-relations): which end of a type both kinds send (receive) is the home
        for end, kinds, at in (("src", tables_senders, 0), ("dst", receivers, 1)):
            if kinds[msg.name] == both:
                fa.append(Atom(f"{{m}}.{end} == home", f"msg.{msg.name}.{end}.home", False,
                               lambda e, mm, at=at: mm[at] >= len(e.caches),
                               f"{{m}}.{end} != home"))
        # a message from a node to itself (which the home, or a cache, could send by the
        # types alone): the final proof's counterexamples to induction on msi_home_acks were
        # mostly states holding one (a Data from the home to the home)
        if tables_senders[msg.name] & receivers[msg.name]:
            fa.append(Atom("{m}.src == {m}.dst", f"msg.{msg.name}.src=dst", False,
                           lambda e, mm: mm[0] == mm[1], "{m}.src != {m}.dst"))
        for k, f in enumerate(msg.fields):
            text = f"{{m}}.{f.name}"
            key = f"msg.{msg.name}.{f.name}"
            read_f: Reader = lambda e, mm, k=k: mm[2][k]  # noqa: E731
            if isinstance(f.type, ir.ValueT):
                fa.append(Atom(f"isundefined({text})", key, True,
                               lambda e, mm, r=read_f: r(e, mm) == UNDEF))
                for tg, rg, kg in gvalues:
                    fa.append(_value_eq(text, read_f, key in undef, tg,
                                        lambda e, mm, r=rg: r(e), kg in undef, f"{key}={kg}",
                                        2))
                if (cache is not None and src_agent[msg.name]) or dst_agent[msg.name]:
                    end = "src" if src_agent[msg.name] else "dst"
                    for cv_k, cv in enumerate(cache.vars if cache is not None else ()):
                        if isinstance(cv.type, ir.ValueT):
                            ctext = f"{cache.name}[{{m}}.{end}].{cv.name}"  # type: ignore[union-attr]
                            fa.append(_value_eq(
                                text, read_f, key in undef, ctext,
                                lambda e, mm, c=cv_k + 1, i=(0 if end == "src" else 1):
                                e.caches[mm[i]][c], f"C.{cv.name}" in undef,
                                f"{key}=C.{cv.name}", 2))
            elif isinstance(f.type, ir.AgentT) and key not in undef:
                # NOTE(infer-relations): the agent a message names is its own end (a forward
                # to the requestor itself)
                for end, kinds, at in (("src", tables_senders, 0), ("dst", receivers, 1)):
                    if ir.MachineKind.CACHE in kinds[msg.name]:
                        fa.append(Atom(f"{text} == {{m}}.{end}", f"{key}={end}", False,
                                       lambda e, mm, k=k, at=at: mm[2][k] == mm[at],
                                       f"{text} != {{m}}.{end}"))
            elif isinstance(f.type, ir.AgentT | ir.NodeT | ir.SetT | ir.ArrayT):
                continue
            else:
                fa.extend(_eq_atoms(text, f.type, read_f, key in undef, key))
        fields[msg.name] = fa
    relations = [Atom(text, f"rel.{text}", False, read)
                 for text, read in _owing_relations(model, src_agent, dst_agent,
                                                    tables_senders, receivers, undef)]
    agent_fields = {msg.name: [(k, f.name) for k, f in enumerate(msg.fields)
                               if isinstance(f.type, ir.AgentT)
                               and f"msg.{msg.name}.{f.name}" not in undef]
                    for msg in model.messages}
    return Vocabulary(gl, ag, fields, src_agent, dst_agent, relations, agent_fields)


def _sum_counts(msg: ir.Message, cache: ir.Machine | None, int_vars: list[tuple[int, ir.Var]],
                counts: list[tuple[str, Callable[[Env, int], int], bool]], undef: set[str],
                always_agent: bool) -> list[Atom]:
    """NOTE(param-count): what a message brings to a counter of its receiver that counts the
    agents owing it (``Cache[m.dst].acks + m.acks == count(...)``), for each integer field;
    under ``forall z: agent :: m.dst == z ->`` when the home may receive it too."""
    out: list[Atom] = []
    if cache is None:
        return out
    for fk, f in enumerate(msg.fields):
        if not isinstance(f.type, ir.IntT):
            continue
        for ctext, cread, _single in counts:
            for k, v in int_vars:
                at = "{m}.dst" if always_agent else "z"
                text = f"{cache.name}[{at}].{v.name}"
                body = f"{text} + {{m}}.{f.name} == {ctext.replace('{x}', at)}"
                if f"C.{v.name}" in undef:
                    body = f"!isundefined({text}) && {body}"
                if not always_agent:
                    body = f"forall z: agent :: {{m}}.dst == z -> ({body})"
                out.append(Atom(f"({body})", f"C.{v.name}+{msg.name}.{f.name}=count.{ctext}",
                                False,
                                lambda e, mm, k=k + 1, fk=fk, r=cread:
                                _sum_read(e, mm, k, fk, r), counted=True))
    return out


def _sum_read(e: Env, mm: tuple[int, int, tuple], k: int, fk: int,
              count: Callable[[Env, int], int]) -> bool:
    dst = mm[1]
    if dst >= len(e.caches):
        return True  # to the home: the guarded form says nothing of it
    mine, brought = e.caches[dst][k], mm[2][fk]
    return mine != UNDEF and brought != UNDEF and mine + brought == count(e, dst)


def _owing_relations(model: ir.Model, src_agent: dict[str, bool], dst_agent: dict[str, bool],
                     senders: dict[str, set[ir.MachineKind]] | None = None,
                     receivers: dict[str, set[ir.MachineKind]] | None = None,
                     undef: set[str] | None = None,
                     ) -> list[tuple[str, Callable[[Env, int, int], bool]]]:
    """What agent ``{y}`` may owe agent ``{x}``, one relation per message type and agent
    field: a message to ``{y}`` naming ``{x}`` (an Inv whose requestor is ``{x}``), one from
    ``{y}`` naming ``{x}``, one from ``{y}`` to ``{x}`` (an InvAck). As (text, reader of
    (env, x, y)).

    With ``senders`` and ``receivers`` (NOTE(infer-relations)), a type that only some of its
    messages carry between agents counts too (MSI's Data, sent by the home and by the owner,
    received by both): the text names two agents, so it reads those messages only. With
    ``undef``, a field seen undefined is left out (comparing it would be a model error)."""
    out: list[tuple[str, Callable[[Env, int, int], bool]]] = []
    to_agent, from_agent = dict(dst_agent), dict(src_agent)
    if receivers is not None and senders is not None:
        to_agent = {n: ir.MachineKind.CACHE in k for n, k in receivers.items()}
        from_agent = {n: ir.MachineKind.CACHE in k for n, k in senders.items()}
    for msg in model.messages:
        name = msg.name
        for fk, f in enumerate(msg.fields):
            if not isinstance(f.type, ir.AgentT) or f"msg.{name}.{f.name}" in (undef or ()):
                continue
            if to_agent[name]:
                out.append((f"(exists k: {name} :: k.dst == {{y}} && k.{f.name} == {{x}})",
                            lambda e, x, y, n=name, fk=fk: any(
                                d == y and fs[fk] == x for _s, d, fs in e.msgs[n])))
            if from_agent[name]:
                out.append((f"(exists k: {name} :: k.src == {{y}} && k.{f.name} == {{x}})",
                            lambda e, x, y, n=name, fk=fk: any(
                                s == y and fs[fk] == x for s, _d, fs in e.msgs[n])))
        if from_agent[name] and to_agent[name]:
            out.append((f"(exists k: {name} :: k.src == {{y}} && k.dst == {{x}})",
                        lambda e, x, y, n=name: any(s == y and d == x for s, d, _f in e.msgs[n])))
    return out


COUNTED_RELATIONS = 2  # a count is over the disjunction of at most this many relations


ORDER_GROUP = "fifo-order."


def _order_atoms(model: ir.Model, receivers: dict[str, set[ir.MachineKind]]) -> list[Atom]:
    """NOTE(message-position): which of two types comes first in a fifo queue to {x} that
    can hold both: MSI's home sends ``Inv`` to a sharer before the ``PutAck`` of its own
    ``PutS``, never after, and a cache in ``SI_A`` that met them the other way round would
    be stuck. No count or quantifier without a place can tell the two queues apart. Each is
    a clause alone (``Atom.alone``): under a condition it holds mostly because the two types
    are never queued together there, which costs Houdini a nested message quantifier per
    candidate and says little."""
    out: list[Atom] = []
    for net in model.networks:
        if net.ordering is not ir.Ordering.FIFO or net.capacity < 2:
            continue
        names = [m.name for m in model.messages if m.network == net.name
                 and ir.MachineKind.CACHE in receivers[m.name]]
        for first in names:
            for then in names:
                if first == then:
                    continue
                out.append(Atom(
                    f"(forall ahead: {first} :: forall behind: {then} :: (ahead.dst == {{x}} "
                    f"&& behind.dst == {{x}} && ahead.src == behind.src) -> "
                    f"ahead.pos < behind.pos)",
                    f"{ORDER_GROUP}{first}.{then}", False,
                    lambda e, a, f=first, t=then: all(
                        p1 < p2 for s1, d1, _f1, p1 in e.placed[f] if d1 == a
                        for s2, d2, _f2, p2 in e.placed[t] if d2 == a and s2 == s1),
                    counted=True, alone=True))
    return out


def _counted_relations(model: ir.Model, src_agent: dict[str, bool],
                       dst_agent: dict[str, bool]
                       ) -> list[tuple[str, Callable[[Env, int], int], bool]]:
    """``count(y: agent :: R1 || R2)`` over the owing relations, with ``{x}`` free, its
    reader (env, x) -> the number of agents ``y``, and whether it counts one relation
    (NOTE(param-count))."""
    rels = _owing_relations(model, src_agent, dst_agent)
    picks = [rs for size in range(1, COUNTED_RELATIONS + 1) for rs in combinations(rels, size)]
    out: list[tuple[str, Callable[[Env, int], int], bool]] = []
    for rs in picks:
        body = " || ".join(text.replace("{y}", "y") for text, _r in rs)
        readers = tuple(r for _t, r in rs)
        out.append((f"count(y: agent :: {body})",
                    lambda e, x, rd=readers: sum(1 for y in range(len(e.caches))
                                                 if any(r(e, x, y) for r in rd)),
                    len(rs) == 1))
    return out


def _pairs(xs: list[Any]) -> list[tuple[Any, Any]]:
    return [(a, b) for i, a in enumerate(xs) for b in xs[i + 1:]]


def _value_eq(ta: str, ra: Reader, ua: bool, tb: str, rb: Reader, ub: bool, group: str,
              arity: int) -> Atom:
    """``a == b`` of two data values, under ``!isundefined`` for those that may be undefined
    (the reader takes ``arity`` arguments: the env, and the agent or message)."""
    guards = [f"!isundefined({t}) && " for t, u in ((ta, ua), (tb, ub)) if u]
    text = f"({''.join(guards)}{ta} == {tb})" if guards else f"{ta} == {tb}"
    neg = "" if guards else f"{ta} != {tb}"
    if arity == 1:
        def read(e: Env) -> bool:
            a, b = ra(e), rb(e)
            return a != UNDEF and b != UNDEF and a == b
        return Atom(text, group, False, read, neg)

    def read2(e: Env, x: Any) -> bool:
        a, b = ra(e, x), rb(e, x)
        return a != UNDEF and b != UNDEF and a == b
    return Atom(text, group, False, read2, neg)


def sender_kinds(model: ir.Model) -> dict[str, set[ir.MachineKind]]:
    """Per message, the kinds of machine that send it (infer_qf reads them too)."""
    out: dict[str, set[ir.MachineKind]] = {m.name: set() for m in model.messages}
    for machine in model.machines:
        for tr in machine.transitions:
            for st in ir.walk_stmts(tr.body):
                if isinstance(st, ir.Send | ir.Broadcast):
                    out[st.message].add(machine.kind)
    return out


def receiver_kinds(model: ir.Model) -> dict[str, set[ir.MachineKind]]:
    out: dict[str, set[ir.MachineKind]] = {m.name: set() for m in model.messages}
    for machine in model.machines:
        for tr in machine.transitions:
            if tr.kind is ir.TransitionKind.MESSAGE and tr.name in out:
                out[tr.name].add(machine.kind)
    return out
