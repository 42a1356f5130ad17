"""Candidate invariants from reachable states (the forward search of Cubicle's BRAB, the
sampling of DistAI): explore small instances, evaluate every atom once per state into bit
vectors over the distinct *rows* (a state seen from one agent, from an ordered pair of distinct
agents, or from one message in flight), and keep every clause of at most K literals that no row
satisfies the negation of: ``forall i :: !(l1 && l2 && l3)``.

Clauses are enumerated by size, smallest first, and a clause containing a smaller one that
already holds is left out (it says less); a literal implied by the others on every row is never
added (the clause would say nothing more). Clauses over two agents are canonical up to swapping
``i`` and ``j`` (agent-id symmetry: each is enumerated once). Every clause kept holds in every
explored state: that is all mining promises; Houdini and the prover decide the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from itertools import combinations, permutations
from typing import Any

import attrs

from coherence import ir
from coherence.errors import SpecError
from coherence.explore import Search, StateLimit, bfs
from coherence.semantics import UNDEF, Semantics, State
from coherence.smt.infer_atoms import Atom, Env, Vocabulary, vocabulary
from coherence.symmetry import Symmetry


class _OutOfTime(Exception):
    pass


class _Broken(Exception):
    pass


@attrs.define
class Explored:
    agents: int
    states: list[State]
    complete: bool  # False: stopped at the state or time limit (a prefix of the BFS)
    seconds: float
    # the first failure met (an invariant, a model error, a message no transition takes)
    # and the depth of its state: the search stops there (the spec is refuted, not proved)
    broken: tuple[str, int] | None = None
    engine: str = "reference"  # whose search found the states
    note: str | None = None  # why the reference search ran when another was asked for


# How mining gets the reachable states of one size: ``explore`` below (the reference BFS),
# or a faster engine's search with the same contract, which the command layer passes down
# (back ends never import each other): (model, agents, max_states, deadline) -> Explored.
StateSource = Callable[[ir.Model, int, int, float], Explored]


def symmetry_of(sem: Semantics) -> Symmetry | None:
    """The agent symmetry the mining search reduces by, None for a model outside symmetry
    reduction (then the plain search): one decision for every state source."""
    try:
        return Symmetry(sem)
    except Exception:
        return None


def explore(model: ir.Model, agents: int, max_states: int, deadline: float) -> Explored:
    """The reachable states of ``model`` at ``agents`` agents (symmetry-reduced when the model
    is symmetric), breadth first, up to ``max_states`` or the ``deadline``
    (``time.perf_counter()``): a prefix of the search is still a set of reachable states."""
    from coherence.spec.load import rebind
    t0 = time.perf_counter()
    inst = rebind(model, {"agents": agents})
    sem = Semantics(inst)
    sym = symmetry_of(sem)
    key: Callable[[State], Any] | None = None
    if sym is not None:
        key = lambda s: sym.canonical(s)[0]  # noqa: E731

    def expand(i: int, state: State, add: Callable[[State], int]) -> None:
        if time.perf_counter() > deadline:
            raise _OutOfTime
        outcomes, violations = sem.enabled(state)
        violations = [*violations, *sem.invariant_violations(state)]
        if violations:
            broken.append((violations[0].name, search.depth[i]))
            raise _Broken
        for out in outcomes:
            if out.state is not None:
                add(out.state)

    search: Search[State] = Search()
    broken: list[tuple[str, int]] = []
    complete = True
    try:
        bfs(sem.initial_states(), expand, key, max_states, search)
    except (StateLimit, _OutOfTime, _Broken):
        complete = False
    return Explored(agents, search.nodes, complete, time.perf_counter() - t0,
                    broken[0] if broken else None)


def undefined_vars(model: ir.Model, states: Iterable[State]) -> set[str]:
    """The keys (see ``infer_atoms.vocabulary``) of the variables and message fields seen
    undefined in some state."""
    home = model.home
    cache = model.caches[0] if model.caches else None
    sem = Semantics(model)
    out: set[str] = set()
    for s in states:
        e = Env.of(sem, s)
        for k, v in enumerate(model.globals):
            if e.globals[k] == UNDEF:
                out.add(f"G.{v.name}")
        if home is not None:
            for k, v in enumerate(home.vars):
                if e.home[k + 1] == UNDEF:
                    out.add(f"H.{v.name}")
        if cache is not None:
            for c in e.caches:
                for k, v in enumerate(cache.vars):
                    if c[k + 1] == UNDEF:
                        out.add(f"C.{v.name}")
        for msg in model.messages:
            for _s, _d, fields in e.msgs[msg.name]:
                for f, x in zip(msg.fields, fields, strict=False):
                    if x == UNDEF:
                        out.add(f"msg.{msg.name}.{f.name}")
    return out


@attrs.frozen
class Candidate:
    """One mined clause as spec text; ``kind`` says which template it came from: "global",
    "agent" (one agent), "pair" (two distinct agents), "triple" (three, related) or "msg T"
    (messages of type T)."""

    kind: str
    text: str
    size: int
    lits: tuple[tuple[Atom, str, bool], ...] = ()  # (atom, where, positive): the conjunction
    cols: tuple[tuple[int, bool], ...] = ()  # the same as (column of its table, positive)


@attrs.define
class Table:
    """The distinct rows of one template: each row a tuple of atom values; ``slots`` says what
    each column is, as (atom, where) with where "g", "i", "j" or "m" (a field of ``m``)."""

    slots: list[tuple[Atom, str]]
    rows: set[tuple[bool, ...]] = attrs.Factory(set)


class Templates:
    """The tables' layouts for one vocabulary, and how to read one state's rows."""

    def __init__(self, model: ir.Model, voc: Vocabulary, pairs: bool) -> None:
        self.model = model
        self.voc = voc
        self.pairs = pairs
        g = [(a, "g") for a in voc.globals]
        ai = [(a, "i") for a in voc.agent]
        aj = [(a, "j") for a in voc.agent]
        self.slots: dict[str, list[tuple[Atom, str]]] = {"global": g, "agent": g + ai}
        if pairs:  # NOTE(infer-relations): then each relation both ways
            self.slots["pair"] = (g + ai + aj + [(a, "ij") for a in voc.relations]
                                  + [(a, "ji") for a in voc.relations])
        # three distinct agents i, j, l, related only (two Data to one requestor from two
        # others): each relation between each ordered two of them
        self.triples = pairs and bool(voc.relations)
        if self.triples:
            self.slots["triple"] = [(a, w) for w in TRIPLE_PLACES for a in voc.relations]
        # the agents a message names: every agent atom but counts (they are at ``i`` only)
        self.named = [a for a in voc.agent if not a.counted]
        # an atom that m itself makes true ("a T from m.src") is not a finding
        self.src_keep: dict[str, list[bool]] = {}
        self.dst_keep: dict[str, list[bool]] = {}
        for msg in model.messages:
            n = msg.name
            self.src_keep[n] = [voc.src_is_agent[n] and f"from.{n}" not in (a.group, *a.parts)
                                for a in voc.agent]
            self.dst_keep[n] = [voc.dst_is_agent[n] and f"to.{n}" not in (a.group, *a.parts)
                                for a in voc.agent]
            slots = g + [(a, "m") for a in voc.fields[n]]
            slots += [(a, "src") for a, k in zip(voc.agent, self.src_keep[n], strict=True) if k]
            slots += [(a, "dst") for a, k in zip(voc.agent, self.dst_keep[n], strict=True) if k]
            for _fk, f in voc.agent_fields.get(n, []):
                slots += [(a, f"f:{f}") for a in self.named]
            self.slots[f"msg {n}"] = slots

    def rows(self, sem: Semantics, state: State, readable_only: bool = False
             ) -> dict[str, list[tuple[bool, ...]]]:
        """The rows of one state, per template. ``readable_only``: without the rows of the
        messages whose sender or receiver the templates take for an agent but is the home (a
        state of the encoding that no search reaches, NOTE(houdini-forward)), and always
        without those of messages whose agent field names no agent."""
        voc = self.voc
        e = Env.of(sem, state)
        gv = tuple(a.read(e) for a in voc.globals)
        out: dict[str, list[tuple[bool, ...]]] = {k: [] for k in self.slots}
        out["global"].append(gv)
        n = len(e.caches)
        av = [tuple(a.read(e, x) for a in voc.agent) for x in range(n)]
        nv = ([tuple(a.read(e, x) for a in self.named) for x in range(n)]
              if any(voc.agent_fields.values()) else [])
        rel = {(x, y): tuple(a.read(e, x, y) for a in voc.relations)
               for x in range(n) for y in range(n) if x != y} if self.pairs else {}
        for x in range(n):
            out["agent"].append(gv + av[x])
            if self.pairs:
                for y in range(n):
                    if y != x:
                        out["pair"].append(gv + av[x] + av[y] + rel[(x, y)] + rel[(y, x)])
        if self.triples:
            for b in permutations(range(n), 3):
                at = dict(zip("ijl", b, strict=True))
                out["triple"].append(sum((rel[(at[w[0]], at[w[1]])] for w in TRIPLE_PLACES),
                                         ()))
        for msg in self.model.messages:
            sk, dk = self.src_keep[msg.name], self.dst_keep[msg.name]
            rows = out[f"msg {msg.name}"]
            named = [fk for fk, _f in voc.agent_fields.get(msg.name, [])]
            for mm in e.msgs[msg.name]:
                if readable_only and ((any(sk) and mm[0] >= n) or (any(dk) and mm[1] >= n)):
                    continue
                if any(not 0 <= mm[2][fk] < n for fk in named):
                    continue  # names no agent: only a counterexample's state has it
                row = gv + tuple(a.read(e, mm) for a in voc.fields[msg.name])
                if any(sk):
                    row += tuple(v for v, k in zip(av[mm[0]], sk, strict=True) if k)
                if any(dk):
                    row += tuple(v for v, k in zip(av[mm[1]], dk, strict=True) if k)
                for fk in named:
                    row += nv[mm[2][fk]]
                rows.append(row)
        return out


def violated(cand: Candidate, rows: dict[str, list[tuple[bool, ...]]]) -> bool:
    """Whether some row satisfies the candidate's conjunction (the clause is false)."""
    return any(all(row[c] == p for c, p in cand.cols) for row in rows[cand.kind])


