"""NOTE(infer-repair): the final proof's counterexamples to induction put back candidates.

Houdini chooses and minimises its lines at one size (``InferOptions.cutoff`` agents), in a
finite encoding whose pre-states a heuristic narrows (NOTE(infer-fifo-keys)); the final proof
is for every N, over every state the parameterised encoding allows. On msi_home_acks its
concrete counterexamples to induction were states no search reaches (a ``Data`` from a node
to itself, the home in ``S_M`` waiting for nobody) that candidates Houdini kept, then
minimised away, rule out. Those candidates, read on each counterexample's pre-state as mining
reads explored states, are put back (the fewest literals first, a few per counterexample)
and the proof runs again: its verdict is still the only one. The obligations the last proof
settled are not checked again (``prove_all``'s ``reuse``): the lines only grow, and more
hypotheses keep an obligation proved.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator
from typing import Any

import attrs

from coherence import ir
from coherence.semantics import Semantics
from coherence.smt.infer_mine import Candidate, Templates, violated

PER_CTI = 3  # candidates put back per counterexample
PER_UNKNOWN = 3  # candidates put back per property left unknown (NOTE(infer-repair-unknown))
ROUNDS = 3  # proofs again, at most
# an atom's text with its agent or message placeholder (and the field read from the message)
# in one form: ``Dir.owner == {x}`` in an agent's line is ``Dir.owner == {m}.src`` in a line
# about messages whose source is that agent
_PLACEHOLDER = re.compile(r"\{[a-z]\}(\.\w+)?")
_AGENT = re.compile(r"\{[a-z]\}")  # the placeholder alone (a field read from it stays)
_NO_MESSAGE = re.compile(r"inflight\((\w+)\)")  # a message type's atom (any endpoints)
_IN_FLIGHT = re.compile(r"inflight\((\w+)")  # the type of any in-flight atom


def repairs(cands: list[Candidate], alive: Iterable[int], taken: Iterable[int],
            tpl: Templates, ctis: Iterable[Any]) -> list[int]:
    """Indices of ``alive`` candidates (not ``taken``) false in some counterexample's
    pre-state: up to PER_CTI per counterexample, the smallest first."""
    pool = sorted(set(alive) - set(taken), key=lambda k: (cands[k].size, k))
    out: list[int] = []
    for cti in ctis:
        if cti.state is None or cti.instance is None:  # not replayed in the reference
            continue
        rows = tpl.rows(Semantics(cti.instance), cti.state, readable_only=True)
        hit = [k for k in pool if k not in out and violated(cands[k], rows)]
        out.extend(hit[:PER_CTI])
    return out


def related(cands: list[Candidate], alive: Iterable[int], taken: Iterable[int],
            unknown: Iterable[tuple[int, frozenset[str]]]) -> list[int]:
    """NOTE(infer-repair-unknown): indices of ``alive`` candidates (not ``taken``) that share
    an atom with a chosen line whose proof was left unknown, up to PER_UNKNOWN per such
    obligation: first those that also test the source state of the obligation's action
    (``unknown``: (the line's candidate, ``action_atoms``)), lines about one agent (or none)
    before the others, the fewest literals first.

    Minimisation keeps a set that is inductive in the finite instance, where a line can be
    implied through a chain of agents that must end (each waits for the next, and there are
    only N of them). The proof for every N is first-order: its models may hold an endless
    chain, so the line is left unknown with no concrete counterexample to put candidates
    back. MSI's ``forall m: GetM :: !(Dir.owner == m.src)`` at `Store in S` (a cache in S
    sends a GetM): with the 156 lines it stayed unknown for minutes, a ground model holding
    a chain of forwarded ``FwdGetM``s; with ``Cache[i].state == S -> !(Dir.owner == i)``,
    which minimisation had dropped, it is proved in 0.2 s. That line shares the goal's atom
    (``Dir.owner == agent``) and the action's (``Cache[agent].state == S``), and cuts the
    chain at its first agent."""
    local = {"global", "agent"}
    pool = sorted(set(alive) - set(taken), key=lambda k: (cands[k].kind not in local,
                                                          cands[k].size, k))
    keys = [_atoms(c) for c in cands]
    out: list[int] = []
    for goal, at in unknown:
        want = keys[goal]
        hit = [k for k in pool if k not in out and k != goal and keys[k] & want]
        hit.sort(key=lambda k: not keys[k] & at)  # stable: the pool's order within each
        out.extend(hit[:PER_UNKNOWN])
        out.extend(shortcuts(cands, pool, keys, goal, at, out)[:PER_UNKNOWN])
        out.extend(same_message(cands, pool, keys, goal, out)[:PER_UNKNOWN])
    return out


def same_message(cands: list[Candidate], pool: list[int], keys: list[frozenset[str]],
                 goal: int, out: list[int]) -> list[int]:
    """NOTE(infer-repair-same-message): for a line about every message of one type, the
    lines of ``pool`` (not in ``out``) about the same type that share an atom with it, the
    fewest literals first.

    ``related`` takes lines about one agent first, and its three picks may all be such lines.
    MSI's ``forall m: PutM :: (m.val != latest) -> !(Dir.owner == m.src)`` at `Store in M`
    stayed unknown after 90 s with those three (each about a cache in M and the owner); with
    ``forall m: PutM :: inflight(FwdGetM) -> !(Dir.owner == m.src)`` (a cache in M that is not
    the owner has a FwdGetM on its way, and no owner's PutM is in flight meanwhile) it is
    proved in 0.1 s (results/infer/README.md, "Session 34")."""
    kind = cands[goal].kind
    if not kind.startswith("msg "):
        return []
    hit = [k for k in pool if k not in out and k != goal and cands[k].kind == kind
           and keys[k] & keys[goal]]
    return sorted(hit, key=lambda k: cands[k].size)  # stable: the pool's order within


def shortcuts(cands: list[Candidate], pool: list[int], keys: list[frozenset[str]], goal: int,
              at: frozenset[str], out: list[int]) -> list[int]:
    """NOTE(infer-repair-shortcut): the global lines of ``pool`` (not in ``out``) that test
    the action's source state (``at``) and name a message type the goal names, in the
    pool's order.

    They share no atom with the goal, so ``related``'s first rule never finds them. MSI's
    ``forall i :: Dir.state == M && Cache[i].state == S -> inflight(Inv, i)`` at `GetM in I`
    follows, for 4 agents, from a chain through an `Inv`'s requestor and its acks; for every
    N it stayed unknown after 270 s of every try. With the global ``Dir.state == I ->
    !inflight(Inv)``, mined and kept, then minimised away, it is proved in about 20 s
    (results/infer/README.md, "Session 32")."""
    types = _message_types(keys[goal])
    if not types:
        return []
    return [k for k in pool if k not in out and k != goal and cands[k].kind == "global"
            and keys[k] & at and _message_types(keys[k]) & types]


def _message_types(atoms: Iterable[str]) -> frozenset[str]:
    """The message types an atom set reads as in flight (to any agent, or one)."""
    return frozenset(m[1] for a in atoms for m in _IN_FLIGHT.finditer(a))


@attrs.frozen
class SpecGoal:
    """An obligation of one of the spec's own invariants left unknown: what the invariant
    tests (``invariant_atoms``) and where (the action's source-state atoms and message)."""

    states: frozenset[str]
    compares: frozenset[tuple[str, str]]
    at: frozenset[str]
    message: str = ""
    # NOTE(infer-repair-spec-goal-fields): the compared pairs with the side the action sets
    # from a field of its message put as that field (``("@.val", "latest")``: `mem :=
    # msg.val` under ``Dir.mem == latest``), for lines about every message of that type
    through: frozenset[tuple[str, str]] = frozenset()
    guard: frozenset[str] = frozenset()  # the variables the action's guard reads


def for_spec_goals(cands: list[Candidate], alive: Iterable[int], taken: Iterable[int],
                   goals: Iterable[SpecGoal]) -> list[int]:
    """NOTE(infer-repair-spec-goal): indices of ``alive`` candidates (not ``taken``) for an
    obligation of the spec's own invariant left unknown: those that test one of its control
    states (or compare the variables it compares) and either test the action's source state
    or name the message it takes; first those that name that message to any agent, then the
    fewest literals, lines about one agent (or none) before pairs; up to PER_UNKNOWN each.

    ``related`` reads only inferred lines, so such an obligation put nothing back. MSI's
    ``swmr`` at `Data in IS_D` and ``memory_current`` at `Store in M` stayed unknown with 171
    lines; the lines that settle them are two literals long, mined, and minimised away at 4
    agents: ``inflight(Data) -> Cache[i].state != M`` (no cache is M while a Data is on its
    way) and ``Dir.state == I -> Cache[i].state != M``."""
    local = {"global", "agent"}
    pool = sorted(set(alive) - set(taken), key=lambda k: (cands[k].size,
                                                          cands[k].kind not in local, k))
    keys = [_atoms(c) for c in cands]
    out: list[int] = []
    for g in goals:
        hit = [k for k in pool if k not in out and (
            (_tests(keys[k], g) and (keys[k] & g.at or (
                g.message and g.message in _message_types(keys[k]))))
            or (g.through and cands[k].kind == f"msg {g.message}"
                and _compares(_field_atoms(cands[k]), g.through)))]
        # stable: those that name the message to any agent, then those that read what the
        # action's guard reads
        hit.sort(key=lambda k: (f"inflight({g.message})" not in keys[k],
                                not any(v in a for a in keys[k] for v in g.guard)))
        out.extend(hit[:PER_UNKNOWN])
    return out


def _tests(atoms: frozenset[str], g: SpecGoal) -> bool:
    return bool(atoms & g.states) or _compares(atoms, g.compares)


def _compares(atoms: Iterable[str], pairs: Iterable[tuple[str, str]]) -> bool:
    return any(x in a and y in a for a in atoms for x, y in pairs)


def _field_atoms(c: Candidate) -> frozenset[str]:
    """``c``'s atoms with the field a placeholder reads kept: ``{m}.val == latest`` is
    ``@.val == latest`` (``_atoms`` makes it ``@ == latest``)."""
    return frozenset(_AGENT.sub("@", atom.text) for atom, _where, _pos in c.lits)


def fields_into(model: ir.Model, machine: str, states: Iterable[str], message: str,
                compares: Collection[tuple[str, str]]
                ) -> tuple[frozenset[tuple[str, str]], frozenset[str]]:
    """NOTE(infer-repair-spec-goal-fields): for the transitions of ``machine`` that take
    ``message`` in one of ``states``: ``compares`` with each side they assign from a field of
    the message put as that field (``@.val``), paired with the other side; and the variables
    their guards read (``Dir.owner`` in `on PutM in M when msg.src == owner`)."""
    at = set(states)
    takes = [tr for m in model.machines if m.name == machine for tr in m.transitions
             if message and tr.kind is ir.TransitionKind.MESSAGE and tr.name == message
             and at & set(tr.states)]
    out: set[tuple[str, str]] = set()
    guard: set[str] = set()
    for tr in takes:
        guard.update(_variable(x) for x in _nodes(tr.guard) if isinstance(x, ir.MVar | ir.GVar))
        for st in ir.walk_stmts(tr.body):
            if isinstance(st, ir.Assign) and isinstance(st.value, ir.MsgField):
                var, field = _variable(st.target), f"@.{st.value.name}"
                out.update((field, y) for x, y in compares if x == var)
                out.update((x, field) for x, y in compares if y == var)
    return frozenset(out), frozenset(guard)


def invariant_atoms(e: ir.Expr) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """The control-state atoms a spec expression tests (``Cache[a].state in {S, M}`` is
    ``Cache[@].state == S`` and ``Cache[@].state == M``, ``_atoms``' form) and the pairs of
    variables it compares (``Dir.mem == latest``), found by walking its IR."""
    states: set[str] = set()
    compares: set[tuple[str, str]] = set()

    for x in _nodes(e):
        if isinstance(x, ir.Binary) and x.op in ("==", "!=", "in"):
            left, right = x.left, x.right
            if isinstance(right, ir.MState):
                left, right = right, left
            if x.op == "in":
                lits = right.elems if isinstance(right, ir.SetLit) else ()
            else:
                lits = (right,)
            if isinstance(left, ir.MState):
                at = f"{left.machine}[@].state" if left.agent is not None \
                    else f"{left.machine}.state"
                members = left.type.members
                states.update(f"{at} == {members[lit.value]}" for lit in lits
                              if isinstance(lit, ir.Lit) and lit.value is not None)
            names = (_variable(left), _variable(right))
            if x.op != "in" and names[0] and names[1]:
                compares.add((names[0], names[1]))
    return frozenset(states), frozenset(compares)


def _nodes(e: object) -> Iterator[object]:
    """``e`` and every IR node under it."""
    yield e
    if attrs.has(type(e)):
        for f in attrs.fields(type(e)):
            value = getattr(e, f.name)
            for v in value if isinstance(value, tuple) else (value,):
                if attrs.has(type(v)):
                    yield from _nodes(v)


def _variable(e: ir.Expr) -> str:
    """A variable's text in ``_atoms``' form (``Cache[@].data``, ``Dir.mem``, ``latest``),
    "" for anything else."""
    if isinstance(e, ir.MVar):
        return f"{e.machine}[@].{e.name}" if e.agent is not None else f"{e.machine}.{e.name}"
    if isinstance(e, ir.GVar):
        return e.name
    return ""


def localized(cands: list[Candidate], alive: Iterable[int], taken: Iterable[int],
              unknown: Iterable[int]) -> list[int]:
    """NOTE(infer-repair-localized): indices of ``alive`` candidates (not ``taken``) that are
    a line left unknown with one "no ``T`` in flight" made "no ``T`` in flight to this
    agent": ``forall i :: !inflight(Inv) && S(i) -> i in sharers`` (MSI's ``inferred_51``)
    becomes ``forall i :: S(i) && !(i in sharers) -> inflight(Inv, i)``. The second implies
    the first (a message to ``i`` is a message) and, unlike it, says something in the states
    where other agents' messages are in flight: at `Inv in S`, the action that takes the
    last ``Inv``, the first holds of no agent before it and so says nothing of any after. With
    the 284 lines of ``results/infer/msi_directory_putback.aux`` that obligation is unknown
    after 186 s; with the localized line added, proved in 8.6 s (results/infer/README.md,
    "Session 24"). One-agent lines only (in a line about two agents, which one?)."""
    pool = set(alive) - set(taken)
    by_key: dict[frozenset[tuple[str, bool]], int] = {}
    for k in sorted(pool):
        if cands[k].kind == "agent":
            by_key.setdefault(_literals(cands[k]), k)
    out: list[int] = []
    for goal in unknown:
        if cands[goal].kind != "agent":
            continue
        lits = _literals(cands[goal])
        for text, positive in sorted(lits):
            found = _NO_MESSAGE.fullmatch(text)
            if found is None or positive:  # only "none in flight" gets stronger this way
                continue
            key = (lits - {(text, positive)}) | {(f"inflight({found[1]}, @)", positive)}
            hit = by_key.get(key)
            if hit is not None and hit != goal and hit not in out:
                out.append(hit)
    return out


def action_atoms(machine: str, cache: bool, states: Iterable[str]) -> frozenset[str]:
    """The atoms (in ``_atoms``' form) that an action's source states make true."""
    at = f"{machine}[@].state" if cache else f"{machine}.state"
    return frozenset(f"{at} == {st}" for st in states)


def _atoms(c: Candidate) -> frozenset[str]:
    return frozenset(text for text, _pos in _literals(c))


def _literals(c: Candidate) -> frozenset[tuple[str, bool]]:
    """``c``'s conjunction as (atom in ``_atoms``' form, positive) pairs."""
    return frozenset((_PLACEHOLDER.sub("@", atom.text), pos) for atom, _where, pos in c.lits)
