"""One run of a protocol model: the state, the actions taken, the observed history, the checks.

Shared by the Hypothesis state machine (which chooses the actions) and by replay and
minimisation (which re-run a chosen list of actions), so a failure means the same thing in
all three. Everything goes through ``coherence.semantics``: ``action_instances`` and
``execute`` for steps, ``invariant_violations``, ``no_transitions`` and ``is_deadlock`` for
properties.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs

from coherence import ir
from coherence.fuzz_options import ORACLES
from coherence.semantics import DEADLOCK_MESSAGE, Action, Outcome, Perform, Semantics, State
from coherence.testing.oracle import DEFAULT_LIMIT, check_coherence, check_performed, check_sc


@attrs.frozen
class Problem:
    """A failed check: ``kind`` and ``name`` as the checker's ``Failure`` has them."""

    kind: str  # invariant | coherence | sc | error | deadlock | no-transition
    name: str
    message: str


class ProtocolFailure(AssertionError):
    """Raised inside a Hypothesis run when a check fails; carries the actions that led there.

    Its text is the readable numbered-step trace, rebuilt by replay only when shown.
    """

    def __init__(self, problem: Problem, run: Run) -> None:
        super().__init__(problem.message)
        self.problem = problem
        self.actions = list(run.actions)
        self.sem = run.sem
        self.oracle = run.oracle
        self.coherence_name = run.coherence_name

    def __str__(self) -> str:
        from coherence.testing.shrink import minimise
        from coherence.trace import replay_actions
        actions, problem = self.actions, self.problem
        note = ""
        if actions:
            actions, problem = minimise(self.sem, actions, problem, self.oracle,
                                        self.coherence_name)
            if len(actions) < len(self.actions):
                note = f", minimised by replay from {len(self.actions)}"
        steps = replay_actions(self.sem, actions)
        lines = [f"{problem.name} ({problem.kind}): {problem.message}",
                 f"trace ({len(steps)} steps{note}):"]
        lines += [s.render() for s in steps]
        return "\n".join(lines)


def prepare(model: ir.Model) -> tuple[ir.Model, str]:
    """The model without its ``coherence`` monitors (the oracle takes their place, outside the
    state), and the name a coherence failure is reported under."""
    names = [p.name for p in model.properties if p.kind == "coherence"]
    kept = tuple(p for p in model.properties if p.kind != "coherence")
    return attrs.evolve(model, properties=kept), (names[0] if names else "coherence")


class Run:
    """The current state of one run and what was observed on the way."""

    def __init__(self, sem: Semantics, oracle: str = "coherence", coherence_name: str = "coherence",
                 oracle_limit: int = DEFAULT_LIMIT) -> None:
        if oracle not in ORACLES:
            raise ValueError(f"oracle must be one of {', '.join(ORACLES)}, not {oracle!r}")
        self.sem = sem
        self.oracle = oracle
        self.coherence_name = coherence_name
        self.oracle_limit = oracle_limit
        self.state: State = sem.initial_states()[0]
        self.actions: list[Action] = []
        self.history: list[Perform] = []
        self.undecided = 0  # oracle searches that hit their limit (neither pass nor fail)
        self.transitions = rule_transitions(sem.model)
        self._instances: dict[int, list[Action]] = {}  # per transition, for this state
        self._outcomes: dict[tuple[int, int], Outcome | None] = {}

    # ------------------------------------------------------------ choosing

    def instances(self, tr: ir.Transition) -> list[Action]:
        """The actions of ``tr`` whose machine is in a source state now (guards unchecked)."""
        found = self._instances.get(id(tr))
        if found is None:
            found = self._instances[id(tr)] = self._list_instances(tr)
        return found

    def outcome(self, tr: ir.Transition, k: int) -> Outcome | None:
        """Instance ``k`` of ``tr`` executed from the current state; None when not enabled."""
        key = (id(tr), k)
        if key not in self._outcomes:
            self._outcomes[key] = self.sem.execute(self.state, self.instances(tr)[k])
        return self._outcomes[key]

    def pick(self, tr: ir.Transition, start: int = 0) -> Outcome | None:
        """The first enabled instance of ``tr`` at or after ``start`` (cyclically).

        Executing instances one by one until one is enabled costs far less than executing all
        of them at every step, when there are many agents and lines.
        """
        n = len(self.instances(tr))
        for j in range(n):
            out = self.outcome(tr, (start + j) % n)
            if out is not None:
                return out
        return None

    def enabled(self, tr: ir.Transition) -> bool:
        return self.pick(tr) is not None

    def _list_instances(self, tr: ir.Transition) -> list[Action]:
        return self.sem.action_instances(self.state, tr)

    def stuck(self) -> bool:
        return not any(self.enabled(tr) for tr in self.transitions)

    def _first_outcomes(self) -> Iterator[Outcome]:
        """Outcomes of the enabled actions, found lazily (one per transition at most)."""
        for tr in self.transitions:
            out = self.pick(tr)
            if out is not None:
                yield out

    # ------------------------------------------------------------ stepping and checking

    def take(self, out: Outcome) -> Problem | None:
        """Apply one outcome; the first failed check, if any."""
        self.actions.append(out.action)
        self.history.extend(out.performs)
        self._instances.clear()
        self._outcomes.clear()
        if out.error is not None:
            return Problem("error", "error", out.error.message)
        assert out.state is not None
        self.state = out.state
        return self.check(out.performs)

    def check(self, performs: Sequence[Perform] = ()) -> Problem | None:
        """The spec's invariants, unhandled messages, and the oracle over the history."""
        for v in self.sem.invariant_violations(self.state):
            return Problem(v.kind, v.name, v.message)
        for problem in unhandled(self.sem, self.state):
            return problem
        if performs and self.oracle != "none":
            return self._oracle({p.line for p in performs})
        return None

    def _oracle(self, lines: set[int]) -> Problem | None:
        if self.oracle == "sc":
            v = check_sc(self.history, limit=self.oracle_limit)
            name = "sequential-consistency"
        elif self.oracle == "performed":
            v = check_performed(self.history)
            name = self.coherence_name
        else:
            v = None
            for line in sorted(lines):  # the other lines' histories did not change
                sub = [p for p in self.history if p.line == line]
                v = check_coherence(sub, limit=self.oracle_limit)
                if v.holds is not True:
                    break
            name = self.coherence_name
        assert v is not None
        if v.holds is None:
            self.undecided += 1
            return None
        if v.holds:
            return None
        message = v.message
        # the oracle knows agent numbers (a hierarchy's: processor nodes); show the spec's names
        for a in sorted(self.sem.proc_of) if self.sem.hier else range(self.sem.n):
            message = message.replace(f"agent {a} ", f"{self.sem.node_name(a)} ")
        return Problem("sc" if self.oracle == "sc" else "coherence", name, message)

    def deadlock(self) -> Problem | None:
        """NOTE(deadlock): ``Semantics.is_deadlock``, reading outcomes only until one exists."""
        if self.sem.is_deadlock(self.state, self._first_outcomes(),
                                self.sem.no_transitions(self.state)):
            return Problem("deadlock", "deadlock", DEADLOCK_MESSAGE)
        return None


