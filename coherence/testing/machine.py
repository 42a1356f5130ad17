"""A Hypothesis ``RuleBasedStateMachine`` built from any spec and configuration, for users
who combine it with their own settings (``run_state_machine_as_test``).

It makes the same choices as ``coherence fuzz`` and ``protocol_test``
(``coherence.testing.strategy``): its ``begin`` step draws the run's swarm configuration,
and every ``step`` draws one action with the same draws. After every step the spec's
invariants, unhandled messages and the coherence oracle are checked
(``coherence.testing.run``); a failure raises ``ProtocolFailure``, whose text is the
numbered-step trace, replayed through ``coherence.trace.replay_actions``. A run that cannot
move reports a deadlock if something is still pending, and otherwise stays where it is.

``protocol_test`` and ``fuzz`` do not use this class: a plain ``@given(st.data())`` test
runs the same strategy without the stateful machinery's per-step rule bookkeeping.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from coherence import ir
from coherence.semantics import Semantics
from coherence.testing.oracle import DEFAULT_LIMIT
from coherence.testing.run import Problem, ProtocolFailure, Run, prepare
from coherence.testing.strategy import hypothesis_draw, start
from coherence.testing.strategy import step as take_step


def build_machine(model: ir.Model, oracle: str = "coherence",
                  oracle_limit: int = DEFAULT_LIMIT) -> type[RuleBasedStateMachine]:
    """The state machine class for ``model`` (already instantiated with its parameters)."""
    model, coherence_name = prepare(model)
    sem = Semantics(model)

    def __init__(self: Any) -> None:
        RuleBasedStateMachine.__init__(self)
        self.run = Run(sem, oracle, coherence_name, oracle_limit)
        self.stepper = None
        self.stuck = False

    def begin(self: Any, data: st.DataObject) -> None:
        """Check the initial state; draw this run's swarm configuration."""
        _fail(self.run.check(), self.run)
        self.stepper = start(hypothesis_draw(data), self.run)

    def step(self: Any, data: st.DataObject) -> None:
        """One step chosen by the shared strategy (nothing once the run cannot move)."""
        if self.stuck:
            return
        moved, problem = take_step(hypothesis_draw(data), self.stepper, self.run)
        self.stuck = not moved
        _fail(problem, self.run)

    namespace: dict[str, Any] = {
        "__init__": __init__,
        "__doc__": f"Random runs of {model.file} "
                   f"({', '.join(f'{p.name}={p.value}' for p in model.params)}).",
        "begin": initialize(data=st.data())(begin),
        "step": rule(data=st.data())(step),
        "semantics": sem,
        "model": model,
    }
    name = "".join(c if c.isalnum() else "_" for c in f"Protocol_{_stem(model.file)}")
    return type(name, (RuleBasedStateMachine,), namespace)


def _fail(problem: Problem | None, run: Run) -> None:
    if problem is not None:
        raise ProtocolFailure(problem, run)


def _stem(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] or "spec"
