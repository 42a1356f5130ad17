"""How a random run chooses its steps: the one generation strategy of ``coherence fuzz``,
``protocol_test`` and ``state_machine``.

Swarm testing (Groce, Zhang, Eide, Chen & Regehr, ISSTA 2012): rather than giving every
transition the same chance in every run, each run first draws its own configuration
(``Swarm``): which of the spec's transitions it favours and how strongly, which agents and
lines issue requests, and how eagerly in-flight messages are delivered. A run that rarely
delivers lets requests race and messages reorder; one that delivers at once is nearly
sequential; a run confined to two agents on one line reaches the deep interleavings of
those two that uniform choice among eight agents and four lines almost never does.

Every choice is one integer from a ``Draw``: under Hypothesis (``hypothesis_draw``) the
choices are its own, so its example database and shrinker work on them, and a seed gives
the same runs; ``random_draw`` takes them from a ``random.Random`` (for tests and
measurement). The configuration's draws come first and shrink towards "no swarm" (every
transition, agent and line on, weight 1); a step's draws shrink towards the first enabled
action in ``Semantics.action_instances`` order.

A run is up to ``steps`` steps. A step chooses a transition by weight among those with an
instance that is on in this run, then one of its instances (the agent and line, the event's
parameters, or which in-flight message arrives), and executes it; an instance that is not
enabled (false guard, full network) is dropped and the choice repeated. When nothing that is
on is enabled, any enabled action is taken (swarm changes the odds, never what is
reachable); when nothing at all is, the run ends, with a deadlock unless everything is
quiescent (``Run.deadlock``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import attrs
from hypothesis import strategies as st

from coherence import ir
from coherence.semantics import Action, Outcome, Semantics, State
from coherence.testing.run import Problem, Run, rule_transitions

Draw = Callable[[int, int], int]
"""``draw(lo, hi)``: an integer in ``lo..hi`` (inclusive); the source of every choice."""

# a transition's weight in a swarm run, by drawn code: codes shrink to 0, "on, weight 1"
WEIGHTS = (1, 2, 4, 0, 0)
# how message arrivals weigh against requests (x EVENT_SCALE), by drawn code
DELIVERY = (4, 16, 1)
EVENT_SCALE = 4


def hypothesis_draw(data: st.DataObject) -> Draw:
    """Choices made by Hypothesis (``@given(st.data())``): replayable, shrinkable."""
    def draw(lo: int, hi: int) -> int:
        return lo if lo == hi else data.draw(st.integers(lo, hi))
    return draw


def random_draw(rng: random.Random) -> Draw:
    """Choices from ``rng``, uniform."""
    def draw(lo: int, hi: int) -> int:
        return lo if lo == hi else rng.randint(lo, hi)
    return draw


@attrs.frozen
class Swarm:
    """One run's configuration. ``weights`` follows ``rule_transitions`` order (0: off);
    ``agents`` and ``lines`` are those whose requests (events, cache and home rules) are on
    (agents: ``processors``' ids); ``delivery`` is the weight factor of message arrivals
    against requests."""

    weights: tuple[int, ...]
    agents: frozenset[int]
    lines: frozenset[int]
    delivery: int

    @classmethod
    def uniform(cls, transitions: int, agents: int, lines: int) -> Swarm:
        """No swarm: every transition, agent and line on, weight 1 (what shrinking aims at)."""
        return cls((1,) * transitions, frozenset(range(agents)), frozenset(range(lines)),
                   DELIVERY[0])


def draw_swarm(draw: Draw, transitions: int, agents: int, lines: int) -> Swarm:
    """A run's configuration: half the runs are uniform, the rest swarm."""
    if draw(0, 1) == 0:
        return Swarm.uniform(transitions, agents, lines)
    weights = tuple(WEIGHTS[draw(0, len(WEIGHTS) - 1)] for _ in range(transitions))
    if not any(weights):
        weights = (1,) * transitions
    return Swarm(weights, _subset(draw, agents), _subset(draw, lines),
                 DELIVERY[draw(0, len(DELIVERY) - 1)])


def _subset(draw: Draw, n: int) -> frozenset[int]:
    """All of ``range(n)`` (code 0), or a random non-empty part of it: kept ones
    ``first, first + 1, ...`` wrapping, ``size`` of them."""
    if n <= 1 or draw(0, 1) == 0:
        return frozenset(range(n))
    size = draw(1, n - 1)
    first = draw(0, n - 1)
    return frozenset((first + k) % n for k in range(size))


def processors(sem: Semantics) -> list[int]:
    """The ids a swarm run may confine requests to: the agents 0..n-1, or a hierarchy's
    processors, the nodes of the machine that handles processor events (``ir.event_machine``)
    in monitor order. Other instances (a hierarchy's L2s and memory) are never confined, as
    the home is not."""
    if sem.hier:
        return sorted(sem.proc_of, key=sem.proc_of.__getitem__)
    return list(range(sem.n))


class Stepper:
    """Chooses and executes steps of one model under one swarm configuration."""

    def __init__(self, sem: Semantics, swarm: Swarm,
                 transitions: Sequence[ir.Transition] | None = None) -> None:
        self.sem = sem
        self.swarm = swarm
        self.processors = frozenset(processors(sem))
        trs = rule_transitions(sem.model) if transitions is None else list(transitions)
        self.weight = {(t.machine, t.index): w * (swarm.delivery if t.kind is
                                                  ir.TransitionKind.MESSAGE else EVENT_SCALE)
                       for t, w in zip(trs, swarm.weights, strict=True)}

    def next(self, draw: Draw, state: State) -> Outcome | None:
        """The outcome of the chosen step from ``state``; None when nothing is enabled."""
        groups: dict[tuple[str, int], list[Action]] = {}
        rest: list[Action] = []
        for act in self.sem.action_instances(state):
            key = (act.machine, act.transition)
            if self.weight.get(key, 0) and self._focused(act):
                groups.setdefault(key, []).append(act)
            else:
                rest.append(act)
        while groups:
            keys = list(groups)
            total = sum(self.weight[k] for k in keys)
            pick = draw(0, total - 1)
            for key in keys:
                pick -= self.weight[key]
                if pick < 0:
                    break
            acts = groups[key]
            act = acts.pop(draw(0, len(acts) - 1))
            if not acts:
                del groups[key]
            out = self.sem.execute(state, act)
            if out is not None:
                return out
        while rest:  # nothing that is on can move: any enabled action (swarm never blocks)
            out = self.sem.execute(state, rest.pop(draw(0, len(rest) - 1)))
            if out is not None:
                return out
        return None

    def _focused(self, act: Action) -> bool:
        if act.kind is ir.TransitionKind.MESSAGE:
            return True
        return act.line in self.swarm.lines and (act.agent is None
                                                  or act.agent not in self.processors
                                                  or act.agent in self.swarm.agents)


def start(draw: Draw, run: Run) -> Stepper:
    """Draw the run's swarm configuration (the run's first choices)."""
    sem = run.sem
    ids = processors(sem)
    swarm = draw_swarm(draw, len(run.transitions), len(ids), sem.model.lines)
    if ids != list(range(len(ids))):  # a hierarchy: the k-th processor is node ids[k]
        swarm = attrs.evolve(swarm, agents=frozenset(ids[k] for k in swarm.agents))
    return Stepper(sem, swarm, run.transitions)


def step(draw: Draw, stepper: Stepper, run: Run) -> tuple[bool, Problem | None]:
    """One step of ``run``: (whether it moved, the first failed check). A run that cannot
    move is checked for deadlock."""
    out = stepper.next(draw, run.state)
    if out is None:
        return False, run.deadlock()
    return True, run.take(out)


def random_run(draw: Draw, run: Run, steps: int) -> Problem | None:
    """Up to ``steps`` steps of ``run`` from where it is; the first failed check, if any."""
    problem = run.check()
    if problem is not None:
        return problem
    stepper = start(draw, run)
    for _ in range(steps):
        moved, problem = step(draw, stepper, run)
        if problem is not None or not moved:
            return problem
    return None
