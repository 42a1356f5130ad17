"""The inductive part of the mined candidates, on the parameterised encoding of ``param.py``.

Houdini (Flanagan & Leino, FME 2001) keeps the largest subset of candidates that is inductive,
dropping every candidate some action does not preserve. Asking Z3 with a thousand quantified
candidates as hypotheses is far too slow, so it is run *lazily*, from the targets and guided by
counterexamples: each obligation of ``param.obligations`` (``Inv ∧ action ⇒ P'``, ``init ⇒
P``) is asked with the targets and the candidates taken in so far as hypotheses (behind
assumption literals). When it is proved, Z3's unsat core names the candidates the proof used,
and those become obligations in turn. When it is not, a counterexample to induction with at
most three agents is read back as a concrete state (as ``param_cti`` does), every candidate is
evaluated on it in Python (its atoms' readers: microseconds), and the smallest candidates it
violates are taken in; with none, a candidate goal is dropped (not preserved: Houdini's step)
and the proofs that used it are asked again, while a target goal is a failure. At the fixpoint
the candidates reached (the *support*) together with the targets are inductive.

Each candidate's formula is composed from its atoms' Z3 terms (each atom is lowered once, from
spec text, and executed by ``PExec``), so no candidate is parsed or encoded whole here; the
final proof (``infer.py``) parses the printed text and proves it again from scratch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.semantics import Semantics
from coherence.smt.execute import TRUE, all_of, any_of, truth
from coherence.smt.infer_mine import Candidate, Templates, violated
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


def lower_atoms(model: ir.Model, cands: list[Candidate]) -> dict[tuple[str, str, str], Any]:
    """The IR of every (atom text, where, message type) the candidates use, lowered in one go
    with the spec (same parameters): ``where`` is g, i, j, m, src or dst."""
    from coherence.spec.load import extend
    keys: dict[tuple[str, str, str], str] = {}
    for c in cands:
        msg = c.kind[4:] if c.kind.startswith("msg ") else ""
        for atom, where, _pos in c.lits:
            keys.setdefault((atom.text, where, msg), "")
    lines = []
    for k, (text, where, msg) in enumerate(keys):
        name = f"inferatom{k}"
        keys[(text, where, msg)] = name
        if where == "g" and not msg:
            lines.append(f"invariant aux {name}: {text};")
        elif where in ("i", "j"):
            lines.append(f"invariant aux {name}: forall {where}: agent :: "
                         f"{text.replace('{x}', where)};")
        else:
            x = {"src": "m.src", "dst": "m.dst"}.get(where, "")
            lines.append(f"invariant aux {name}: forall m: {msg} :: "
                         f"{text.replace('{x}', x).replace('{m}', 'm')};")
    lowered = extend(model, "\n".join(lines) + "\n")
    by_name = {i.name: i.expr for i in lowered.invariants}
    out = {}
    for key, name in keys.items():
        e = by_name[name]
        out[key] = e.body if isinstance(e, ir.Quant | ir.MsgQuant) else e
    return out


class Composer:
    """Candidate formulas over a state, from their atoms (cached per state and binding)."""

    def __init__(self, enc: ParamEncoder, atoms: dict[tuple[str, str, str], Any]) -> None:
        self.enc = enc
        self.atoms = atoms

    def _values(self, s: PState, c: Candidate, bind: dict[str, Any],
                msg: str) -> tuple[list[Any], Any]:
        ex = PExec(self.enc, s)
        ex.locals.update(bind)
        vals = []
        for atom, where, pos in c.lits:
            v = truth(ex.expr(self.atoms[(atom.text, where, msg)], TRUE))
            vals.append(z3.Not(v) if pos else v)
        return vals, any_of(ex.errs)

    def formula(self, s: PState, c: Candidate) -> Any:
        if c.kind == "global":
            vals, err = self._values(s, c, {}, "")
            return z3.And(z3.Not(err), any_of(vals))
        if c.kind == "agent":
            i = z3.FreshConst(NODE, "i")
            vals, err = self._values(s, c, {"i": i}, "")
            return z3.ForAll([i], z3.Implies(is_agent(i), z3.And(z3.Not(err), any_of(vals))))
        if c.kind == "pair":
            i, j = z3.FreshConst(NODE, "i"), z3.FreshConst(NODE, "j")
            vals, err = self._values(s, c, {"i": i, "j": j}, "")
            dom = z3.And(is_agent(i), is_agent(j), i != j)
            return z3.ForAll([i, j], z3.Implies(dom, z3.And(z3.Not(err), any_of(vals))))
        msg = c.kind[4:]
        src, dst = z3.FreshConst(NODE, "m_src"), z3.FreshConst(NODE, "m_dst")
        ex = PExec(self.enc, s)
        parts = []
        for present, fields in ex.places(msg, src, dst):
            vals, err = self._values(s, c, {"m": (src, dst, fields)}, msg)
            parts.append(z3.Implies(present, z3.And(z3.Not(err), any_of(vals))))
        return z3.ForAll([src, dst], all_of(parts))


@attrs.define
class Goal:
    """Something that must hold after every action (and initially): a target property, "no
    action errs", the one-message-per-kind obligation, or a candidate (``cand`` index)."""

    name: str
    cand: int | None = None


