"""NOTE(finite-core): the hypotheses a hard goal needs, read off the same obligation at a
fixed number of agents.

An obligation of the proof for every N is ``H1, ..., Hn, action |- goal'``, each ``Hk`` an
invariant of the pre-state. With MSI's 162 inferred lines there are 167 of them, most
quantified, some counting, and Z3's quantified solvers give up on goals that need a handful:
`one-message-per-kind` at `Cache.message FwdGetS in M` was unknown after 188 s of every try.
Built with its quantifiers ranging over ``AGENTS`` agents, the home and "undefined" only
(``nodes.finite_nodes``), the same obligation is quantifier-free; Z3 refutes it in about a
second and its unsat core names the hypotheses it used (17 there). The quantified
obligation with only those hypotheses is then asked as usual: 0.1 s there.

Soundness: the core only chooses hypotheses. What proves the obligation is the quantified
query with a subset of its hypotheses, unsat; a subset that is not enough gives unknown, never
a proof. The fixed size is a guess at what the goal needs, not a cutoff: a goal whose
argument needs more agents than ``AGENTS`` gets a core that may be too small (its quantified
query is then unknown, and the other tries follow).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs
import z3

from coherence.smt.nodes import HOME, NODE, UNDEF_N, finite_nodes, node_constants, raw_apps
from coherence.smt.param import Obligations, Query

AGENTS = 4  # the agents of the fixed size: two a goal names, the acting one, one more
# NOTE(finite-cti): the size a goal the quantified tries leave unknown is refuted at, where
# it can be: MSI's lines, chosen at 4 agents, break at 5 (a cycle of three requestors each
# forwarded to the next, beside a chain of two: results/infer/README.md, "Session 29")
CTI_AGENTS = 5
NO_TIMEOUT = 4294967295  # Z3's "no timeout" (its default)


class FiniteCore:
    """The obligations of one spec at ``agents`` agents, built on first use, and one
    incremental solver per action whose hypotheses are tracked by literals."""

    def __init__(self, ob: Obligations, agents: int = AGENTS) -> None:
        self.model = ob.enc.model
        self.of = ob
        self.nodes = [HOME, UNDEF_N, *(z3.Const(f"finite_agent{k}", NODE)
                                       for k in range(agents))]
        self._ob: Obligations | None = None
        self._solvers: dict[int, tuple[Any, list[Any]]] = {}

    @property
    def ob(self) -> Obligations:
        if self._ob is None:
            with finite_nodes(self.nodes):
                self._ob = Obligations(self.model, reads_of=self.of)
        return self._ob

    def hypotheses(self, q: Query, rlimit: int) -> list[int] | None:
        """The positions (in ``Obligations.inv``) of the pre-state's invariants that the
        fixed size's obligation of ``q`` (one of ``ob``'s) uses, or None where it is not
        refuted there within ``rlimit`` units (sat: the goal fails at that size, or
        unknown)."""
        used: list[int] = []

        def read(answer: Any, solver: Any, tracks: list[Any], _fq: Query) -> None:
            names = {str(c) for c in solver.unsat_core()} if answer == z3.unsat else set()
            used.extend(k for k, t in enumerate(tracks) if str(t) in names)
        return used if self.ask(q, rlimit, read=read) == z3.unsat else None

    def counterexample(self, q: Query, rlimit: int, seconds: float | None = None) -> Any:
        """NOTE(finite-cti): a counterexample to induction of ``q`` at this size, from the
        fixed size's obligation (quantifier-free: seconds where the unrolled search of
        ``param_cti`` takes minutes at 5 agents), replayed in the reference semantics (a
        ``Cti``), or None (refuted there, or unknown within ``rlimit`` units and
        ``seconds``). A model whose pre-state breaks an invariant of the reference
        semantics raises ``TraceReplayError``, as ``find_cti``'s do."""
        from coherence.smt.param_cti import replay
        found: list[Any] = []

        def read(answer: Any, solver: Any, _tracks: list[Any], fq: Query) -> None:
            if answer == z3.sat:
                found.append(replay(self.model, fq, solver.model(), HOME, UNDEF_N,
                                    self.nodes[2:]))
        self.ask(q, rlimit, seconds, read)
        return found[0] if found else None

    def ask(self, q: Query, rlimit: int, seconds: float | None = None,
            read: Callable[[Any, Any, list[Any], Query], None] | None = None) -> Any:
        """Z3's answer to the fixed size's obligation of ``q`` with every hypothesis (None
        where it has none: the initial state, a hierarchical spec), within ``rlimit`` units
        and ``seconds``; ``read(answer, solver, tracks, fixed-size query)`` runs before the
        solver forgets the goal (its model, its unsat core over ``tracks``)."""
        fq = self._fixed(q)
        if fq is None:
            return None

        def read_one(answer: Any, solver: Any, tracks: list[Any]) -> None:
            if read is not None:
                read(answer, solver, tracks, fq)
        return self._check([fq], rlimit, seconds, read_one)

    def broken(self, qs: list[Query], rlimit: int, seconds: float | None = None
               ) -> tuple[list[str], Any]:
        """The goals of ``qs`` (one action's) that some step at this size breaks from a state
        satisfying every hypothesis, found a model at a time: each check asks for any goal
        still unbroken (one query where most goals hold, instead of one per goal); and the
        last answer (unsat: the rest hold at this size; unknown: not known)."""
        fqs = [(q.goal, fq) for q in qs if not q.unchanged
               for fq in [self._fixed(q)] if fq is not None]
        broken: list[str] = []
        answer: Any = z3.unsat
        while fqs:
            now: set[str] = set()

            def read(answer: Any, solver: Any, _tracks: list[Any], now: set[str] = now,
                     asked: list[tuple[str, Query]] = fqs) -> None:
                if answer == z3.sat:
                    m = solver.model()
                    now.update(g for g, fq in asked if z3.is_true(
                        m.eval(fq.assertions[-1], model_completion=True)))
            answer = self._check([fq for _g, fq in fqs], rlimit, seconds, read)
            if answer != z3.sat:
                break
            broken += sorted(now)
            fqs = [(g, fq) for g, fq in fqs if g not in now]
        return broken, answer

    def _fixed(self, q: Query) -> Query | None:
        """The fixed size's obligation of ``q`` (None: the initial state, a hierarchical
        spec)."""
        _goal, action, _then = q.key
        if action < 0 or q.shape is not None:
            return None
        return self._query(action + 1, q.key)

    def _check(self, fqs: list[Query], rlimit: int, seconds: float | None,
               read: Callable[[Any, Any, list[Any]], None]) -> Any:
        """Whether a step of one action from a state satisfying every hypothesis breaks any
        goal of ``fqs`` (fixed-size queries of that action); ``read(answer, solver, tracks)``
        before the solver forgets the goals."""
        solver, tracks = self._solver(fqs[0].key[1] + 1, fqs[0])
        solver.push()
        try:
            # an error goal's erring action has node constants of its own (its message's
            # source): one outside the fixed size's nodes would escape every hypothesis
            for fq in fqs:
                solver.add(*self._closed(node_constants(fq.assertions[-1], quantifiers=True)))
            solver.add(fqs[0].assertions[-1] if len(fqs) == 1
                       else z3.Or([fq.assertions[-1] for fq in fqs]))
            solver.set("rlimit", rlimit)
            solver.set("timeout", NO_TIMEOUT if seconds is None
                       else max(1, int(seconds * 1000)))
            answer = solver.check(*tracks)
            read(answer, solver, tracks)
            return answer
        finally:
            solver.pop()

    def restricted(self, q: Query, keep: list[int]) -> Query:
        """``q`` with only the pre-state's invariants at ``keep`` among its hypotheses (and,
        where its counted sets are named, only the definitions those use: MSI's unused
        ones sent Z3 into a pattern inference that ignored its timeout)."""
        n = len(self.of.inv)
        start = len(q.assertions) - n - 2

        def subset(xs: list[Any]) -> list[Any]:
            return [*xs[:start], *(xs[start + k] for k in keep), xs[start + n]]
        named = None
        if q.named is not None:
            kept = [*subset(q.named), q.named[-1]]
            named = [*kept[:-1], *used_definitions(q.named[start + n + 1:-1], kept),
                     kept[-1]]
        return attrs.evolve(q, assertions=[*subset(q.assertions), q.assertions[-1]],
                            named=named)

    def _query(self, g: int, key: tuple[str, int, int]) -> Query | None:
        with finite_nodes(self.nodes):
            return self.ob.query(g, key)

    def _solver(self, g: int, fq: Query) -> tuple[Any, list[Any]]:
        if g not in self._solvers:
            inv = self.ob.inv
            start = len(fq.assertions) - len(inv) - 2
            solver = z3.Solver()
            solver.set("core.minimize", True)
            solver.add(z3.Distinct(*self.nodes))
            solver.add(*self._closed([*self.ob.cur.leaves(), *fq.consts,
                                      *node_constants(fq.assertions[-2], quantifiers=True)]))
            solver.add(*fq.assertions[:start], fq.assertions[-2])
            tracks = [z3.Bool(f"finite_hypothesis{k}") for k in range(len(inv))]
            solver.add(*(z3.Implies(t, h) for t, h in zip(tracks, inv, strict=True)))
            self._solvers = {g: (solver, tracks)}  # one action at a time
        return self._solvers[g]

    def _closed(self, terms: list[Any]) -> list[Any]:
        """Every node value these terms hold is one of the fixed size's nodes (a leaf of
        sort ``Node``, or an array into it at every tuple of nodes)."""
        out = []
        for t in terms:
            sort = t.sort()
            if sort == NODE:
                out.append(self._one_of(t))
                continue
            if not isinstance(sort, z3.ArraySortRef):
                continue
            arity = z3.Z3_get_array_arity(sort.ctx_ref(), sort.ast)
            domain = [sort.domain_n(k) for k in range(arity)]
            if sort.range() != NODE or any(d != NODE for d in domain):
                continue
            out += [self._one_of(t[at if arity > 1 else at[0]])
                    for at in itertools.product(self.nodes, repeat=arity)]
        return out

    def _one_of(self, t: Any) -> Any:
        return z3.Or([t == n for n in self.nodes])


def used_definitions(definitions: list[Any], formulas: list[Any]) -> list[Any]:
    """The definitions (``forall zs :: F(zs) == lambda ...``, NOTE(count-set-names)) of the
    set functions that ``formulas`` apply, or that a kept definition applies."""
    applied = _applied(formulas)
    kept: set[int] = set()
    grew = True
    while grew:
        grew = False
        for k, d in enumerate(definitions):
            if k not in kept and _defined(d) in applied:
                kept.add(k)
                applied |= _applied([d])
                grew = True
    return [d for k, d in enumerate(definitions) if k in kept]


def _defined(definition: Any) -> int:
    body = definition.body() if z3.is_quantifier(definition) else definition
    return int(body.arg(0).decl().get_id())


def _applied(formulas: list[Any]) -> set[int]:
    """The ids of the functions applied in ``formulas``."""
    if not formulas:
        return set()
    ref = formulas[0].ctx.ref()
    return {z3.Z3_get_ast_id(ref, z3.Z3_func_decl_to_ast(ref, z3.Z3_get_app_decl(ref, a)))
            for a in raw_apps(formulas)}