def _tables(model: ir.Model, tpl: Templates, states_by_size: list[list[State]]
            ) -> dict[str, Table]:
    tables = {k: Table(v) for k, v in tpl.slots.items()}
    sem = Semantics(model)
    for states in states_by_size:
        for s in states:
            for k, rows in tpl.rows(sem, s).items():
                tables[k].rows.update(rows)
    return tables


@attrs.define
class MineStats:
    sizes: list[tuple[int, int, bool, float]]  # (agents, states, complete, seconds)
    rows: dict[str, int]
    generated: int  # conjunctions tested
    kept: int
    seconds_explore: float
    seconds_filter: float
    broken: tuple[int, str, int] | None = None  # (agents, failure, depth): the first met
    engines: list[tuple[str, str | None]] = attrs.Factory(list)  # per size: engine, note
    notes: list[str] = attrs.Factory(list)  # a forked filter that failed (run again here)


def mine(model: ir.Model, sizes: Iterable[int] = (2, 3), max_states: int = 20_000,
         explore_seconds: float = 6.0, max_literals: dict[str, int] | None = None,
         pairs: bool = True, source: StateSource = explore,
         beside: Callable[[Templates], None] | None = None, fork: bool = False,
         ) -> tuple[list[Candidate], MineStats, Templates]:
    """Candidates that hold in every explored state of every size in ``sizes`` (found by
    ``source``: the reference search unless the caller passes a faster one).

    ``beside(templates)``: work that needs the templates but not the candidates (``infer``
    encodes Houdini's instance), run once they are known; with ``fork``, here while a forked
    worker filters the candidates (NOTE(forked-shares): mining is pure Python and makes no Z3
    term, so the worker's candidates and this process's terms are what one process makes)."""
    t0 = time.perf_counter()
    deadline = t0 + explore_seconds
    explored: list[Explored] = []
    for n in sizes:
        try:
            ex = source(model, n, max_states, deadline)
        except SpecError:  # a size the spec's agents range excludes
            continue
        explored.append(ex)
        if not ex.complete:
            break
    broken = next(((ex.agents, *ex.broken) for ex in explored if ex.broken is not None), None)
    t1 = time.perf_counter()
    all_states = [s for ex in explored for s in ex.states]
    undef = undefined_vars(model, all_states) if explored else set()
    voc = vocabulary(model, undef)
    limits = {"global": 3, "agent": 3, "pair": 3, "triple": 2, "msg": 3}
    limits.update(max_literals or {})
    tpl = Templates(model, voc, pairs)

    Found = tuple[list[tuple[str, str, int, tuple[tuple[int, bool], ...]]], int, dict[str, int]]

    def filtered() -> Found:
        # (kind, text, size, columns) per candidate: its atoms are the templates' (a worker's
        # are this process's, forked), and an atom is no picklable value
        tables = _tables(model, tpl, [ex.states for ex in explored])
        found, tried = _candidates(tpl, voc, tables, limits)
        return ([(c.kind, c.text, c.size, c.cols) for c in found], tried,
                {k: len(t.rows) for k, t in tables.items()})
    notes: list[str] = []
    if beside is None:
        flat, generated, rows = filtered()
    else:
        from coherence.smt.forked import Shares

        def share(k: int) -> Found | None:
            if k == 0:
                beside(tpl)
                return None
            return filtered()
        shares = Shares(2, share, fork=fork)
        found = shares.results()[1]
        assert found is not None
        flat, generated, rows = found
        notes += [f"the filter was run again in the main process ({why})"
                  for why in shares.failures]
    out = [Candidate(kind, text, size, tuple((*tpl.slots[kind][c], p) for c, p in cols), cols)
           for kind, text, size, cols in flat]
    stats = MineStats([(ex.agents, len(ex.states), ex.complete, ex.seconds) for ex in explored],
                      rows, generated, len(out), t1 - t0, time.perf_counter() - t1, broken,
                      [(ex.engine, ex.note) for ex in explored], notes)
    return out, stats, tpl


