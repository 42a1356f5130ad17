"""Scripted traces of hierarchical specs for tests: a run named step by step as a trace
shows it (``L1[0, 0]``, ``Store(v=1)``, ``?Data(val=0)``), replayed through the semantics."""

from __future__ import annotations

from coherence import ir
from coherence.semantics import Semantics
from coherence.trace import Step, describe, replay_actions


def scripted(model: ir.Model, script: list[tuple[str, str]]) -> list[Step]:
    """The trace that takes, at each step, the enabled action of ``actor`` whose event is
    ``event`` (``Load``, ``Store(v=1)``) or whose received message is ``?Msg(...)``; a
    script step that matches no enabled action, or several, fails the test."""
    # NOTE: only the last step may end the run (a failure of the spec's coherence monitor)
    sem = Semantics(model)
    state = sem.initial_states()[0]
    actions = []
    for k, (actor, event) in enumerate(script, 1):
        outs, _ = sem.enabled(state)
        found = []
        for out in outs:
            step = describe(sem, k, state, out)
            got = f"?{step.received.message}" if step.received is not None else step.event
            if step.actor == actor and got == event:
                found.append(out)
        assert len(found) == 1, (k, actor, event, len(found))
        actions.append(found[0].action)
        if found[0].state is None:  # the coherence monitor's failure ends the trace
            assert k == len(script), (k, actor, event)
            break
        state = found[0].state
    return replay_actions(sem, actions)
