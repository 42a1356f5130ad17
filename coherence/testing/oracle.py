"""The coherence oracle: is an observed history of loads and stores coherent, or SC?

Independent of any protocol: it sees only the performed operations, in the order they were
observed, and decides by the definitions (Sorin, Hill & Wood, *Primer*, 2nd ed., ch. 2-3):

* **per-location coherence** (SC per location): for every line there is one total order of
  that line's operations, consistent with each agent's program order, in which every load
  returns the value of the latest store before it (or the line's initial value). Equivalent
  to the axiomatic form "one coherence order of the stores such that po-loc, rf, co and fr
  have no cycle" (no CoRR, CoWR, CoRW or CoWW violation); ``tests/test_oracle.py`` checks
  the two against each other by brute force.
* **sequential consistency**: one such total order of *all* operations across lines.

NOTE(program order): an agent's program order is the order in which its operations appear in
the history (its operations perform in the order it issued them, as every blocking cache
controller in ``specs/`` does).

The decision is exact. Values need not be distinct, so which store a load read from is
unknown and the problem is NP-complete in general (Gibbons & Korach, 1997); the search is a
depth-first search over interleavings with two exact reductions: a load that returns the
current value is taken at once (it commutes with everything after it), and failed
(positions, memory) pairs are remembered. The observed order itself is tried first, which
settles every history of a protocol whose perform points are its serialization points in
linear time. A search that exceeds ``limit`` nodes answers "undecided", never a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

import attrs

DEFAULT_LIMIT = 200_000


class OpLike(Protocol):
    @property
    def agent(self) -> int: ...
    @property
    def line(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def value(self) -> int: ...


class Op(NamedTuple):
    """One performed operation (``coherence.semantics.Perform`` has the same fields)."""

    agent: int
    line: int
    kind: str  # "load" | "store"
    value: int


@attrs.frozen
class Verdict:
    """The oracle's answer.

    ``holds`` is True (a witness order exists), False (none exists) or None (undecided: the
    search limit was reached). On True, ``witness`` lists history indices in a legal order
    (per line for coherence: the lines' orders concatenated). On False, ``line`` is the
    incoherent line (coherence only) and ``first_bad`` the index of the operation that ends
    the shortest prefix of the history with no explanation.
    """

    model: str  # "coherence" | "sc" | "performed"
    holds: bool | None
    message: str
    witness: tuple[int, ...] | None = None
    line: int | None = None
    first_bad: int | None = None


class _Undecided(Exception):
    pass


def check_coherence(history: Sequence[OpLike], initial: int = 0,
                    limit: int = DEFAULT_LIMIT) -> Verdict:
    """Per-location coherence of ``history``; every line starts holding ``initial``."""
    ops = _ops(history)
    witness: list[int] = []
    undecided = False
    for line in sorted({op.line for op in ops}):
        idx = [i for i, op in enumerate(ops) if op.line == line]
        try:
            found = _serialize(ops, idx, initial, limit)
        except _Undecided:
            undecided = True
            continue
        if found is None:
            bad = _first_bad(ops, idx, initial, limit)
            text = _explain(ops, bad, f"line {line}", "the line's", initial)
            return Verdict("coherence", False, text, line=line, first_bad=bad)
        witness.extend(found)
    if undecided:
        return Verdict("coherence", None, f"undecided: more than {limit} search nodes")
    return Verdict("coherence", True, "coherent", witness=tuple(witness))


def check_sc(history: Sequence[OpLike], initial: int = 0,
             limit: int = DEFAULT_LIMIT) -> Verdict:
    """Sequential consistency of ``history`` across all lines."""
    ops = _ops(history)
    idx = list(range(len(ops)))
    try:
        found = _serialize(ops, idx, initial, limit)
    except _Undecided:
        return Verdict("sc", None, f"undecided: more than {limit} search nodes")
    if found is None:
        bad = _first_bad(ops, idx, initial, limit)
        text = _explain(ops, bad, "all lines", "all", initial)
        return Verdict("sc", False, text, first_bad=bad)
    return Verdict("sc", True, "sequentially consistent", witness=tuple(found))


def check_performed(history: Sequence[OpLike], initial: int = 0) -> Verdict:
    """Per-location coherence as ``coherence check`` defines ``property NAME: coherence``
    (docs/language.md): each line's stores are ordered as they were performed, which is the
    history's order; a load may return a store performed before it that is not older than
    the last store its agent observed (its own store, or the store it last read), or the
    initial value while the agent has observed none. Stronger than ``check_coherence``,
    which may order the stores any way: it matters where a store performs before it reaches
    the point that orders it for everybody (a GPU's L2 in a hierarchy).

    Deciding it needs no search: per agent, the earliest admissible store is the best
    choice for each load (``tests/test_coherence_monitor.py`` decides it the same way), so
    one pass is exact, whatever the values."""
    ops = _ops(history)
    views: dict[tuple[int, int], int] = {}  # (line, agent) -> the store it observed last
    for i, op in enumerate(ops):
        key = (op.line, op.agent)
        view = views.get(key, -1)
        if op.kind == "store":
            views[key] = i
            continue
        if (view == -1 and op.value == initial) or (view >= 0 and ops[view].value == op.value):
            continue
        since = next((j for j in range(max(view, 0), i) if ops[j].line == op.line
                      and ops[j].kind == "store" and ops[j].value == op.value), None)
        if since is None:
            seen = f"the store of {ops[view].value} (operation {view})" if view >= 0 else (
                f"the initial value {initial}")
            text = (f"line {op.line}: agent {op.agent} load returning {op.value} (operation "
                    f"{i}): no store of {op.value} was performed since {seen}, which it "
                    "had observed (stores ordered as performed)")
            return Verdict("performed", False, text, line=op.line, first_bad=i)
        views[key] = since
    return Verdict("performed", True, "coherent in perform order",
                   witness=tuple(range(len(ops))))


def is_witness(history: Sequence[OpLike], order: Iterable[int], initial: int = 0) -> bool:
    """Whether ``order`` (history indices) is a legal serialization of all of ``history``:
    a permutation that keeps each agent's program order, each load returning the latest
    store to its line before it."""
    ops = _ops(history)
    order = list(order)
    if sorted(order) != list(range(len(ops))):
        return False
    last: dict[int, int] = {}
    mem: dict[int, int] = {}
    for i in order:
        op = ops[i]
        if last.get(op.agent, -1) > i:
            return False
        last[op.agent] = i
        if op.kind == "store":
            mem[op.line] = op.value
        elif mem.get(op.line, initial) != op.value:
            return False
    return True


# ---------------------------------------------------------------- the search


def _ops(history: Sequence[OpLike]) -> list[Op]:
    out = []
    for h in history:
        if h.kind not in ("load", "store"):
            raise ValueError(f"operation kind must be 'load' or 'store', not {h.kind!r}")
        out.append(Op(h.agent, h.line, h.kind, h.value))
    return out


def _observed_order_works(ops: list[Op], idx: list[int], initial: int) -> bool:
    mem: dict[int, int] = {}
    for i in idx:
        op = ops[i]
        if op.kind == "store":
            mem[op.line] = op.value
        elif mem.get(op.line, initial) != op.value:
            return False
    return True


def _serialize(ops: list[Op], idx: list[int], initial: int, limit: int) -> list[int] | None:
    """A legal order of the operations ``idx`` (ascending history indices), or None."""
    if _observed_order_works(ops, idx, initial):
        return list(idx)
    stored = {(ops[i].line, ops[i].value) for i in idx if ops[i].kind == "store"}
    if any(ops[i].kind == "load" and ops[i].value != initial
           and (ops[i].line, ops[i].value) not in stored for i in idx):
        return None  # a value out of thin air
    agents = sorted({ops[i].agent for i in idx})
    seqs = [[i for i in idx if ops[i].agent == a] for a in agents]
    lines = sorted({ops[i].line for i in idx})
    slot = {line: k for k, line in enumerate(lines)}
    ends = tuple(len(s) for s in seqs)
    path: list[int] = []

    def close(pos: tuple[int, ...], mem: tuple[int, ...]) -> tuple[int, ...]:
        """Take every load that returns the current value (they commute with the rest)."""
        p = list(pos)
        moved = True
        while moved:
            moved = False
            for a, seq in enumerate(seqs):
                while p[a] < len(seq):
                    op = ops[seq[p[a]]]
                    if op.kind != "load" or mem[slot[op.line]] != op.value:
                        break
                    path.append(seq[p[a]])
                    p[a] += 1
                    moved = True
        return tuple(p)

    def stores_next(pos: tuple[int, ...]) -> list[int]:
        cands = [a for a, seq in enumerate(seqs)
                 if pos[a] < len(seq) and ops[seq[pos[a]]].kind == "store"]
        return sorted(cands, key=lambda a: seqs[a][pos[a]])  # observed order first

    # stores left per agent position, by (line, value): a pending load of a value that is
    # neither current nor still to be stored can never be explained (exact pruning)
    left: list[list[dict[tuple[int, int], int]]] = []
    for seq in seqs:
        counts: dict[tuple[int, int], int] = {}
        per = [dict(counts)]
        for i in reversed(seq):
            if ops[i].kind == "store":
                key = (ops[i].line, ops[i].value)
                counts[key] = counts.get(key, 0) + 1
            per.append(dict(counts))
        left.append(per[::-1])

    def dead(pos: tuple[int, ...], mem: tuple[int, ...]) -> bool:
        for a, seq in enumerate(seqs):
            if pos[a] < len(seq):
                op = ops[seq[pos[a]]]
                if op.kind == "load" and mem[slot[op.line]] != op.value and not any(
                        left[b][pos[b]].get((op.line, op.value)) for b in range(len(seqs))):
                    return True
        return False

    mem0 = tuple(initial for _ in lines)
    pos0 = close(tuple(0 for _ in seqs), mem0)
    if pos0 == ends:
        return path
    if dead(pos0, mem0):
        return None
    failed: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    # frame: [pos, mem, candidate agents, next candidate, path length at this node]
    stack: list[list] = [[pos0, mem0, stores_next(pos0), 0, len(path)]]
    nodes = 0
    while stack:
        frame = stack[-1]
        pos, mem, cands, k, plen = frame
        if k == len(cands):
            failed.add((pos, mem))
            stack.pop()
            continue
        frame[3] = k + 1
        del path[plen:]
        a = cands[k]
        i = seqs[a][pos[a]]
        path.append(i)
        op = ops[i]
        new_mem = (*mem[:slot[op.line]], op.value, *mem[slot[op.line] + 1:])
        new_pos = close((*pos[:a], pos[a] + 1, *pos[a + 1:]), new_mem)
        if new_pos == ends:
            return path
        if (new_pos, new_mem) in failed or dead(new_pos, new_mem):
            continue
        nodes += 1
        if nodes > limit:
            raise _Undecided()
        stack.append([new_pos, new_mem, stores_next(new_pos), 0, len(path)])
    return None


def _first_bad(ops: list[Op], idx: list[int], initial: int, limit: int) -> int | None:
    """The operation ending the shortest prefix (in observed order) that has no legal order."""
    for n in range(1, len(idx) + 1):
        if ops[idx[n - 1]].kind != "load":
            continue  # appending a store to an explained prefix keeps it explained
        try:
            if _serialize(ops, idx[:n], initial, limit) is None:
                return idx[n - 1]
        except _Undecided:
            return None
    return None


def _explain(ops: list[Op], bad: int | None, where: str, order: str, initial: int) -> str:
    head = f"{where}: no single order of {order} stores explains every load"
    if bad is None:
        return head
    op = ops[bad]
    stored = any(o.kind == "store" and o.line == op.line and o.value == op.value
                 for o in ops[:bad])
    why = "" if stored or op.value == initial else (
        f" (no store of {op.value} to line {op.line} precedes it)")
    return (f"{head}: the load of agent {op.agent} returning {op.value} on line {op.line} "
            f"(operation {bad}) is the first that cannot be explained{why}")