def _candidates(tpl: Templates, voc: Vocabulary, tables: dict[str, Table],
                limits: dict[str, int]) -> tuple[list[Candidate], int]:
    """The clauses no row of their table satisfies, and how many conjunctions were tested."""
    out: list[Candidate] = []
    generated = 0
    for kind, table in tables.items():
        if not table.rows:
            if kind.startswith("msg "):  # never in flight: say so
                name = kind[4:]
                out.append(Candidate("global", f"!inflight({name})", 1, (
                    (next(a for a in voc.globals if a.text == f"inflight({name})"), "g", True),),
                    ((next(k for k, (a, _w) in enumerate(tpl.slots["global"])
                           if a.text == f"inflight({name})"), True),)))
            continue
        k = limits["msg" if kind.startswith("msg ") else kind]
        cands, tried = _enumerate(kind, table, k)
        generated += tried
        out += cands
    return _across_templates(out), generated


def _across_templates(cands: list[Candidate]) -> list[Candidate]:
    """Without the clauses another template's clause implies: a message or agent clause whose
    literals about the home and one agent (``m.src``, ``m.dst``, ``i`` or ``j``) contain a
    global or one-agent clause's says less than it (``forall m :: C(m.src)`` follows from
    ``forall i :: C(i)``)."""
    def one(w: str) -> str:
        return "g" if w == "g" else "x"

    def key(c: Candidate) -> frozenset[tuple[str, str, bool]] | None:
        wheres = {w for _a, w, _p in c.lits}
        if "m" in wheres or any(map(is_relation, wheres)) or len(wheres - {"g"}) > 1:
            return None  # about the message's fields, or about two agents
        return frozenset((a.text, one(w), p) for a, w, p in c.lits)

    strong = [key(c) for c in cands if c.kind in ("global", "agent")]
    base = [k for k in strong if k is not None]
    out = []
    for c in cands:
        k = key(c)
        if c.kind not in ("global", "agent") and k is not None and any(b <= k for b in base):
            continue
        out.append(c)
    return out


