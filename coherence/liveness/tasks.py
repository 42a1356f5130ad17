"""Fairness tasks: which outcomes of the semantics are the same thing to be fair to.

NOTE(weak-fairness) in ``coherence.liveness.graph`` says what a task is for the checks.
"""

from __future__ import annotations

from coherence import ir
from coherence.liveness.graph import UNFAIR
from coherence.semantics import Action


class Tasks:
    """Interns the fairness task of each outcome (NOTE(weak-fairness) in ``graph``): a
    message's delivery is one task whichever transition takes it; a rule or event is one per
    machine instance, transition and parameters. Unfair transitions perform no task."""

    def __init__(self, model: ir.Model) -> None:
        self.fair = {(m.name, t.index): t.weakly_fair for m in model.machines
                     for t in m.transitions}
        self.strong_transitions = {(m.name, t.index) for m in model.machines
                                   for t in m.transitions if t.strong}
        self.ids: dict[tuple, int] = {}
        self.strong: set[int] = set()  # a task is strong if a strong transition performs it

    def of(self, act: Action) -> int:
        if not self.fair[act.machine, act.transition]:
            return UNFAIR
        if act.kind is ir.TransitionKind.MESSAGE:
            key: tuple = ("msg", act.net, act.msg)
        else:
            key = (act.machine, act.agent, act.line, act.transition, act.params)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.ids)
        if (act.machine, act.transition) in self.strong_transitions:
            self.strong.add(found)
        return found
