"""Fairness tasks: which outcomes of the semantics are the same thing to be fair to.

NOTE(weak-fairness) in ``coherence.liveness.graph`` says what a task is for the checks.

NOTE(task-keys): a task is named by a pair of integers (``TaskKey``), so that an engine
written in another language can name it the same way (the compiled engine's generated C
computes these pairs: ``coherence.engines.cgen.codegen``, ``CO_TASK``):

* delivering a message: ``(MESSAGE << 32 | net, record)``, where ``record`` is the layout's
  exact code of the message with its line, sender and receiver (``Layout.record_code``);
* a rule or event of one machine instance with its parameters:
  ``(RULE << 32 | machine << 16 | transition, code)``, ``code`` the mixed-radix number of
  (agent, with the home as ``agents``; line; each parameter minus its domain's start), agent
  most significant. In a hierarchy the agent is the node (``ir.instances``: one task per
  machine instance), as ``Action.agent`` is there.

An unfair transition performs no task (``None``).
"""

from __future__ import annotations

from coherence import ir
from coherence.layout import Layout
from coherence.liveness.graph import UNFAIR
from coherence.semantics import Action

MESSAGE = 1
RULE = 2
TaskKey = tuple[int, int]


class TaskKeys:
    """``key(action)``: the task an action performs (NOTE(task-keys)), or None if unfair."""

    def __init__(self, model: ir.Model, layout: Layout) -> None:
        self.model = model
        self.layout = layout
        self.machine_index = {m.name: i for i, m in enumerate(model.machines)}
        self.fair = {(m.name, t.index): t.weakly_fair for m in model.machines
                     for t in m.transitions}
        self.strong_transitions = {(m.name, t.index) for m in model.machines
                                   for t in m.transitions if t.strong}
        # per transition: the radices of its parameters (start, size)
        self.params = {(m.name, t.index): [(ir.domain(p.type).start, len(ir.domain(p.type)))
                                           for p in t.params]
                       for m in model.machines for t in m.transitions}

    def key(self, act: Action) -> TaskKey | None:
        if not self.fair[act.machine, act.transition]:
            return None
        if act.kind is ir.TransitionKind.MESSAGE:
            line, src, dst, t, fields = act.msg
            net = self.layout.nets[act.net]
            return (MESSAGE << 32 | act.net,
                    self.layout.record_code(net, line, src, dst, t, fields))
        hi = RULE << 32 | self.machine_index[act.machine] << 16 | act.transition
        code = self.model.agents if act.agent is None else act.agent
        code = code * self.model.lines + act.line
        for (start, size), v in zip(self.params[act.machine, act.transition], act.params,
                                    strict=True):
            code = code * size + (v - start)
        return hi, code

    def strong(self, act: Action) -> bool:
        return (act.machine, act.transition) in self.strong_transitions


class Tasks:
    """Interns the fairness task of each outcome (NOTE(weak-fairness) in ``graph``): a
    message's delivery is one task whichever transition takes it; a rule or event is one per
    machine instance, transition and parameters. Unfair transitions perform no task."""

    def __init__(self, model: ir.Model, layout: Layout | None = None) -> None:
        self.keys = TaskKeys(model, layout or Layout(model))
        self.ids: dict[TaskKey, int] = {}
        self.strong: set[int] = set()  # a task is strong if a strong transition performs it

    def of(self, act: Action) -> int:
        key = self.keys.key(act)
        if key is None:
            return UNFAIR
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.ids)
        if self.keys.strong(act):
            self.strong.add(found)
        return found

    def key_list(self) -> list[TaskKey]:
        """The key of each task id."""
        out: list[TaskKey] = [(0, 0)] * len(self.ids)
        for key, i in self.ids.items():
            out[i] = key
        return out