def _enumerate(kind: str, table: Table, max_size: int) -> tuple[list[Candidate], int]:
    """The minimal conjunctions of literals that no row satisfies, as clauses (see module)."""
    rows = list(table.rows)
    ncol = len(table.slots)
    full = (1 << len(rows)) - 1
    col_mask = [0] * ncol
    for r, row in enumerate(rows):
        bit = 1 << r
        for c in range(ncol):
            if row[c]:
                col_mask[c] |= bit
    # literals: (column, positive); a literal true on every row can only be redundant
    lits: list[tuple[int, bool]] = []
    masks: list[int] = []
    for c in range(ncol):
        for pos in (True, False):
            m = col_mask[c] if pos else full & ~col_mask[c]
            if m == full:
                continue
            lits.append((c, pos))
            masks.append(m)
    wheres = {w for _a, w in table.slots}
    need = {"global": {"g"}, "agent": {"i"}, "pair": {"i", "j"},
            "triple": {"i", "j", "l"}}.get(kind)
    if need is None:  # messages: at least one literal about the message or its endpoints
        need_any = wheres - {"g"}
    found: set[frozenset[int]] = set()
    ones: set[int] = set()  # the literals that are a clause alone
    with_pair = [0] * len(lits)  # per literal, those it makes a two-literal clause with
    out: list[Candidate] = []
    tried = 0
    frontier: list[tuple[tuple[int, ...], int]] = [((), full)]
    swaps = _renamings(table, lits) if kind in ("pair", "triple") else []
    seen_pairs: set[frozenset[int]] = set()
    clash = _clashes(table, lits)
    counted = any(a.counted for a, _w in table.slots)
    for size in range(1, max_size + 1):
        nxt: list[tuple[tuple[int, ...], int]] = []
        for chosen, mask in frontier:
            start = chosen[-1] + 1 if chosen else 0
            blocked = chosen_bits = 0
            for x in chosen:
                blocked |= clash[x]
                chosen_bits |= 1 << x
            for li in range(start, len(lits)):
                if blocked >> li & 1 or (counted and _count_misplaced(table, lits, (*chosen, li))):
                    continue
                m2 = mask & masks[li]
                if m2 == mask:
                    continue  # implied by the others on every row: redundant
                new = (*chosen, li)
                tried += 1
                if size > 1 and _contains_found(new, li, size, ones, with_pair[li] & chosen_bits,
                                                found):
                    continue
                if m2 == 0:
                    fs = frozenset(new)
                    found.add(fs)
                    if size == 1:
                        ones.add(li)
                    elif size == 2:
                        with_pair[li] |= 1 << new[0]
                        with_pair[new[0]] |= 1 << li
                    where = {w for x in new for w in _agents_at(table.slots[lits[x][0]][1])}
                    ok = where >= need if need is not None else bool(where & need_any)
                    if kind == "global":
                        ok = True
                    if ok and swaps:
                        if any(frozenset(sw[x] for x in new) in seen_pairs for sw in swaps):
                            ok = False
                        seen_pairs.add(fs)
                    if ok:
                        chosen_lits = [lits[x] for x in new]
                        out.append(Candidate(
                            kind, _text(kind, table, chosen_lits), size,
                            tuple((*table.slots[c], p) for c, p in chosen_lits),
                            tuple(chosen_lits)))
                elif size < max_size:
                    nxt.append((new, m2))
        frontier = nxt
    return out, tried


