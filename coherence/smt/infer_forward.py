"""Houdini's drops from the states a counterexample reaches (NOTE(houdini-forward)).

In a round where the pre-state of a counterexample to induction satisfies every alive
candidate and every live target, it satisfies the largest inductive subset J of them (the
set Houdini converges to), and so does every state it reaches, J being inductive: a candidate
false in any of those states is not in J. The solver gives one such pre-state per query and
the post-state drops a few candidates; the reference semantics then explores what the
pre-state reaches, breadth first, up to ``FORWARD_STATES`` states, and every candidate false
in one of them is dropped in the same round (evaluated from the mining templates' rows, a
bitmask per column).

Nothing is concluded from a state the encoding of the instance does not have, nor beyond it:
one with two messages of one key on an unordered network (the encoding keeps one per key), a
model error, or a violated invariant ends the search there. The solver's pre-state may hold
a message the spec never sends (a forward from the home to itself): the templates cannot read
its row, which is left out (``Templates.rows(readable_only=True)``): fewer rows, fewer drops,
never a wrong one. Dropping only candidates outside J loses no inductive subset, and the
chosen set is still proved inductive by the solver.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from coherence import ir
from coherence.semantics import Semantics, State
from coherence.smt.infer_mine import Candidate, Templates

FORWARD_STATES = 5_000  # states explored per round (sharer_counter: 403 states in 21 ms)


class Forward:
    """Drops for one instance (the finite Houdini's, at its number of agents)."""

    def __init__(self, inst: ir.Model, tpl: Templates, cands: list[Candidate],
                 limit: int = FORWARD_STATES) -> None:
        self.sem = Semantics(inst)
        self.tpl, self.cands, self.limit = tpl, cands, limit
        self.unordered = [i for i, net in enumerate(inst.networks)
                          if net.ordering is ir.Ordering.UNORDERED]
        self.explored = 0  # states, over every round
        # rounds whose start the templates cannot read, or falsifies an alive candidate
        self.disagreements = 0

    def dropped(self, start: State, alive: Iterable[int]) -> set[int]:
        """The candidates of ``alive`` false in a state that ``start`` reaches (``start``
        included), ``start`` satisfying all of them and the targets."""
        alive = list(alive)
        if not self._encoded(start):
            self.disagreements += 1
            return set()
        start_rows = {k: set(rs) for k, rs in self.tpl.rows(self.sem, start, True).items()}
        if _falsified(self.cands, alive, start_rows):
            self.disagreements += 1  # the solver's state is not the semantics' one: no drop
            return set()
        rows: dict[str, set[tuple[bool, ...]]] = {k: set() for k in self.tpl.slots}
        seen = {start}
        queue = deque([start])
        while queue and len(seen) <= self.limit:
            state = queue.popleft()
            if not self._encoded(state):
                continue
            outcomes, violations = self.sem.enabled(state)
            if violations or self.sem.invariant_violations(state):
                continue
            for kind, rs in self.tpl.rows(self.sem, state, True).items():
                rows[kind].update(rs)
            for out in outcomes:
                nxt = out.state
                if nxt is not None and nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        self.explored += len(seen)
        return _falsified(self.cands, alive, rows)

    def _encoded(self, state: State) -> bool:
        """Whether the encoding has ``state``: at most one message per key on each unordered
        network."""
        _lines, nets, _ = state
        for i in self.unordered:
            keys = [(m[0], m[1], m[2], m[3]) for m in nets[i]]
            if len(keys) != len(set(keys)):
                return False
        return True


def _falsified(cands: list[Candidate], alive: Iterable[int],
               rows: dict[str, set[tuple[bool, ...]]]) -> set[int]:
    masks: dict[str, tuple[list[int], int]] = {}
    for kind, rs in rows.items():
        listed = list(rs)
        if not listed:
            continue
        ncol = len(listed[0])
        cols = [0] * ncol
        for r, row in enumerate(listed):
            bit = 1 << r
            for c, v in enumerate(row):
                if v:
                    cols[c] |= bit
        masks[kind] = (cols, (1 << len(listed)) - 1)
    out: set[int] = set()
    for k in alive:
        cand = cands[k]
        if cand.kind not in masks:
            continue
        cols, full = masks[cand.kind]
        m = full
        for c, positive in cand.cols:
            m &= cols[c] if positive else full & ~cols[c]
            if not m:
                break
        if m:  # some row satisfies the conjunction: the clause is false there
            out.add(k)
    return out
