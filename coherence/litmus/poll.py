"""Can a poll spin forever? Eventual visibility of a store, on a protocol model (issue 16).

A litmus poll (``r0 = poll x == 1``) is a load issued again each time it returns another value
(``coherence.litmus.model``), so its loop is bounded by the state space, not by a count: a
poll that can spin forever is a cycle of the program's state graph. It is a real one when a
*fair* run can stay in it: the protocol's messages and rules are fair as in
``coherence check --liveness`` (``coherence.liveness``), and every thread keeps issuing its
next operation (strongly fair: it issues at last if its cache lets it again and again). The
graph is built over the runner's nodes (protocol state, program counters, outstanding
operations, registers, memory) with each edge's fairness task, then searched for a fair set of
nodes where some poll has not yet seen its value (``graph.fair_sets``). The literal broadcast
scheme's stale copy (an invalidation dropped in IS_D) is such a set: the reader hits its own
copy of the old value forever.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

import attrs

from coherence import ir
from coherence.litmus.model import DEFAULT_CORE, _check_fit, _Runner
from coherence.litmus.place import placement
from coherence.litmus.program import Litmus
from coherence.liveness.graph import Graph, fair_cycle, fair_sets, path_within, source
from coherence.liveness.tasks import Tasks
from coherence.semantics import Action
from coherence.trace import Step as TraceStep
from coherence.trace import TraceReplayError, describe


@attrs.define
class PollResult:
    can_spin: bool | None  # None: the search stopped before the answer was known
    states: int
    lasso: list[TraceStep] = attrs.Factory(list)  # a run that spins: stem, then its cycle
    loop_start: int | None = None  # the lasso's cycle starts at this step (1-based)
    stopped: str | None = None


def poll_spins(model: ir.Model, test: Litmus, max_states: int | None = None,
               core: str = DEFAULT_CORE, nodes: tuple[int, ...] | None = None) -> PollResult:
    """Whether some fair run leaves one of ``test``'s polls spinning forever, with that run
    (``nodes``: where the threads run, as for ``run_on_model``)."""
    _check_fit(model, test)
    if nodes is None and model.is_hierarchical:
        nodes = placement(model, test, None).nodes
    runner = _Runner(model, test, max_states, core, nodes=nodes)
    if test.cached:
        raise ValueError("poll tests with a 'cached' prelude are not supported")
    polls = [(t, k) for t, prog in enumerate(runner.programs) for k, s in enumerate(prog)
             if s.until is not None]
    tasks = Tasks(runner.model)
    thread_task: dict[int, int] = {}

    def task_of(act: Action) -> int:
        if act.kind is ir.TransitionKind.EVENT and act.agent is not None:
            # a thread keeps issuing its program: its next operation is fair
            return thread_task.setdefault(act.agent, -2 - act.agent)
        return tasks.of(act)

    n = len(test.threads)
    mem = tuple(0 for _ in test.locations)
    regs = tuple(-1 for _ in range(runner.nregs))
    start = [(s, (0,) * n, ((),) * n, regs, mem) for s in runner.sem.initial_states()]
    index: dict[tuple, int] = {}
    nodes: list[tuple] = []
    first, dst, task = array("q", [0]), array("i"), array("i")

    def add(key: tuple) -> int:
        j = index.get(key)
        if j is None:
            j = index[key] = len(nodes)
            nodes.append(key)
        return j

    for key in start:
        add(key)
    stopped: str | None = None
    i = 0
    while i < len(nodes):
        if max_states is not None and i >= max_states:
            stopped = f"--max-states {max_states} reached"
            break
        for act, succ in runner.successors(nodes[i], runner.programs):
            dst.append(add(succ))
            task.append(task_of(act))
        first.append(len(dst))
        i += 1
    if stopped is not None:
        return PollResult(None, len(nodes), stopped=stopped)
    # task ids: the protocol's are >= 0; threads' are mapped past them
    base = len(tasks.ids)
    fixed = array("i", (t if t >= 0 else base + (-2 - t) if t <= -2 else t for t in task))
    # a thread's next operation is strongly fair: a processor that waits for its cache
    # issues at last once the cache lets it again and again (German's rules may take the
    # line away each time it arrives, which weak fairness alone would allow forever)
    g = Graph(first, dst, fixed, set(tasks.strong) | {base + t for t in thread_task})
    spinning = bytearray(1 if _polling(k, polls) else 0 for k in nodes)
    label, _ = fair_sets(g, spinning)
    in_fair = bytearray(1 if c >= 0 else 0 for c in label)
    for s0 in range(len(start)):
        into = path_within(g, s0, spinning, in_fair)
        if into is None:
            continue
        entry = g.dst[into[-1]] if into else s0
        cycle = fair_cycle(g, label, entry)
        steps = _steps(runner, nodes, g, into + cycle)
        return PollResult(True, len(nodes), steps, len(into) + 1)
    return PollResult(False, len(nodes))


def _polling(key: tuple, polls: list[tuple[int, int]]) -> bool:
    """Some poll has not yet seen its value: not issued yet, or outstanding."""
    _, pcs, pending, _, _ = key
    return any(pcs[t] <= k or k in pending[t] for t, k in polls)


def _steps(runner: _Runner, nodes: list[tuple], g: Graph, edges: list[int]) -> list[TraceStep]:
    out: list[TraceStep] = []
    find: Callable[[tuple, tuple], Action | None] = lambda a, b: next(  # noqa: E731
        (act for act, s in runner.successors(a, runner.programs) if s == b), None)
    for e in edges:
        before, after = nodes[source(g, e)], nodes[g.dst[e]]
        act = find(before, after)
        res = runner.sem.execute(before[0], act) if act is not None else None
        if res is None or res.state != after[0]:
            raise TraceReplayError(f"poll lasso step {len(out) + 1} does not replay")
        out.append(describe(runner.sem, len(out) + 1, before[0], res))
    return out