TRIPLE_PLACES = ("ij", "ji", "il", "li", "jl", "lj")


def _agents_at(where: str) -> tuple[str, ...]:
    """The template places an atom at ``where`` is about (a relation: both its agents)."""
    return tuple(where) if is_relation(where) else (where,)


def is_relation(where: str) -> bool:
    """Whether ``where`` places a relation: two of the agents ``i``, ``j``, ``l``."""
    return len(where) == 2 and set(where) <= {"i", "j", "l"}


def _renamings(table: Table, lits: list[tuple[int, bool]]) -> list[dict[int, int]]:
    """Per renaming of the template's agents other than the identity (``i``, ``j``
    exchanged; for three agents, their five other orders), literal index -> the renamed
    literal: rows come in every order, so the renamed literal exists whenever the literal
    does, and a clause is enumerated once up to renaming (agent-id symmetry)."""
    names = sorted({x for _a, w in table.slots for x in _agents_at(w)} & {"i", "j", "l"})
    at: dict[tuple[str, int], int] = {}  # (where, position among its place's atoms) -> col
    pos: dict[int, tuple[str, int]] = {}
    count: dict[str, int] = {}
    for c, (_a, w) in enumerate(table.slots):
        k = count.get(w, 0)
        count[w] = k + 1
        at[(w, k)] = c
        pos[c] = (w, k)
    index = {lit: k for k, lit in enumerate(lits)}
    out = []
    for order in permutations(names):
        rename = dict(zip(names, order, strict=True))
        if all(a == b for a, b in rename.items()):
            continue

        def col(c: int, rename: dict[str, str] = rename) -> int:
            w, k = pos[c]
            renamed = w in rename or is_relation(w)  # an agent's place, or a relation's
            return at[("".join(rename[x] for x in w) if renamed else w, k)]
        out.append({k: index[(col(c), p)] for k, (c, p) in enumerate(lits)})
    return out