class _Budget:
    """Z3's resource units per check: a quick try first (most obligations are proved within
    it), then, when no small counterexample exists, the long try. ``timeout_ms`` adds a
    wall-clock cap (off in tests: rlimit is deterministic)."""

    def __init__(self, rlimit: int, timeout_ms: int | None) -> None:
        self.rlimit = rlimit
        self.timeout_ms = timeout_ms

    def apply(self, s: Any, long_try: bool = True) -> None:
        s.set("rlimit", self.rlimit if long_try else max(1, self.rlimit // QUICK_SHARE))
        if self.timeout_ms is not None:
            s.set("timeout", self.timeout_ms)


@attrs.define
class HoudiniResult:
    support: list[int]  # candidate indices the proof of the targets uses (inductive with them)
    selected: int  # candidates ever taken in as hypotheses
    dropped: int  # candidates found not preserved
    failed: list[str]  # targets not preserved ("goal, where"): a CTI no candidate rules out
    queries: int
    ctis: int  # concrete counterexamples to induction evaluated against the pool
    seconds: float
    unknown: int  # checks that ran out of rlimit / time


def houdini(model: ir.Model, cands: list[Candidate], templates: Templates,
            rlimit: int = 2_000_000, query_ms: int | None = None,
            progress: Callable[[str], None] | None = None) -> HoudiniResult:
    """The support of the targets among ``cands`` (see the module docstring)."""
    t0 = time.perf_counter()
    budget = _Budget(rlimit, query_ms)
    enc = ParamEncoder(model)
    cur = enc.fresh("s")
    acts = _actions(enc)
    comp = Composer(enc, lower_atoms(model, cands))
    targets = _properties(enc, cur)
    errs = []
    for i, (machine, tr) in enumerate(acts):
        err = _step(enc, cur, machine, tr, f"e{i}")[1]
        if not z3.is_false(err):
            errs.append((i, err))
    no_error = z3.Not(any_of([e for _, e in errs]))
    base = [HOME != UNDEF_N, enc.domain(cur)]
    tforms = [*targets.values(), no_error]
    tlits = [z3.Bool(f"hyp|t{k}") for k in range(len(tforms))]
    clits = [z3.Bool(f"hyp|c{k}") for k in range(len(cands))]
    lit_index = {lit.get_id(): k for k, lit in enumerate(clits)}
    cform: dict[int, Any] = {}

    def form(k: int) -> Any:
        if k not in cform:
            cform[k] = comp.formula(cur, cands[k])
        return cform[k]

    alive = [True] * len(cands)
    selected: list[int] = []  # in the order taken in
    in_sel = [False] * len(cands)
    steps: dict[int, tuple[Any, PState, Any]] = {}
    solvers: dict[int, tuple[Any, int]] = {}  # action -> (solver, hypotheses added so far)
    instances: dict[int, tuple[Any, Semantics]] = {}

    def step(a: int) -> tuple[Any, PState, Any]:
        if a not in steps:
            machine, tr = acts[a]
            ok, _err, succ, _consts, dup = _step(enc, cur, machine, tr, f"a{a}")
            steps[a] = (ok, succ, dup)
        return steps[a]

    def solver(a: int) -> Any:  # -1: the initial state
        if a not in solvers:
            s = z3.Solver()
            budget.apply(s)
            if a < 0:
                s.add(HOME != UNDEF_N, enc.init_formula(cur), enc.domain(cur))
            else:
                s.add(*base, *(z3.Implies(x, f) for x, f in zip(tlits, tforms, strict=True)),
                      step(a)[0])
            solvers[a] = (s, 0)
        s, done = solvers[a]
        if a >= 0:
            for k in selected[done:]:
                s.add(z3.Implies(clits[k], form(k)))
            solvers[a] = (s, len(selected))
        return s

    post_props: dict[int, dict[str, Any]] = {}

    def negated_goal(g: Goal, a: int) -> Any | None:
        """¬g after action a (a < 0: in the initial state); None when there is nothing to
        prove there."""
        if a < 0:
            if g.cand is not None:
                return z3.Not(form(g.cand))
            if g.name == "error:error":
                return any_of([e for _, e in errs])
            if g.name == ONE_PER_KIND:
                return None
            return z3.Not(targets[g.name])
        _ok, succ, dup = step(a)
        if g.cand is not None:
            return z3.Not(comp.formula(succ, cands[g.cand]))
        if g.name == ONE_PER_KIND:
            return None if z3.is_false(dup) else dup
        if g.name == "error:error":
            more = []
            for j, _ in errs:
                m2, tr2 = acts[j]
                more.append(_step(enc, succ, m2, tr2, f"a{a}b{j}")[1])
            return any_of(more) if more else None
        if a not in post_props:
            post_props[a] = _properties(enc, succ)
        return z3.Not(post_props[a][g.name])

    stats = {"queries": 0, "unknown": 0, "ctis": 0}

    # counterexamples with n agents: every formula unrolled over home, undefined and n agent
    # constants (param_cti.expand), once per n, into one incremental solver per (action, n)
    from coherence.smt.param_cti import _Concrete, _free_nodes, _state, _TooLarge, expand
    memos: dict[int, dict[int, Any]] = {}
    elems_of: dict[int, list[Any]] = {}
    finite: dict[tuple[int, int], tuple[Any, int, set[str]]] = {}

    def unroll(x: Any, n: int) -> Any:
        return expand(x, elems_of[n], NODE, memos[n], [UNROLL_LIMIT])

    def finite_solver(a: int, n: int) -> Any:
        if n not in elems_of:
            elems_of[n] = [HOME, UNDEF_N, *(z3.Const(f"cti_agent{i}", NODE) for i in range(n))]
            memos[n] = {}
        elems = elems_of[n]
        if (a, n) not in finite:
            fs = z3.Solver()
            ok = step(a)[0]
            fs.add(z3.Distinct(*elems), *(unroll(x, n) for x in base), unroll(ok, n))
            fs.add(*(z3.Implies(lit, unroll(f, n)) for lit, f in zip(tlits, tforms,
                                                                      strict=True)))
            for x in _free_nodes([ok, *base, *tforms], NODE):
                fs.add(z3.Or(*[x == e for e in elems]))
            finite[(a, n)] = (fs, 0, set())
        fs, done, goals_in = finite[(a, n)]
        for k in selected[done:]:
            fs.add(z3.Implies(clits[k], unroll(form(k), n)))
        finite[(a, n)] = (fs, len(selected), goals_in)
        return fs

    def concrete_pre(a: int, key: tuple[str, int], neg: Any,
                     assume: list[Any]) -> tuple[Any, Semantics] | None:
        """A pre-state (semantics state, with its semantics) of a counterexample with at most
        MAX_CTI_AGENTS agents, or None."""
        for n in range(1, MAX_CTI_AGENTS + 1):
            try:
                fs = finite_solver(a, n)
                goals_in = finite[(a, n)][2]
                if key[0] not in goals_in:
                    fs.add(z3.Implies(glits[key], unroll(neg, n)))
                    for x in _free_nodes([neg], NODE):
                        fs.add(z3.Implies(glits[key], z3.Or(*[x == e for e in elems_of[n]])))
                    goals_in.add(key[0])
            except _TooLarge:
                return None
            budget.apply(fs, True)
            t_q = time.perf_counter()
            r = fs.check(*assume)
            if DEBUG:
                print(f"    {n} agents: {r} {time.perf_counter() - t_q:.2f}s")
            if r == z3.sat:
                if n not in instances:
                    from coherence.spec.load import rebind
                    inst = rebind(model, {"agents": n})
                    instances[n] = (inst, Semantics(inst))
                inst, sem = instances[n]
                c = _Concrete(fs.model(), HOME, UNDEF_N, elems_of[n][2:])
                return _state(inst, cur, c), sem
        return None

    def blockers(state: Any, sem: Semantics) -> list[int]:
        rows = templates.rows(sem, state)
        return [k for k in range(len(cands))
                if alive[k] and not in_sel[k] and violated(cands[k], rows)]

    history: list[dict[str, list[tuple[bool, ...]]]] = []
    proved: dict[tuple[str, int], frozenset[int]] = {}
    glits: dict[tuple[str, int], Any] = {}

    def gkey(g: Goal) -> str:
        return g.name if g.cand is None else f"cand{g.cand}"

    def prove(g: Goal, a: int) -> frozenset[int] | None:
        """The core of a proof of g at a, taking in candidates that rule out the
        counterexamples met; None when no alive candidate rules one out."""
        key = (gkey(g), a)
        old = proved.get(key)
        if old is not None and all(alive[k] for k in old):
            return old
        neg = negated_goal(g, a)
        if neg is None:
            proved[key] = frozenset()
            return proved[key]
        while True:
            s = solver(a)
            if key not in glits:
                glits[key] = z3.Bool(f"goal|{key[0]}|{a}")
                s.add(z3.Implies(glits[key], neg))
            assume = [glits[key]] if a < 0 else [glits[key], *tlits,
                                                  *(clits[k] for k in selected if alive[k])]
            # a counterexample with few agents first: quantifier-free, so quickly decided
            found = concrete_pre(a, key, neg, assume) if a >= 0 else None
            if found is None:
                stats["queries"] += 1
                budget.apply(s, True)
                t_q = time.perf_counter()
                r = s.check(*assume)
                if DEBUG:
                    print(f"  {key} {r} {time.perf_counter() - t_q:.2f}s")
                if r == z3.unknown:  # a fresh solver often settles what the shared one
                    s = z3.Solver()   # (with every earlier goal in it) does not
                    budget.apply(s, True)
                    s.add(*base, step(a)[0], z3.Implies(glits[key], neg),
                          *(z3.Implies(x, f) for x, f in zip(tlits, tforms, strict=True)),
                          *(z3.Implies(clits[k], form(k)) for k in selected if alive[k]))
                    r = s.check(*assume)
                if r == z3.unsat:
                    core = frozenset(lit_index[x.get_id()] for x in s.unsat_core()
                                     if x.get_id() in lit_index)
                    proved[key] = core
                    return core
                if r == z3.unknown:
                    # no counterexample with 1-3 agents and no answer: taken as preserved,
                    # with every candidate taken in as its support; the final proof from
                    # scratch decides (it never passes what it cannot prove)
                    stats["unknown"] += 1
                    core = frozenset(k for k in selected if alive[k])
                    proved[key] = core
                    return core
                return None
            if not take_in(found):
                return None

    fresh_lits = iter(range(1 << 30))

    def take_in(found: tuple[Any, Semantics]) -> bool:
        """Take in the candidate ruling out the counterexample's pre-state that rules out the
        most of those met so far; False when no alive candidate rules it out."""
        stats["ctis"] += 1
        rows = templates.rows(found[1], found[0])
        new = [k for k in range(len(cands))
               if alive[k] and not in_sel[k] and violated(cands[k], rows)]
        if not new:
            if DEBUG:
                print("no blocker; state", found[0], "violates taken-in",
                      [cands[k].text for k in selected if violated(cands[k], rows)])
            return False
        history.append(rows)
        # then those with fewer message quantifiers (each is an existential Z3 must
        # instantiate: the final proof's unknowns are on them), then the smallest
        new.sort(key=lambda k: (-sum(violated(cands[k], r) for r in history[-HISTORY:]),
                                _quantified(cands[k]), cands[k].size,
                                KIND_ORDER.get(cands[k].kind, 3), k))
        for k in new[:TAKE_PER_CTI]:
            in_sel[k] = True
            selected.append(k)
            if progress:
                progress(f"{len(selected)} candidates taken in, {stats['queries']} queries: "
                         f"{cands[k].text}")
        return True

    def prove_batch(gs: list[Goal], a: int) -> Goal | None:
        """Prove every goal of ``gs`` after action ``a`` together: one finite search per size
        and one unbounded query for all of them (its core is every goal's), goal by goal only
        when that query is not settled. Returns a goal that cannot be proved, or None."""
        negs: list[tuple[Goal, tuple[str, int], Any]] = []
        for g in gs:
            key = (gkey(g), a)
            neg = negated_goal(g, a)
            if neg is None:
                proved[key] = frozenset()
                continue
            negs.append((g, key, neg))
        if not negs:
            return None
        s = solver(a)
        for _g, key, neg in negs:
            if key not in glits:
                glits[key] = z3.Bool(f"goal|{key[0]}|{a}")
                s.add(z3.Implies(glits[key], neg))
        any_goal = z3.Or(*[glits[key] for _g, key, _n in negs])
        while True:
            hyp = [*tlits, *(clits[k] for k in selected if alive[k])]
            found = None
            for n in range(1, MAX_CTI_AGENTS + 1):
                try:
                    fs = finite_solver(a, n)
                    goals_in = finite[(a, n)][2]
                    for _g, key, neg in negs:
                        if key[0] not in goals_in:
                            fs.add(z3.Implies(glits[key], unroll(neg, n)))
                            for x in _free_nodes([neg], NODE):
                                fs.add(z3.Implies(glits[key],
                                                  z3.Or(*[x == e for e in elems_of[n]])))
                            goals_in.add(key[0])
                except _TooLarge:
                    break
                r = z3.Bool(f"batch|{next(fresh_lits)}")
                fs.add(z3.Implies(r, any_goal))
                budget.apply(fs, True)
                if fs.check(*hyp, r) == z3.sat:
                    model_ = fs.model()
                    broken = next(g for g, key, _n in negs
                                  if z3.is_true(model_.eval(glits[key], model_completion=True)))
                    if n not in instances:
                        from coherence.spec.load import rebind
                        inst = rebind(model, {"agents": n})
                        instances[n] = (inst, Semantics(inst))
                    inst, sem = instances[n]
                    c = _Concrete(model_, HOME, UNDEF_N, elems_of[n][2:])
                    found = (_state(inst, cur, c), sem)
                    break
            if found is not None:
                if not take_in(found):
                    return broken
                continue
            r = z3.Bool(f"batch|{next(fresh_lits)}")
            s.add(z3.Implies(r, any_goal))
            stats["queries"] += 1
            budget.apply(s, True)
            t_q = time.perf_counter()
            res = s.check(*hyp, r)
            if DEBUG:
                print(f"  batch of {len(negs)} at {a}: {res} {time.perf_counter() - t_q:.2f}s")
            if res == z3.unsat:
                core = frozenset(lit_index[x.get_id()] for x in s.unsat_core()
                                 if x.get_id() in lit_index)
                for _g, key, _n in negs:
                    proved[key] = core
                return None
            for g, _key, _n in negs:  # goal by goal
                if prove(g, a) is None:
                    return g
            return None

    goals = [Goal(n) for n in targets] + [Goal("error:error"), Goal(ONE_PER_KIND)]
    where = ["the initial state"] + [f"action {m.name}.{_label(t)}" for m, t in acts]
    failed: list[str] = []

    def valid(g: Goal, a: int) -> bool:
        old = proved.get((gkey(g), a))
        return old is not None and all(alive[k] for k in old)

    while True:
        support: set[int] = set()
        active: list[Goal] = list(goals)
        seen: set[str] = {gkey(g) for g in active}
        restart = False
        grew = True
        while grew and not restart and not failed:
            grew = False
            for a in range(-1, len(acts)):
                pending = [g for g in active if not valid(g, a)]
                bad = None
                if a < 0:
                    bad = next((g for g in pending if prove(g, a) is None), None)
                elif pending:
                    bad = prove_batch(pending, a)
                if bad is not None:
                    if bad.cand is None:
                        failed.append(f"{bad.name} is not preserved by {where[a + 1]}"
                                      if a >= 0 else f"{bad.name} does not hold initially")
                        break
                    alive[bad.cand] = False
                    if progress:
                        progress(f"dropped {cands[bad.cand].text}")
                    restart = True
                    break
            if restart or failed:
                break
            for g in active:  # the supports of every proof, as goals in turn
                for a in range(-1, len(acts)):
                    for k in proved.get((gkey(g), a), frozenset()):
                        support.add(k)
            for k in sorted(support):
                if f"cand{k}" not in seen:
                    seen.add(f"cand{k}")
                    active.append(Goal("", k))
                    grew = True
        if failed or not restart:
            break
    final = sorted(k for k in support if alive[k]) if not failed else []
    return HoudiniResult(final, len(selected), len(cands) - sum(alive), failed,
                         stats["queries"], stats["ctis"], time.perf_counter() - t0,
                         stats["unknown"])


def _quantified(c: Candidate) -> int:
    """How many of the candidate's atoms quantify over messages (``inflight``, ``exists``)."""
    return sum(1 for atom, _w, _p in c.lits if "inflight(" in atom.text or "exists " in atom.text)


DEBUG = False  # print every check and its time (development)
QUICK_SHARE = 30  # a quick try gets 1/30 of a check's resource units
MAX_CTI_AGENTS = 3  # counterexamples to induction are looked for with 1..3 agents
UNROLL_LIMIT = 200_000  # quantifier instances per formula (param_cti.MAX_UNROLLED)
TAKE_PER_CTI = 1  # candidates taken in per counterexample
HISTORY = 200  # counterexamples remembered for choosing among candidates
KIND_ORDER = {"global": 0, "agent": 1, "pair": 2}
