"""Houdini on quantifier-free weakenings of the parameterised obligations (issue 17).

Every candidate is universally quantified over at most two agents (or one message's source and
destination). One step of the protocol touches a bounded set of nodes: the home, the acting
agent, its parameters, the message's source, the home's node variables, and the agents the
goal is about (two shared constants ``k1``, ``k2`` that witness every negated goal). Each
hypothesis is instantiated over those terms only (``infer_ground``): a weakening, so a goal
proved unsatisfiable is preserved for every number of agents; a satisfiable one may be
spurious, which only drops a candidate (the final proof re-checks from scratch).

All actions share their constants' names, so every hypothesis is instantiated once, into one
solver; an action is a push of its step (``t`` = the successor). Houdini asks, per action, one
query for the disjunction of every live goal; a model drops every candidate it falsifies, until
the query is unsatisfiable for every action. The targets (the spec's invariants, no message
without a transition, no model error, one message per kind) are goals that are never dropped:
one a model falsifies is reported. The *support* of the targets (unsat cores, closed under the
goals of the candidates they use) is what the final proof gets.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.smt.execute import TRUE, all_of, any_of, truth
from coherence.smt.infer_atoms import receiver_kinds, sender_kinds
from coherence.smt.infer_ground import Grounder, instances
from coherence.smt.infer_houdini import Composer, lower_atoms
from coherence.smt.infer_mine import Candidate
from coherence.smt.param import (
    HOME,
    NODE,
    ONE_PER_KIND,
    UNDEF_N,
    ParamEncoder,
    PExec,
    PState,
    _actions,
    _label,
    _properties,
    _step,
    is_agent,
)
from coherence.smt.z3_owner import safe_point

PHASE = 1
CHECK_RLIMIT = 20_000_000  # Z3 units per query (deterministic); unknown drops the candidates


@attrs.define
class QFResult:
    alive: list[int]  # the inductive subset (candidate indices)
    support: list[int]  # what the targets' proofs use, closed under the candidates' own
    failed: list[str]  # targets some model falsifies ("goal after action")
    stats: dict[str, Any]


def _substitute(f: Any, a: PState, b: PState) -> Any:
    pairs = [(x, y) for x, y in zip(a.leaves(), b.leaves(), strict=True) if not x.eq(y)]
    return z3.substitute(f, *pairs) if pairs else f


def houdini_qf(model: ir.Model, cands: list[Candidate],
               progress: Callable[[str], None] | None = None,
               rlimit: int = CHECK_RLIMIT) -> QFResult:
    say = progress or (lambda _s: None)
    t0 = time.perf_counter()
    enc = ParamEncoder(model)
    cur, post = enc.fresh("s"), enc.fresh("t")
    acts = _actions(enc)
    steps = [_step(enc, cur, m, tr, "a") for m, tr in acts]
    k1, k2, k3 = z3.Consts("k1 k2 k3", NODE)
    pool = [k1, k2, k3]
    consts: dict[str, Any] = {}
    for st in steps:
        for c in st[3]:
            if c.sort() == NODE:
                consts[str(c)] = c
    node_vars = [x for x in cur.leaves() if x.sort() == NODE]
    agents = [*consts.values(), *node_vars, k1, k2]
    terms = [HOME, *agents]
    p1, p2 = z3.Consts("p1 p2", NODE)
    ground = Grounder(NODE, terms)
    tground = Grounder(NODE, terms, (p1, p2))
    comp = Composer(enc, lower_atoms(model, cands))
    senders = sender_kinds(model)
    receivers = receiver_kinds(model)

    cache: dict[tuple[Any, ...], tuple[Any, Any]] = {}

    def atom(s: PState, key: tuple[str, str, str], bind: dict[str, Any], place: int) -> Any:
        """(value, error) of one atom on ``s`` under ``bind`` (cached: candidates share)."""
        ck = (id(s), key, place, tuple(str(v[:2]) if isinstance(v, tuple) else str(v)
                                         for v in bind.values()))
        hit = cache.get(ck)
        if hit is None:
            ex = PExec(enc, s)
            ex.locals.update(bind)
            v = truth(ex.expr(comp.atoms[key], TRUE))
            hit = (v, any_of(ex.errs))
            cache[ck] = hit
        return hit

    def clause(s: PState, c: Candidate, bind: dict[str, Any], msg: str, place: int,
               pol: bool, g: Grounder) -> Any:
        """The clause on ``s``, its atoms grounded for an occurrence of polarity ``pol``."""
        vals, errs = [], []
        for a, where, pos in c.lits:
            v, e = atom(s, (a.text, where, msg), bind, place)
            vals.append(z3.Not(g.ground(v, not pol)) if pos else g.ground(v, pol))
            errs.append(g.ground(e, not pol))
        return z3.And(z3.Not(any_of(errs)), any_of(vals))

    def raw(s: PState, c: Candidate, x: Any, y: Any, pol: bool, g: Grounder) -> Any:
        if c.kind == "global":
            return clause(s, c, {}, "", 0, pol, g)
        if c.kind in ("agent", "pair"):
            bind = {"i": x} if c.kind == "agent" else {"i": x, "j": y}
            dom = is_agent(x) if c.kind == "agent" else z3.And(is_agent(x), is_agent(y), x != y)
            return z3.Implies(dom, clause(s, c, bind, "", 0, pol, g))
        msg = c.kind[4:]
        parts = []
        for n, (present, binding) in enumerate(PExec(enc, s).placed(msg, x, y)):
            parts.append(z3.Implies(present, clause(s, c, {"m": binding}, msg, n, pol, g)))
        return all_of(parts)

    def tuples(c: Candidate) -> list[tuple[Any, Any]]:
        if c.kind == "global":
            return [(p1, p2)]
        if c.kind == "agent":
            return [(a, p2) for a in agents]
        if c.kind == "pair":
            return list(itertools.permutations(agents, 2))
        kinds = senders[c.kind[4:]]
        srcs = ([HOME] if ir.MachineKind.HOME in kinds else []) + (
            agents if ir.MachineKind.CACHE in kinds else [])
        kinds = receivers[c.kind[4:]]
        dsts = ([HOME] if ir.MachineKind.HOME in kinds else []) + (
            agents if ir.MachineKind.CACHE in kinds else [])
        return [(a, b) for a in srcs for b in dsts]

    solver = z3.Solver()
    solver.set("rlimit", rlimit)
    # Booleans true first: a model then falsifies as many goals as it can, and each query
    # drops more candidates (about half the queries on German)
    solver.set("phase_selection", PHASE)
    solver.add(HOME != UNDEF_N, ground(enc.domain(cur)))
    hyp = [z3.Bool(f"h{k}") for k in range(len(cands))]
    goal: list[Any] = []
    for k, c in enumerate(cands):
        tmpl = raw(cur, c, p1, p2, True, tground)
        solver.add(z3.Implies(hyp[k], all_of(instances(tmpl, (p1, p2), tuples(c)))))
        goal.append(z3.Not(raw(post, c, k1, k2, False, ground)))
    t1 = time.perf_counter()
    say(f"Houdini: {len(cands)} candidates instantiated over {len(terms)} terms "
        f"({t1 - t0:.1f} s)")
    # the targets: hypotheses (always) and goals (never dropped)
    targets = {n: p for n, p in _properties(enc, cur).items()}
    tpost = _properties(enc, post)
    tnames = list(targets)
    thyp = z3.Bool("targets")
    solver.add(z3.Implies(thyp, all_of([ground(p) for p in targets.values()])))
    tgoal = {n: ground.goal(z3.Not(tpost[n]), pool) for n in tnames}
    # no model error: each action's error, with its constants renamed to the pool's
    errs = []
    for j, (m2, tr2) in enumerate(acts):
        e = _step(enc, cur, m2, tr2, f"b{j}")
        if z3.is_false(e[1]):
            continue
        ren = [(c, pool[n]) for n, c in enumerate(x for x in e[3] if x.sort() == NODE)
               if n < len(pool)]
        errs.append(z3.substitute(e[1], *ren) if ren else e[1])
    if errs:
        tnames.append("error:error")
        leaves = list(zip(cur.leaves(), post.leaves(), strict=True))
        tgoal["error:error"] = ground.goal(z3.substitute(any_of(errs), *leaves), pool)
    alive = [True] * len(cands)
    failed: list[str] = []
    failed_goals: set[str] = set()
    stats = {"queries": 0, "sat": 0, "unknown": 0}
    lits = [z3.Bool(f"g{k}") for k in range(len(cands))]
    # a goal's literal is equivalent to it, so that a model says which goals it falsifies
    # (reading a Bool is microseconds, evaluating the goal milliseconds)
    tlits = {n: z3.Bool(f"goal|{n}") for n in tnames}
    # asserted per action, with the successor's terms substituted for ``post``'s
    goals_all = z3.And([lits[k] == g for k, g in enumerate(goal)]
                       + [tlits[n] == tgoal[n] for n in tnames])
    dup_lit = z3.Bool(f"goal|{ONE_PER_KIND}")
    round_no = 0
    changed = True
    while changed:
        changed = False
        round_no += 1
        for a, (m, tr) in enumerate(acts):
            ok, _err, succ, _cs, dup = steps[a]
            label = f"{m.name}.{_label(tr)}"
            solver.push()
            solver.add(ground(ok), _substitute(goals_all, post, succ))
            has_dup = not z3.is_false(dup)
            if has_dup:
                solver.add(dup_lit == ground.goal(dup, pool))
            while True:
                live = [k for k in range(len(cands)) if alive[k]]
                tl = [n for n in tnames if n not in failed_goals]
                if has_dup and ONE_PER_KIND not in failed_goals:
                    tl.append(ONE_PER_KIND)
                d = z3.FreshBool("any")
                solver.add(z3.Implies(d, any_of(
                    [lits[k] for k in live] + [tlits.get(n, dup_lit) for n in tl])))
                stats["queries"] += 1
                safe_point()
                r = solver.check(thyp, d, *(hyp[k] for k in live))
                if r == z3.unsat:
                    break
                if r == z3.unknown:
                    stats["unknown"] += 1
                    say(f"Houdini: unknown after {label} ({solver.reason_unknown()})")
                    break  # left to the final proof
                stats["sat"] += 1
                mdl = solver.model()
                dropped = 0
                for k in live:
                    if z3.is_true(mdl.eval(lits[k], model_completion=True)):
                        alive[k] = False
                        dropped += 1
                for n in tl:
                    if z3.is_true(mdl.eval(tlits.get(n, dup_lit), model_completion=True)):
                        failed_goals.add(n)
                        failed.append(f"{n} after {label}")
                        dropped += 1
                if dropped:
                    changed = True
                elif not any(n in failed_goals for n in tl):
                    break  # nothing the model falsifies (should not happen): give up here
            solver.pop()
            say(f"Houdini round {round_no}, {label}: {sum(alive)} candidates left, "
                f"{stats['queries']} queries")
        say(f"Houdini round {round_no}: {sum(alive)} of {len(cands)} candidates left, "
            f"{stats['queries']} queries")
    t2 = time.perf_counter()
    live = [k for k in range(len(cands)) if alive[k]]
    support = _support(solver, steps, post, ground, pool, goals_all, live, lits, hyp,
                       thyp, [tlits[n] for n in tnames if n not in failed_goals], dup_lit,
                       ONE_PER_KIND not in failed_goals)
    stats["seconds_instantiate"] = round(t1 - t0, 3)
    stats["seconds_houdini"] = round(t2 - t1, 3)
    stats["seconds_support"] = round(time.perf_counter() - t2, 3)
    stats["rounds"] = round_no
    return QFResult(live, support, failed, stats)


def _support(solver: Any, steps: list[Any], post: PState, ground: Grounder, pool: list[Any],
             goals_all: Any, live: list[int], lits: list[Any], hyp: list[Any], thyp: Any,
             targets: list[Any], dup_lit: Any, with_dup: bool) -> list[int]:
    """The candidates the targets' proofs use (unsat cores), closed under their own proofs."""
    index = {hyp[k].get_id(): k for k in live}
    solver.set("core.minimize", True)
    needed: set[int] = set()
    frontier = list(targets)
    first = True
    while frontier:
        batch, frontier = frontier, []
        for ok, _err, succ, _cs, dup in steps:
            solver.push()
            solver.add(ground(ok), _substitute(goals_all, post, succ))
            goals = list(batch)
            if first and with_dup and not z3.is_false(dup):
                solver.add(dup_lit == ground.goal(dup, pool))
                goals.append(dup_lit)
            for g in goals:
                safe_point()
                if solver.check(thyp, g, *(hyp[k] for k in live)) != z3.unsat:
                    continue
                for x in solver.unsat_core():
                    k = index.get(x.get_id())
                    if k is not None and k not in needed:
                        needed.add(k)
                        frontier.append(lits[k])
            solver.pop()
        first = False
    return sorted(needed)