def _clashes(table: Table, lits: list[tuple[int, bool]]) -> list[int]:
    """Per literal, the bit set of the literals it cannot be conjoined with (``_clash``; the
    relation is symmetric): the enumeration's inner loop tests one bit instead of a pair
    each (half of German's filter time was these tests)."""
    out = [0] * len(lits)
    for a in range(len(lits)):
        for b in range(a):
            if _clash(table, lits[a], lits[b]):
                out[a] |= 1 << b
                out[b] |= 1 << a
    return out


def _clash(table: Table, lit: tuple[int, bool], other: tuple[int, bool]) -> bool:
    """Literals whose conjunction is false whatever the state (``x && !x``, ``x == a && x ==
    b``, a disjunction and one of its parts): that they never hold together is no finding."""
    c, pos = lit
    c2, pos2 = other
    if c2 == c:
        return True  # x && !x
    atom, where = table.slots[c]
    a2, w2 = table.slots[c2]
    if w2 != where:
        return False
    if atom.group in a2.parts or a2.group in atom.parts:
        return True  # a disjunction and one of its parts
    return pos and pos2 and atom.exclusive and a2.exclusive and a2.group == atom.group


COUNT_CONDITIONS = ("C.state", "to.")  # what a count's clause may test beside it


def _count_misplaced(table: Table, lits: list[tuple[int, bool]], new: tuple[int, ...]) -> bool:
    """NOTE(param-count): a count atom only concludes a clause (it is negated in the
    conjunction), alone or under the control state of its agent and the messages to it
    (``Cache[i].state == IM_A -> Cache[i].acks == count(...)``), or as a message's sum
    (``Cache[m.dst].acks + m.acks == count(...)``); anywhere else it would multiply the
    candidates by the number of counts, with facts that say nothing new."""
    counted = [x for x in new if table.slots[lits[x][0]][0].counted]
    if not counted:
        return False
    if len(counted) > 1 or lits[counted[0]][1]:
        return True
    if len(new) > 1 and table.slots[lits[counted[0]][0]][0].alone:
        return True  # NOTE(message-position): an order is a clause alone (see _order_atoms)
    where = table.slots[lits[counted[0]][0]][1]
    if where not in ("i", "m"):
        return True  # the agent template says it of every agent (``i``)
    agent_at = "dst" if where == "m" else where
    for x in new:
        if x == counted[0]:
            continue
        atom, w = table.slots[lits[x][0]]
        if w != agent_at or not atom.group.startswith(COUNT_CONDITIONS):
            return True
    return False


