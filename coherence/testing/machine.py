"""A Hypothesis ``RuleBasedStateMachine`` built from any spec and configuration.

One rule per transition of the spec (``GPU_Store_3`` is the cache machine's fourth
transition, a ``Store``): its precondition is that some instance is enabled now, and the rule
draws which one (the agent, the line, the event's or rule's parameters, or the in-flight
message to deliver) from the enabled instances, lowest agent and line first so that shrinking
moves towards them. Hypothesis also switches random subsets of rules off per test case
(swarm testing), which reaches rare interleavings sooner.

After every step the machine checks the spec's invariants, unhandled messages and the
coherence oracle over the history of performed loads and stores (``coherence.testing.run``);
a failure raises ``ProtocolFailure`` whose text is the numbered-step trace, replayed through
``coherence.trace.replay_actions``. When no transition is enabled the ``stutter`` rule runs:
it reports a deadlock if something is still pending.
"""

from __future__ import annotations

from typing import Any, Protocol

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from coherence import ir
from coherence.semantics import Semantics
from coherence.testing.oracle import DEFAULT_LIMIT
from coherence.testing.run import Problem, ProtocolFailure, Run, prepare, rule_transitions


class Observer(Protocol):
    """Told about each run (one Hypothesis test case), e.g. to count examples."""

    def started(self) -> None: ...
    def failed(self) -> None: ...
    def ended(self, run: Run) -> None: ...


def build_machine(model: ir.Model, oracle: str = "coherence", observer: Observer | None = None,
                  oracle_limit: int = DEFAULT_LIMIT) -> type[RuleBasedStateMachine]:
    """The state machine class for ``model`` (already instantiated with its parameters)."""
    model, coherence_name = prepare(model)
    sem = Semantics(model)
    transitions = rule_transitions(model)

    def __init__(self: Any) -> None:
        RuleBasedStateMachine.__init__(self)
        self.run = Run(sem, oracle, coherence_name, oracle_limit)
        self.observer = observer
        if observer is not None:
            observer.started()
        fail(self, self.run.check())

    def teardown(self: Any) -> None:
        if observer is not None:
            observer.ended(self.run)

    namespace: dict[str, Any] = {
        "__init__": __init__,
        "teardown": teardown,
        "__doc__": f"Random runs of {model.file} "
                   f"({', '.join(f'{p.name}={p.value}' for p in model.params)}).",
        "semantics": sem,
        "model": model,
    }
    for tr in transitions:
        namespace[_rule_name(tr)] = _make_rule(tr)
    namespace["stutter"] = _make_stutter()
    name = "".join(c if c.isalnum() else "_" for c in f"Protocol_{_stem(model.file)}")
    return type(name, (RuleBasedStateMachine,), namespace)


def _make_rule(tr: ir.Transition) -> Any:
    def step(self: Any, data: st.DataObject) -> None:
        n = len(self.run.instances(tr))
        k = data.draw(st.integers(0, n - 1), label="instance") if n > 1 else 0
        out = self.run.pick(tr, k)
        assert out is not None  # the precondition found an enabled instance
        fail(self, self.run.take(out))

    step.__name__ = _rule_name(tr)
    step.__doc__ = f"{tr.machine}: {tr.kind} {tr.name} in {', '.join(tr.states)}"
    return precondition(lambda self: self.run.enabled(tr))(rule(data=st.data())(step))


def _make_stutter() -> Any:
    def stutter(self: Any) -> None:
        """Nothing is enabled: a deadlock unless everything is quiescent."""
        fail(self, self.run.deadlock())

    return precondition(lambda self: self.run.stuck())(rule()(stutter))


def fail(machine: Any, problem: Problem | None) -> None:
    if problem is None:
        return
    if machine.observer is not None:
        machine.observer.failed()
    raise ProtocolFailure(problem, machine.run)


def _rule_name(tr: ir.Transition) -> str:
    name = "".join(c if c.isalnum() else "_" for c in f"{tr.machine}_{tr.name}_{tr.index}")
    return f"r_{name}" if name[0].isdigit() else name


def _stem(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] or "spec"
