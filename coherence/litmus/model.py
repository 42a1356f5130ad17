"""Running a litmus program on a protocol model, by exhaustive exploration.

Each litmus thread is one agent; each location one line. A thread issues its operations in
program order as processor events of the spec, and an operation retires when the agent's cache
for that line is back in a stable state and, for a load, the load has been performed. Only
then is the next one issued (an in-order processor that waits for its cache: every weak
behaviour found comes from the protocol, none from the core). Messages and rules interleave
freely, as in ``coherence check``. Final memory is the value of the last store performed on
each line (coherence order is perform order, as in the coherence monitor).

NOTE(litmus-events): how annotations become events. A spec names the processor events it
offers; the runner uses those it finds and skips the rest:

* a load is ``Load``; a strong one (volatile, relaxed or acquire at gpu/sys scope) is
  ``LoadStrong`` where the spec has it (the GPU's L1-bypassing ``LDG.STRONG``);
* a store is ``Store(v)``; a strong one is ``StoreStrong(v)`` where the spec has it;
* an acquire load is followed, and a release store preceded, by ``Acquire``/``Release`` on every
  line, or ``Fence`` on every line where the spec has only that;
* a fence at gpu/sys scope is ``Fence`` on every line. cta-scope ordering issues nothing: the
  L1 is the cta's point of coherence.

Scoped events (HIER.md: a spec that distinguishes scopes declares one event per scope) come
first where the spec has them, each scope falling back to the next wider one it lacks, then
to the unscoped names above: a strong load at gpu scope is ``LoadGpu``, at sys scope (and
volatile) ``LoadSys`` else ``LoadGpu``; stores likewise ``StoreGpu``/``StoreSys``; ordering
at gpu scope is ``AcquireGpu``/``ReleaseGpu`` else ``FenceGpu``, at sys scope ``AcquireSys``/
``ReleaseSys`` else ``FenceSys``, else the gpu-scope ones; a cta-scope fence, acquire or
release is ``FenceCta`` where the spec has it, else nothing. So a spec whose hardware keeps
its L2s coherent (no sys-scope events) gives sys scope its gpu-scope answer.

A spec without these events (the broadcast-invalidate ones) gives every variant the same
answer: the protocol has no ordering knob to turn.

Threads run on the processors a placement names (``coherence.litmus.place``): agents 0..n-1
of a flat spec, or instances of a hierarchical spec's processor machine (``L1[g, s]``).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from typing import NamedTuple

import attrs

from coherence import ir
from coherence.errors import NO_SPAN, SpecError
from coherence.explore import Search, bfs
from coherence.litmus.place import placement, processor
from coherence.litmus.program import Litmus, Op, Outcome
from coherence.semantics import Action, Semantics, State
from coherence.semantics import Outcome as SemOutcome
from coherence.trace import Step as TraceStep
from coherence.trace import TraceReplayError, describe

PRELUDE = "_prelude"
_NONE = -1  # a register not yet loaded


class _Stop(Exception):
    """The state budget is spent: the search ends with what it found."""


class Step(NamedTuple):
    event: str
    line: int
    value: int | str | None  # a store's value: literal, or the register it copies
    reg: int | None  # register slot a load writes
    before: bool = False  # pipelined core: every earlier step retires before this one issues
    after: bool = False  # pipelined core: no later step issues before this one retires
    until: int | None = None  # a poll: when it retires with another value, it issues again


CORES = ("blocking", "pipelined")
# The one default of `litmus --core` and `hw report --core` (and of the functions below): a
# blocking core shows only the weak behaviours the protocol itself allows; `pipelined` adds a
# GPU SM's issue of later accesses while earlier ones are outstanding.
DEFAULT_CORE = "blocking"


@attrs.define
class ModelResult:
    """Outcomes the protocol allows, and what went wrong on the way."""

    outcomes: set[Outcome]
    states: int
    errors: list[str]
    stuck: int
    stopped: str | None = None
    events_used: list[str] = attrs.Factory(list)
    # for each outcome (when asked for): the shortest run that ends in it, as trace steps
    witnesses: dict[Outcome, list[TraceStep]] = attrs.Factory(dict)

    @property
    def complete(self) -> bool:
        return self.stopped is None


def _event_names(model: ir.Model) -> set[str]:
    return {e.name for e in model.events}


# NOTE(litmus-events): the candidates for each operation, in order of preference
def _load_events(scope: str | None, strong: bool) -> tuple[str, ...]:
    if not strong:
        return ("Load",)
    wider = ("LoadSys",) if scope == "sys" else ()
    return (*wider, "LoadGpu", "LoadStrong", "Load")


def _store_events(scope: str | None, strong: bool) -> tuple[str, ...]:
    if not strong:
        return ("Store",)
    wider = ("StoreSys",) if scope == "sys" else ()
    return (*wider, "StoreGpu", "StoreStrong", "Store")


def _order_events(scope: str | None, kind: str) -> tuple[str, ...]:
    """The ordering events of a fence (kind ``Fence``), an acquire or a release at ``scope``."""
    if scope == "cta":
        return ("FenceCta",)
    unscoped = (kind, "Fence") if kind != "Fence" else ("Fence",)
    gpu = (f"{kind}Gpu", "FenceGpu") if kind != "Fence" else ("FenceGpu",)
    sys = (f"{kind}Sys", "FenceSys") if kind != "Fence" else ("FenceSys",)
    return (*(sys if scope == "sys" else ()), *gpu, *unscoped)


def _pick(names: tuple[str, ...], events: set[str]) -> str | None:
    return next((n for n in names if n in events), None)


def _steps(test: Litmus, tid: int, ops: tuple[Op, ...], events: set[str],
           regs: dict[str, int]) -> list[Step]:
    lines = range(len(test.locations))
    out: list[Step] = []
    carry = False  # a fence's ordering, carried to the next access

    def everywhere(names: tuple[str, ...]) -> bool:
        name = _pick(names, events)
        if name is not None:
            out.extend(Step(name, line, None, None, True, True) for line in lines)
        return name is not None

    for op in ops:
        scope = op.scope or "gpu"
        scoped = scope != "cta"
        strong = op.order in ("volatile", "relaxed", "acquire", "release") and scoped
        if op.kind == "fence":  # a gpu/sys fence orders the next access even with no event
            carry = everywhere(_order_events(scope, "Fence")) or scoped or carry
            continue
        line = test.locations.index(op.loc or "")
        if op.kind == "load":
            event = _pick(_load_events(scope, strong), events) or "Load"
            acquire = op.order == "acquire" and scoped
            out.append(Step(event, line, None, regs[f"{tid}:{op.reg}"], carry,
                            acquire or op.until is not None, op.until))
            if op.order == "acquire":
                everywhere(_order_events(scope, "Acquire"))
        else:
            release = op.order == "release" and (
                everywhere(_order_events(scope, "Release")) or scoped)
            event = _pick(_store_events(scope, strong), events) or "Store"
            value = op.value if isinstance(op.value, int) else f"r{regs[f'{tid}:{op.value}']}"
            out.append(Step(event, line, value, None, carry or release, False))
        carry = False
    return out


def _check_fit(model: ir.Model, test: Litmus) -> None:
    processor(model)  # the spec has a machine to run threads on
    events = _event_names(model)
    for need in ("Load", "Store"):
        if need not in events:
            raise SpecError(f"{model.file}: litmus programs need a processor event {need!r} "
                            "(the spec has: " + (", ".join(sorted(events)) or "none") + ")",
                            NO_SPAN)
    if any(v for _, v in test.init):
        raise SpecError(f"{test.file}: a protocol model starts every line at 0; this test "
                        "has non-zero initial values", NO_SPAN)


class _Runner:
    def __init__(self, model: ir.Model, test: Litmus, max_states: int | None,
                 core: str = DEFAULT_CORE, witnesses: bool = False,
                 progress: Callable[[int, int], None] | None = None,
                 nodes: tuple[int, ...] | None = None) -> None:
        self.progress = progress
        self.pipelined = core == "pipelined"
        self.want_witnesses = witnesses
        self.model = attrs.evolve(model, invariants=(), properties=())
        self.sem = Semantics(self.model)
        self.cache = processor(self.model)
        # thread t runs on processor node nodes[t] (a flat spec's agent t)
        self.nodes = nodes if nodes is not None else tuple(range(len(test.threads)))
        self.thread_of = {node: t for t, node in enumerate(self.nodes)}
        self.test = test
        self.max_states = max_states
        events = _event_names(model)
        self.regs = {name: i for i, name in enumerate(test.registers())}
        self.nregs = len(self.regs) + len(test.cached)
        self.programs = [_steps(test, t, ops, events, self.regs)
                         for t, ops in enumerate(test.threads)]
        self.prelude: list[list[Step]] = [[] for _ in test.threads]
        for k, (tid, loc) in enumerate(test.cached):
            self.prelude[tid].append(Step("Load", test.locations.index(loc), None,
                                          len(self.regs) + k))
        self.events_used = sorted({s.event for p in self.programs for s in p})
        self.errors: dict[str, None] = {}
        self.stuck = 0
        self.states = 0
        self.stopped: str | None = None
        self.transitions = {name: [t for t in self.cache.transitions
                                   if t.kind is ir.TransitionKind.EVENT and t.name == name]
                            for name in events}

    # state = (sem_state, pcs, pending, regs, mem)

    def run(self) -> ModelResult:
        n = len(self.test.threads)
        mem = tuple(0 for _ in self.test.locations)
        regs = tuple(_NONE for _ in range(self.nregs))
        idle = ((),) * n
        start = [(s, (0,) * n, idle, regs, mem) for s in self.sem.initial_states()]
        prelude: tuple[Search[tuple], dict[tuple, int]] | None = None
        if any(self.prelude):
            pipelined, self.pipelined = self.pipelined, False
            search, settled = self.explore(start, self.prelude)
            self.pipelined = pipelined
            origin: dict[tuple, int] = {}
            for i in settled:
                k = search.nodes[i]
                origin.setdefault((k[0], (0,) * n, idle, k[3], k[4]), i)
            prelude = (search, origin)
            start = list(origin)
        search, finals = self.explore(start, self.programs)
        nr = len(self.regs)
        first: dict[Outcome, int] = {}
        for i in finals:  # breadth-first order: the first final of an outcome is the nearest
            k = search.nodes[i]
            first.setdefault((*k[3][:nr], *k[4]), i)
        result = ModelResult(set(first), self.states, list(self.errors), self.stuck,
                             self.stopped, self.events_used)
        if self.want_witnesses:
            result.witnesses = {o: self.witness(search, i, prelude) for o, i in first.items()}
        return result

    def explore(self, start: list[tuple],
                programs: list[list[Step]]) -> tuple[Search[tuple], list[int]]:
        """The search from ``start`` and its final nodes (programs done, protocol quiescent),
        in breadth-first order."""
        finals: list[int] = []
        search: Search[tuple] = Search()

        def expand(i: int, key: tuple, add: Callable[[tuple], int]) -> None:
            self.states += 1
            if self.progress is not None and self.states % PROGRESS_STATES == 0:
                self.progress(self.states, len(search.nodes) - i)
            if self.max_states is not None and self.states >= self.max_states:
                self.stopped = f"--max-states {self.max_states} reached"
                raise _Stop
            succ = self.successors(key, programs)
            done = all(pc == len(p) and not busy
                       for pc, p, busy in zip(key[1], programs, key[2], strict=True))
            if done and self.sem.quiescent(key[0]):
                finals.append(i)
            elif not succ:
                self.stuck += 1
            for _act, s in succ:
                add(s)

        with contextlib.suppress(_Stop):
            bfs(start, expand, search=search)
        return search, finals

    def witness(self, search: Search[tuple], final: int,
                prelude: tuple[Search[tuple], dict[tuple, int]] | None) -> list[TraceStep]:
        """The path to ``final`` (after the cached loads' prelude, if any) as numbered steps,
        each action executed again by the semantics from the state before it."""
        path = [(search, search.path_to(final), self.programs)]
        if prelude is not None:
            psearch, origin = prelude
            path.insert(0, (psearch, psearch.path_to(origin[search.nodes[path[0][1][0]]]),
                            self.prelude))
        steps: list[TraceStep] = []
        pipelined = self.pipelined
        for part, (srch, nodes, programs) in enumerate(path):
            self.pipelined = pipelined and part == len(path) - 1
            for a, b in itertools.pairwise(nodes):
                before, after = srch.nodes[a], srch.nodes[b]
                act = next((act for act, s in self.successors(before, programs) if s == after),
                           None)
                out = self.sem.execute(before[0], act) if act is not None else None
                if out is None or out.state != after[0]:
                    raise TraceReplayError(f"witness step {len(steps) + 1} does not replay")
                steps.append(describe(self.sem, len(steps) + 1, before[0], out))
        self.pipelined = pipelined
        return steps

    def _may_issue(self, prog: list[Step], pc: int, busy: tuple[int, ...],
                   regs: tuple[int, ...]) -> bool:
        """Blocking core: one operation at a time. Pipelined core (a GPU SM's scoreboard):
        later accesses issue while earlier ones are outstanding, except to the same line,
        across an ordering point (acquire, release, gpu/sys fence), or before the load whose
        register a store copies has returned."""
        if not busy:
            return True
        if not self.pipelined:
            return False
        step = prog[pc]
        if step.before or any(prog[k].after for k in busy):
            return False
        if any(prog[k].line == step.line for k in busy):
            return False
        return not (isinstance(step.value, str) and regs[int(step.value[1:])] == _NONE)

    def successors(self, key: tuple, programs: list[list[Step]]) -> list[tuple[Action, tuple]]:
        """Each successor node, with the action that reaches it."""
        state, pcs, pending, regs, mem = key
        out: list[tuple[Action, tuple]] = []
        for t, prog in enumerate(programs):
            if pcs[t] >= len(prog) or not self._may_issue(prog, pcs[t], pending[t], regs):
                continue
            step = prog[pcs[t]]
            node = self.nodes[t]
            cstate = state[0][step.line][2][node][0]
            cname = self.cache.state_type.members[cstate]
            params: tuple[int, ...] = ()
            if isinstance(step.value, int):
                params = (step.value,)
            elif isinstance(step.value, str):
                params = (regs[int(step.value[1:])],)
            for tr in self.transitions.get(step.event, []):
                if cname not in tr.states:
                    continue
                act = Action(ir.TransitionKind.EVENT, self.cache.name, node, step.line,
                             tr.index, params[:len(tr.params)])
                res = self.sem.execute(state, act)
                if res is not None:
                    new_pcs = (*pcs[:t], pcs[t] + 1, *pcs[t + 1:])
                    new_pending = (*pending[:t], (*pending[t], pcs[t]), *pending[t + 1:])
                    self._add(out, act, res, (state, new_pcs, new_pending, regs, mem),
                              programs)
        # messages and rules interleave freely; events come only from the programs above
        for p in self.sem.no_transitions(state):
            self.errors.setdefault(p.message, None)
        for act in self.sem.action_instances(state):
            if act.kind != ir.TransitionKind.EVENT:
                res = self.sem.execute(state, act)
                if res is not None:
                    self._add(out, act, res, key, programs)
        return out

    def _add(self, out: list[tuple[Action, tuple]], act: Action, res: SemOutcome, key: tuple,
             programs: list[list[Step]]) -> None:
        if res.error is not None or res.state is None:
            where = f" at {res.error.span}" if res.error and res.error.span else ""
            self.errors.setdefault(f"{res.error.message if res.error else 'error'}{where}",
                                   None)
            return
        _, pcs, pending, regs, mem = key
        pcs_l = list(pcs)
        state: State = res.state
        regs_l, mem_l = list(regs), list(mem)
        for p in res.performs:
            if p.kind == "store":
                mem_l[p.line] = p.value
            elif (t := self.thread_of.get(p.agent)) is not None and t < len(programs):
                for k in pending[t]:
                    step = programs[t][k]
                    if step.reg is not None and step.line == p.line and \
                            regs_l[step.reg] == _NONE:
                        regs_l[step.reg] = p.value
                        break
        pending_l = list(pending)
        for t, busy in enumerate(pending):
            if not busy:
                continue
            left = []
            for k in busy:
                step = programs[t][k]
                cidx = state[0][step.line][2][self.nodes[t]][0]
                if not self.cache.states[cidx].stable or (
                        step.reg is not None and regs_l[step.reg] == _NONE):
                    left.append(k)
                elif step.until is not None and step.reg is not None and \
                        regs_l[step.reg] != step.until:
                    regs_l[step.reg] = _NONE  # a poll that saw another value: issue it again
                    pcs_l[t] = k
            pending_l[t] = tuple(left)
        out.append((act, (state, tuple(pcs_l), tuple(pending_l), tuple(regs_l),
                          tuple(mem_l))))


PROGRESS_STATES = 1024  # progress(states, frontier) is called once per this many states


def run_on_model(model: ir.Model, test: Litmus, max_states: int | None = None,
                 core: str = DEFAULT_CORE, witnesses: bool = False,
                 progress: Callable[[int, int], None] | None = None,
                 nodes: tuple[int, ...] | None = None) -> ModelResult:
    """Every outcome ``model`` allows for ``test`` (the model must be loaded with
    ``agents`` = threads, ``lines`` = locations, ``values`` > every value used: see
    ``coherence.litmus.place.load_for_test``); with ``witnesses``, also the shortest run to
    each, as trace steps. ``progress(states, frontier)`` is told every PROGRESS_STATES states
    explored. ``nodes``: the processor each thread runs on (``place.placement``; default:
    agent t of a flat spec, the default placement of a hierarchical one)."""
    _check_fit(model, test)
    if model.is_hierarchical:
        if nodes is None:
            nodes = placement(model, test, None).nodes
        if len(nodes) != len(test.threads) or model.lines != len(test.locations):
            raise SpecError(f"{model.file}: loaded with lines={model.lines} for "
                            f"{len(nodes)} placed threads; {test.name} needs "
                            f"lines={len(test.locations)} and {len(test.threads)} threads",
                            NO_SPAN)
    elif model.agents != len(test.threads) or model.lines != len(test.locations):
        raise SpecError(f"{model.file}: loaded with agents={model.agents}, lines={model.lines}; "
                        f"{test.name} needs agents={len(test.threads)}, "
                        f"lines={len(test.locations)}", NO_SPAN)
    if core not in CORES:
        raise SpecError(f"unknown core {core!r} (known: {', '.join(CORES)})", NO_SPAN)
    return _Runner(model, test, max_states, core, witnesses, progress, nodes).run()


def program_key(model: ir.Model, test: Litmus) -> tuple:
    """What ``run_on_model`` depends on: variants with equal keys have equal results (on a
    spec without ordering events every variant compiles to the same events)."""
    events = _event_names(model)
    regs = {name: i for i, name in enumerate(test.registers())}
    return (tuple(tuple(_steps(test, t, ops, events, regs)) for t, ops in enumerate(test.threads)),
            test.cached, test.locations)


def model_overrides(test: Litmus) -> dict[str, int]:
    """The parameter values a flat spec is loaded with to run ``test`` (a hierarchical one:
    ``coherence.litmus.place.overrides``)."""
    return {"agents": len(test.threads), "lines": len(test.locations),
            "values": test.max_value() + 1}