def _contains_found(new: tuple[int, ...], li: int, size: int, ones: set[int], pairs: int,
                    found: set[frozenset[int]]) -> bool:
    """Whether a proper subset of ``new`` with ``li`` is a clause found already: ``li`` alone
    (in ``ones``), ``li`` with one other (``pairs``: the bits of the others that make one
    with it), or with more (looked up); a subset without ``li`` has a nonzero mask (it is a
    prefix's subset)."""
    if li in ones or (size > 2 and pairs):
        return True
    if size <= 3:
        return False
    others = [x for x in new if x != li]
    for k in range(2, len(others)):
        for sub in combinations(others, k):
            if frozenset((*sub, li)) in found:
                return True
    return False


def _text(kind: str, table: Table, lits: list[tuple[int, bool]]) -> str:
    """The clause ``!(l1 && ... && lk)`` as an implication, under its quantifiers."""
    def lit(c: int, pos: bool) -> str:
        atom, where = table.slots[c]
        x, y = binding(where)
        return atom.literal(pos, x, "m", y)

    if len(lits) == 1:
        body = lit(lits[0][0], not lits[0][1])
    else:
        pre = " && ".join(_par(lit(c, p)) for c, p in lits[:-1])
        c, p = lits[-1]
        body = f"{pre} -> {_par(lit(c, not p))}"
    if kind == "global":
        return body
    if kind == "agent":
        return f"forall i: agent :: {_par(body)}"
    if kind == "pair":
        return f"forall i: agent, j: agent :: i != j -> {_par(body)}"
    if kind == "triple":
        return (f"forall i: agent, j: agent, l: agent :: i != j && i != l && j != l -> "
                f"{_par(body)}")
    return f"forall m: {kind[4:]} :: {_par(body)}"


def _par(t: str) -> str:
    if t.startswith("(") and t.endswith(")"):
        depth = 0
        for k, ch in enumerate(t):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and k < len(t) - 1:
                break
        else:
            return t
    if " " not in t:
        return t
    return f"({t})"


# NOTE(cycle-clauses): a clause whose conjunction holds a cycle of one relation (R(i, j) and
# R(j, i); R(i, j), R(j, l) and R(l, i)) rules out only states with such a cycle. It holds at
# the mined sizes for want of agents when the cycle is unreachable, and lines that lean on it
# lean on acyclicity, which no bounded clause states at every size: MSI's forwarding chain
# closed into a cycle of k requestors needs k + 2 agents, and lines Houdini chose beside the
# 2-cycle clause broke at 5 agents on a 3-cycle (results/infer/README.md, "Session 29").
CYCLES = {"pair": (("ij", "ji"),), "triple": (("ij", "jl", "li"), ("ji", "lj", "il"))}


def closes_cycle(cand: Candidate) -> bool:
    """Whether the clause rules out a cycle of one relation (NOTE(cycle-clauses))."""
    places: dict[str, set[str]] = {}
    for atom, where, positive in cand.lits:
        if positive and is_relation(where):
            places.setdefault(atom.text, set()).add(where)
    return any(set(cycle) <= at for at in places.values()
               for cycle in CYCLES.get(cand.kind, ()))


def binding(where: str) -> tuple[str, str]:
    """What ``{x}`` and ``{y}`` of an atom at ``where`` stand for in a clause's text: "g",
    "i", "j", "ij" (``{x}`` is ``i``, ``{y}`` is ``j``), "ji", "m", "src", "dst" or "f:F"
    (the agent of the message's field F)."""
    if where.startswith("f:"):
        return f"m.{where[2:]}", ""
    if is_relation(where):
        return where[0], where[1]
    return {"g": ("", ""), "i": ("i", ""), "j": ("j", ""),
            "src": ("m.src", ""), "dst": ("m.dst", ""), "m": ("", "")}[where]