def rule_transitions(model: ir.Model) -> list[ir.Transition]:
    """The transitions a run may take: every non-stalling transition of every machine."""
    return [t for m in model.machines for t in m.transitions if not t.stall]


def unhandled(sem: Semantics, state: State) -> list[Problem]:
    """Messages that could arrive now with no transition for them: 'no-transition' errors."""
    return [Problem(v.kind, v.name, v.message) for v in sem.no_transitions(state)]


def applicable(sem: Semantics, state: State, act: Action) -> bool:
    """Whether ``act`` is an instance of its transition in ``state`` (one of
    ``Semantics.action_instances``): the machine is in one of the transition's source
    states, the transition does not stall and, for an arrival, the message is deliverable now.
    """
    machine = sem.model.machine(act.machine)
    tr = machine.transitions[act.transition]
    return act.kind == tr.kind and act in sem.action_instances(state, tr)


def replay(sem: Semantics, actions: Sequence[Action], oracle: str = "coherence",
           coherence_name: str = "coherence",
           skip_disabled: bool = False) -> tuple[Problem | None, list[Action]]:
    """Re-run ``actions`` from the initial state with every check: the first problem, and the
    actions taken up to it. A step that is not enabled ends the replay; with
    ``skip_disabled`` it is instead handed to the machine's transition for the same event or
    message in the state it is in now, or else left out (so deleting a send also deletes its
    receipt, and deleting a load lets a later store run from I instead of S)."""
    run = Run(sem, oracle, coherence_name)
    problem = run.check()
    if problem is not None:
        return problem, []
    for act in actions:
        out = sem.execute(run.state, act) if applicable(sem, run.state, act) else None
        if out is None and skip_disabled:
            out = _same_request(sem, run.state, act)
        if out is None:
            if skip_disabled:
                continue
            return None, run.actions
        problem = run.take(out)
        if problem is not None:
            return problem, run.actions
    return run.deadlock(), run.actions


def _same_request(sem: Semantics, state: State, act: Action) -> Outcome | None:
    """The same event (name, agent, line, parameters) or message arrival, taken by whichever
    transition of the machine handles it in ``state``."""
    machine = sem.model.machine(act.machine)
    name = machine.transitions[act.transition].name
    for tr in machine.transitions:
        if tr.index == act.transition or tr.kind != act.kind or tr.name != name:
            continue
        other = act._replace(transition=tr.index)
        if applicable(sem, state, other):
            out = sem.execute(state, other)
            if out is not None:
                return out
    return None
