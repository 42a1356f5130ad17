"""Hypothesis strategies for random, small, well-formed ``.coh`` spec texts (STYLE.md item 14,
after attrs' ``tests/strategies.py``).

``specs()`` draws the text of a spec that always loads (``load_spec_text``): a spec that does
not is a bug in this module, and ``loaded_specs()`` asserts it. Texts rather than IR models,
so that every random model also goes through the front end, and a failing example prints a
spec that can be pasted into a file and run with ``coherence check``.

What is covered (docs/language.md): 1-2 lines, a home and a cache machine with stable and
transient states, one to five networks (up to two unordered and two fifo, capacity 1-2, and
up to one bus), 2 agents and 1-2 data values,
1-4 message types with 0-2 fields (value, agent, bool, small int ranges), variables of bool,
int ranges, value, agent, set<agent>, an enum and sometimes array<agent, ...>, an optional
global, processor events (some with parameters), message arrivals (some that stall), rules
with agent parameters, bodies with assignments (some out of range at run time: model
errors), undefine, if/else, for over agents, let, send/broadcast, perform load/store, set
methods, assert and goto; invariants with agent and message quantifiers and ``inflight``,
and sometimes ``property coherent: coherence;``; named constants (as capacities), ``not in``
and ``if ... then ... else`` expressions, procedures (called by a rule; issue 15's additions,
which every engine must agree on).

Expressions are built by type: each context knows the names it can read and their types, so
every expression type-checks; run-time errors (undefined reads, overflow, failed asserts, a
message with no transition, deadlock) are left in on purpose, since engines must agree on
them too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st

from coherence.ir import Model
from coherence.spec.load import load_spec_text

# A type is a tuple: ("bool",) ("value",) ("agent",) ("set",) ("enum",) ("int", lo, hi)
# ("array", elem) (array<agent, elem>), ("node",) (msg.src, m.dst), and ("cstate",)/("hstate",)
# for a machine's control state (compared with its state names only).
Type = tuple[Any, ...]
BOOL: Type = ("bool",)
VALUE: Type = ("value",)
AGENT: Type = ("agent",)
SET: Type = ("set",)
ENUM: Type = ("enum",)
NODE: Type = ("node",)
ENUM_NAME = "Ph"
ENUM_MEMBERS = ("P0", "P1", "P2")
CACHE = "C"
HOME = "H"

Draw = Callable[[st.SearchStrategy[Any]], Any]


def render_type(t: Type) -> str:
    kind = t[0]
    if kind == "int":
        return f"int[{t[1]}..{t[2]}]"
    if kind == "set":
        return "set<agent>"
    if kind == "enum":
        return ENUM_NAME
    if kind == "array":
        return f"array<agent, {render_type(t[1])}>"
    return str(kind)


@attrs.define
class Message:
    name: str
    net: str
    ordering: str
    fields: list[tuple[str, Type]]


@attrs.define
class Ctx:
    """What an expression may read here: name -> type (variables, locals, parameters,
    ``msg.f``, ``H.x``, ``C[a].x``, ``self``), and the state atoms with their state names."""

    names: dict[str, Type]
    states: dict[str, tuple[str, tuple[str, ...]]] = attrs.Factory(dict)  # atom -> (kind, names)
    plain_vars: list[str] = attrs.Factory(list)  # what isundefined() may test
    invariant: bool = False
    machine: str | None = None  # "cache" | "home" | None in an invariant
    in_message: bool = False

    def with_name(self, name: str, t: Type) -> Ctx:
        return attrs.evolve(self, names={**self.names, name: t})


class SpecBuilder:
    """One random spec, drawn piece by piece (the draws are Hypothesis's, so it shrinks)."""

    def __init__(self, draw: Draw, agents: int = 2) -> None:
        self.draw = draw
        self.agents = agents
        self.values = draw(st.integers(1, 2))
        self.fresh = 0
        self.home_vars: dict[str, Type] = {}
        self.cache_vars: dict[str, Type] = {}
        self.global_vars: dict[str, Type] = {}
        self.messages: list[Message] = []
        self.events: list[tuple[str, list[tuple[str, Type]]]] = []
        self.home_states: list[str] = []
        self.cache_states: list[str] = []
        self.procedures: list[str] = []  # top-level declarations, each called by one rule

    # ------------------------------------------------------------------ small helpers
    def name(self, prefix: str) -> str:
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def choice(self, items: list[Any] | tuple[Any, ...]) -> Any:
        return self.draw(st.sampled_from(list(items)))

    def chance(self, p: float) -> bool:
        # integers shrink towards 0, i.e. towards "no": examples shrink to simpler specs
        return self.draw(st.integers(0, 99)) >= 100 - int(p * 100)

    def scalar_type(self, allow_agent: bool = True) -> Type:
        kinds = ["bool", "int", "value", "enum"] + (["agent"] if allow_agent else [])
        kind = self.choice(kinds)
        if kind == "int":
            lo = self.choice([0, 0, 1, -1])
            return ("int", lo, lo + self.draw(st.integers(1, 2)))
        return (kind,)

    def literal(self, t: Type) -> str | None:
        kind = t[0]
        if kind == "bool":
            return self.choice(["false", "true"])
        if kind == "int":
            v = self.draw(st.integers(t[1], t[2]))
            return f"({v})" if v < 0 else str(v)
        if kind == "value":
            return str(self.draw(st.integers(0, self.values - 1)))
        if kind == "enum":
            return self.choice(ENUM_MEMBERS)
        if kind == "set":
            return "{}"
        return None

    def init_value(self, t: Type) -> str:
        kind = t[0]
        if kind == "array":
            lit = self.literal(t[1])
            assert lit is not None
            return lit
        if kind in ("agent",) or (kind in ("value", "int", "enum", "bool") and self.chance(0.2)):
            return "undefined"
        lit = self.literal(t)
        assert lit is not None
        return lit

    # ------------------------------------------------------------------ expressions
    def atoms(self, ctx: Ctx, t: Type) -> list[str]:
        """Readable names of type ``t`` (any int range for an int), and array reads."""
        kind = t[0]
        out = [n for n, nt in ctx.names.items() if nt[0] == kind]
        arrays = [n for n, nt in ctx.names.items() if nt[0] == "array" and nt[1][0] == kind]
        if arrays and self.atoms_plain(ctx, AGENT):
            out += [f"{a}[{{agent}}]" for a in arrays]
        return out

    def atoms_plain(self, ctx: Ctx, t: Type) -> list[str]:
        return [n for n, nt in ctx.names.items() if nt[0] == t[0]]

    def atom(self, ctx: Ctx, t: Type) -> str | None:
        options = self.atoms(ctx, t)
        if not options:
            return None
        a: str = self.choice(options)
        if "{agent}" in a:
            a = a.replace("{agent}", self.choice(self.atoms_plain(ctx, AGENT)))
        return a

    def expr(self, ctx: Ctx, t: Type, depth: int = 2, lit_ok: bool = True) -> str | None:
        """An expression of type ``t`` in ``ctx``, or None if nothing here has that type.

        An int literal is a ``value`` only where one is expected (an assignment, a field, a
        comparison's right side); ``lit_ok=False`` leaves value literals out elsewhere."""
        kind = t[0]
        if kind == "bool":
            return self.bool_expr(ctx, depth)
        options: list[str] = []
        if self.atoms(ctx, t):
            options.append("atom")
        if kind in ("int", "enum", "set") or (kind == "value" and lit_ok):
            options.append("literal")
        if kind == "int" and self.atoms(ctx, ("int", 0, 0)):
            options.append("arith")
        if kind == "int" and self.atoms(ctx, SET):
            options.append("size")
        if kind == "set" and self.atoms(ctx, AGENT):
            options.append("singleton")
        if kind == "set":
            options.append("all")
        if not options:
            return None
        if depth > 0 and kind in ("int", "value", "enum") and self.chance(0.15):
            then = self.expr(ctx, t, depth - 1, lit_ok)
            orelse = self.expr(ctx, t, depth - 1, lit_ok)
            if then is not None and orelse is not None:
                return f"(if {self.bool_expr(ctx, 0)} then {then} else {orelse})"
        how = self.choice(options)
        if how == "atom":
            return self.atom(ctx, t)
        if how == "literal":
            return self.literal(t)
        if how == "arith":
            return f"({self.atom(ctx, ('int', 0, 0))} {self.choice(['+', '-'])} 1)"
        if how == "size":
            return f"size({self.atom(ctx, SET)})"
        if how == "singleton":
            return f"{{{self.atom(ctx, AGENT)}}}"
        return "all_agents()"

    def bool_expr(self, ctx: Ctx, depth: int) -> str:
        options = ["literal"]
        if self.atoms(ctx, BOOL):
            options.append("atom")
        comparable = [k for k in (VALUE, AGENT, ENUM, ("int", 0, 0), NODE) if self.atoms(ctx, k)]
        if comparable:
            options += ["compare", "compare"]
        if self.atoms(ctx, ("int", 0, 0)) or self.atoms(ctx, SET):
            options.append("order")
        if self.atoms(ctx, SET) and (self.atoms(ctx, AGENT) or self.atoms(ctx, NODE)):
            options.append("member")
        if ctx.states:
            options += ["state", "state"]
        if ctx.plain_vars:
            options.append("isundefined")
        if self.messages:
            options.append("inflight")
        if depth > 0:
            options += ["not", "and", "or", "implies"]
            if ctx.invariant:
                options += ["forall", "exists", "msgquant"]
        how = self.choice(options)
        if how == "literal":
            return self.choice(["true", "false"])
        if how == "atom":
            a = self.atom(ctx, BOOL)
            assert a is not None
            return a
        if how == "compare":
            k = self.choice(comparable)
            left = self.atom(ctx, k)
            if k == NODE:
                right = self.choice([*self.atoms(ctx, NODE), "home"])
            elif k[0] == "int":
                # a literal in the left atom's own range (a constant outside it is an error)
                rng = ctx.names.get(str(left))
                right = (self.literal(rng) if rng is not None and rng[0] == "int"
                         and self.chance(0.5) else self.atom(ctx, k))
            else:
                right = self.expr(ctx, k, 0)
            assert left is not None and right is not None
            return f"({left} {self.choice(['==', '!='])} {right})"
        if how == "order":
            if self.atoms(ctx, ("int", 0, 0)) and (not self.atoms(ctx, SET) or self.chance(0.5)):
                left = self.atom(ctx, ("int", 0, 0))
                right = self.atom(ctx, ("int", 0, 0))
            else:
                left = f"size({self.atom(ctx, SET)})"
                right = str(self.draw(st.integers(0, 2)))
            return f"({left} {self.choice(['<', '<=', '>', '>='])} {right})"
        if how == "member":
            elem = self.atom(ctx, AGENT if self.atoms(ctx, AGENT) else NODE)
            op = "not in" if self.chance(0.3) else "in"
            return f"({elem} {op} {self.expr(ctx, SET, 0)})"
        if how == "state":
            atom = self.choice(sorted(ctx.states))
            _kind, names = ctx.states[atom]
            if self.chance(0.3) and len(names) > 1:
                picked = self.draw(st.lists(st.sampled_from(names), min_size=1, max_size=2,
                                            unique=True))
                return f"({atom} in {{{', '.join(picked)}}})"
            return f"({atom} {self.choice(['==', '!='])} {self.choice(names)})"
        if how == "isundefined":
            return f"isundefined({self.choice(ctx.plain_vars)})"
        if how == "inflight":
            m = self.choice(self.messages)
            agents = self.atoms_plain(ctx, AGENT)
            if self.chance(0.4):
                dst = self.choice([*agents, "home"])
                return f"inflight({m.name}, {dst})"
            return f"inflight({m.name})"
        if how == "not":
            return f"!({self.bool_expr(ctx, depth - 1)})"
        if how in ("and", "or", "implies"):
            op = {"and": "&&", "or": "||", "implies": "->"}[how]
            return f"({self.bool_expr(ctx, depth - 1)} {op} {self.bool_expr(ctx, depth - 1)})"
        if how in ("forall", "exists"):
            v = self.name("a")
            inner = self.invariant_ctx(ctx, [v])
            return f"({how} {v}: agent :: {self.bool_expr(inner, depth - 1)})"
        # a quantifier over the messages of one type in flight
        m = self.choice(self.messages)
        v = self.name("m")
        names = {**ctx.names, f"{v}.src": NODE, f"{v}.dst": NODE}
        names.update({f"{v}.{f}": ft for f, ft in m.fields})
        inner = attrs.evolve(ctx, names=names)
        q = self.choice(["forall", "exists"])
        return f"({q} {v}: {m.name} :: {self.bool_expr(inner, depth - 1)})"

    def invariant_ctx(self, base: Ctx | None, agents: list[str]) -> Ctx:
        """An invariant's context with the agent variables ``agents`` newly bound."""
        names = dict(base.names) if base is not None else {}
        states = dict(base.states) if base is not None else {}
        plain = list(base.plain_vars) if base is not None else []
        if base is None:
            names.update({f"{HOME}.{n}": t for n, t in self.home_vars.items()})
            names.update(self.global_vars)
            states[f"{HOME}.state"] = ("hstate", tuple(self.home_states))
            plain += [f"{HOME}.{n}" for n, t in self.home_vars.items() if t[0] != "array"]
        for a in agents:
            names[a] = AGENT
            for n, t in self.cache_vars.items():
                names[f"{CACHE}[{a}].{n}"] = t
            states[f"{CACHE}[{a}].state"] = ("cstate", tuple(self.cache_states))
            plain += [f"{CACHE}[{a}].{n}" for n, t in self.cache_vars.items()
                      if t[0] != "array"]
        return Ctx(names, states, plain, invariant=True)

    # ------------------------------------------------------------------ statements
    def block(self, ctx: Ctx, budget: int, depth: int = 2, least: int = 0) -> list[str]:
        """Statements; ``let`` binds a name for the rest of the block."""
        out: list[str] = []
        for _ in range(self.draw(st.integers(least, budget))):
            stmt, ctx = self.statement(ctx, depth)
            out.append(stmt)
        return out

    def machine_vars(self, ctx: Ctx) -> dict[str, Type]:
        own = self.cache_vars if ctx.machine == "cache" else self.home_vars
        return {**own, **self.global_vars}

    def statement(self, ctx: Ctx, depth: int) -> tuple[str, Ctx]:
        targets = self.machine_vars(ctx)
        scalars = {n: t for n, t in targets.items() if t[0] not in ("array", "set")}
        sets = [n for n, t in targets.items() if t[0] == "set"]
        arrays = {n: t for n, t in targets.items() if t[0] == "array"}
        options = ["send", "send"] + (["assert"] if self.chance(0.3) else [])
        if scalars:
            options += ["assign", "assign", "assign", "undefine"]
        if sets:
            options.append("setop")
        if arrays and self.atoms(ctx, AGENT):
            options.append("array")
        if self.atoms(ctx, VALUE):
            options.append("perform")
        options.append("let")
        if self.messages and any(m.ordering != "bus" for m in self.messages):
            options.append("broadcast")
        if depth > 0:
            options += ["if", "for"]
        how = self.choice(options)
        if how == "assign":
            n = self.choice(sorted(scalars))
            t = scalars[n]
            e = self.expr(ctx, t)
            if e is None:
                e = self.literal(t) or "undefined"
            return f"{n} := {e};", ctx
        if how == "undefine":
            return f"undefine {self.choice(sorted(scalars))};", ctx
        if how == "setop":
            s = self.choice(sets)
            a = self.atom(ctx, AGENT)
            if a is None or self.chance(0.2):
                return f"{s}.clear();", ctx
            return f"{s}.{self.choice(['add', 'remove'])}({a});", ctx
        if how == "array":
            n = self.choice(sorted(arrays))
            e = self.expr(ctx, arrays[n][1]) or self.literal(arrays[n][1])
            return f"{n}[{self.atom(ctx, AGENT)}] := {e};", ctx
        if how == "perform":
            v = self.expr(ctx, VALUE, lit_ok=False)
            op = self.choice(["load", "store"])
            if ctx.machine == "home":
                by = self.atom(ctx, AGENT)
                if by is None:
                    return "assert true \"no agent to perform for\";", ctx
                return f"perform {op}({v}) by {by};", ctx
            return f"perform {op}({v});", ctx
        if how == "let":
            t = self.scalar_type()
            e = self.expr(ctx, t, lit_ok=False)
            if e is not None and t[0] == "int" and e.lstrip("(-").rstrip(")").isdigit():
                t = ("int", int(e.strip("()")), int(e.strip("()")))  # a literal's own type
            if e is None:
                t = BOOL
                e = self.bool_expr(ctx, 1)
            v = self.name("l")
            return f"let {v} = {e};", ctx.with_name(v, t)
        if how == "assert":
            return f"assert {self.bool_expr(ctx, 1)} \"random\";", ctx
        if how == "send":
            m = self.choice(self.messages)
            dsts = ["home", *self.atoms_plain(ctx, AGENT)]
            if ctx.in_message:
                dsts.append("msg.src")
            return f"send {m.name}{self.args(ctx, m)} to {self.choice(dsts)};", ctx
        if how == "broadcast":
            m = self.choice([m for m in self.messages if m.ordering != "bus"])
            tail = ""
            agents = self.atoms_plain(ctx, AGENT)
            if agents and self.chance(0.5):
                tail = f" except {self.choice(agents)}"
            return f"broadcast {m.name}{self.args(ctx, m)}{tail};", ctx
        if how == "if":
            cond = self.bool_expr(ctx, 1)
            then = self.block(ctx, 2, depth - 1)
            text = f"if {cond} {{ {' '.join(then)} }}"
            if self.chance(0.5):
                text += f" else {{ {' '.join(self.block(ctx, 2, depth - 1))} }}"
            return text, ctx
        v = self.name("a")
        body = self.block(ctx.with_name(v, AGENT), 2, depth - 1)
        return f"for {v}: agent {{ {' '.join(body)} }}", ctx

    def args(self, ctx: Ctx, m: Message) -> str:
        if not m.fields:
            return "" if self.chance(0.5) else "()"
        out = []
        for _f, t in m.fields:
            e = self.expr(ctx, t)
            out.append(e if e is not None else "undefined")
        return f"({', '.join(out)})"

    # ------------------------------------------------------------------ transitions
    def transitions(self, states: list[str], trigger: str, ctx: Ctx,
                    params: str = "", can_stall: bool = False,
                    first_unguarded: bool = False) -> list[str]:
        """1-2 transitions for one trigger; unguarded ones cover disjoint states (two
        unguarded transitions for one trigger and state are a load error)."""
        out: list[str] = []
        free = list(states)
        for i in range(self.draw(st.integers(1, 2))):
            guarded = not (i == 0 and first_unguarded) and self.chance(0.4)
            pool = states if guarded else free
            if not pool:
                guarded, pool = True, states
            busy = i == 0 and first_unguarded  # enabled everywhere, and it changes something
            if busy or (not guarded and pool == states and self.chance(0.3)):
                chosen = list(states)
                in_clause = ""
            else:
                chosen = self.draw(st.lists(st.sampled_from(pool), min_size=1,
                                            max_size=len(pool), unique=True))
                in_clause = f" in {', '.join(chosen)}"
            if not guarded:
                free = [s for s in free if s not in chosen]
            when = f" when {self.bool_expr(ctx, 1)}" if guarded else ""
            head = f"on {trigger}{params}{in_clause}{when}"
            if can_stall and self.chance(0.15):
                out.append(f"  {head} stall;")
                continue
            body = self.block(ctx, 3, least=1 if busy else 0)
            if busy or self.chance(0.6):
                body.append(f"goto {self.choice(states)};")
            out.append(f"  {head} {{ {' '.join(body)} }}")
        return out

    def machine_ctx(self, machine: str) -> Ctx:
        own = self.cache_vars if machine == "cache" else self.home_vars
        names = {**own, **self.global_vars}
        states: dict[str, tuple[str, tuple[str, ...]]] = {}
        if machine == "cache":
            names["self"] = AGENT
            names.update({f"{HOME}.{n}": t for n, t in self.home_vars.items()})
            states[f"{HOME}.state"] = ("hstate", tuple(self.home_states))
            states[f"{CACHE}[self].state"] = ("cstate", tuple(self.cache_states))
        plain = [n for n, t in own.items() if t[0] != "array"]
        return Ctx(names, states, plain, machine=machine)

    def machine(self, kind: str) -> str:
        is_cache = kind == "cache"
        states = self.cache_states if is_cache else self.home_states
        variables = self.cache_vars if is_cache else self.home_vars
        name = CACHE if is_cache else HOME
        n_stable = self.draw(st.integers(1, 3))
        n_transient = self.draw(st.integers(0, 2))
        prefix = "S" if is_cache else "R"
        stable = [f"{prefix}{i}" for i in range(n_stable)]
        transient = [f"{prefix}T{i}" for i in range(n_transient)]
        states += stable + transient
        lines = [f"{kind} machine {name} {{", f"  stable state {', '.join(stable)};"]
        if transient:
            lines.append(f"  transient state {', '.join(transient)};")
        lines.append(f"  init {self.choice(stable)};")
        for _ in range(self.draw(st.integers(0 if is_cache else 1, 3))):
            if self.chance(0.15):
                t: Type = ("array", self.scalar_type(allow_agent=False))
            elif self.chance(0.2):
                t = SET
            else:
                t = self.scalar_type()
            v = self.name("c" if is_cache else "h")
            ghost = "ghost " if self.chance(0.1) else ""
            lines.append(f"  {ghost}var {v}: {render_type(t)} = {self.init_value(t)};")
            variables[v] = t
        return "\n".join(lines)

    def machine_body(self, kind: str) -> list[str]:
        """Transitions (drawn once every machine's variables are known)."""
        is_cache = kind == "cache"
        states = self.cache_states if is_cache else self.home_states
        ctx = self.machine_ctx(kind)
        out: list[str] = []
        for m in self.messages:  # every message is handled by both machines
            mctx = attrs.evolve(ctx, in_message=True,
                                names={**ctx.names, "msg.src": NODE,
                                       **{f"msg.{f}": t for f, t in m.fields}})
            out += self.transitions(states, m.name, mctx, can_stall=True)
        if is_cache:
            for ev, params in self.events:
                pnames = [self.name("p") for _ in params]
                ectx = ctx
                for p, (_pn, pt) in zip(pnames, params, strict=True):
                    ectx = ectx.with_name(p, pt)
                text = f"({', '.join(pnames)})" if params else ""
                # the first event's first transition is unguarded, so that most specs move
                out += self.transitions(states, ev, ectx, params=text,
                                        first_unguarded=ev == self.events[0][0])
        if self.chance(0.25):  # a procedure of this machine, called by a rule for each agent
            proc, p, a = self.name("Proc"), self.name("p"), self.name("a")
            body = self.block(ctx.with_name(p, AGENT), 2, least=1)
            self.procedures.append(f"procedure {proc}({p}: agent) {{ {' '.join(body)} }}")
            out.append(f"  rule {self.name('Rule')}({a}: agent) {{ {proc}({a}); }}")
        for _ in range(self.draw(st.integers(0, 2))):
            r = self.name("Rule")
            rctx = ctx
            params = []
            if self.chance(0.6):
                p = self.name("a")
                rctx = rctx.with_name(p, AGENT)
                params.append(f"{p}: agent")
            if self.chance(0.2):
                p = self.name("b")
                rctx = rctx.with_name(p, BOOL)
                params.append(f"{p}: bool")
            head = f"rule {r}({', '.join(params)})" if params else f"rule {r}"
            if self.chance(0.6):
                chosen = self.draw(st.lists(st.sampled_from(states), min_size=1,
                                            max_size=len(states), unique=True))
                head += f" in {', '.join(chosen)}"
            if self.chance(0.7):
                head += f" when {self.bool_expr(rctx, 1)}"
            body = self.block(rctx, 3)
            if self.chance(0.5):
                body.append(f"goto {self.choice(states)};")
            out.append(f"  {head} {{ {' '.join(body)} }}")
        return out

    # ------------------------------------------------------------------ the whole spec
    def build(self) -> str:
        draw = self.draw
        lines = draw(st.integers(1, 2))
        out = [f"param agents = {self.agents};", f"param lines = {lines};",
               f"param values = {self.values};",
               f"enum {ENUM_NAME} {{ {', '.join(ENUM_MEMBERS)} }}"]
        nets: list[tuple[str, str]] = []
        for ordering in ("unordered", "fifo", "bus"):
            for _ in range(draw(st.integers(0, 1 if ordering == "bus" else 2))):
                n = self.name("net")
                nets.append((n, ordering))
                capacity = str(draw(st.integers(1, 2)))
                if self.chance(0.25):  # a named constant where a number is expected
                    const = self.name("K")
                    out.append(f"const {const} = {capacity};")
                    capacity = const
                if ordering == "unordered":
                    out.append(f"network {n}: unordered, capacity = {capacity};")
                elif ordering == "fifo":
                    out.append(f"network {n}: fifo, capacity = {capacity};")
                else:
                    out.append(f"network {n}: bus;")
        if not nets:
            n = self.name("net")
            nets.append((n, "unordered"))
            out.append(f"network {n}: unordered, capacity = {draw(st.integers(1, 2))};")
        for _ in range(draw(st.integers(1, 4))):
            net, ordering = self.choice(nets)
            fields = []
            for _ in range(draw(st.integers(0, 2))):
                fields.append((self.name("f"), self.choice(
                    [VALUE, AGENT, BOOL, ("int", 0, 1), ("int", 0, 2)])))
            m = Message(self.name("M"), net, ordering, fields)
            self.messages.append(m)
            ftext = f"({', '.join(f'{f}: {render_type(t)}' for f, t in fields)})" if fields else ""
            out.append(f"message {m.name}{ftext} on {net};")
        for _ in range(draw(st.integers(1, 2))):
            params = [(self.name("q"), self.choice([VALUE, BOOL, ("int", 0, 1)]))
                      for _ in range(draw(st.integers(0, 1)))]
            ev = self.name("Ev")
            self.events.append((ev, params))
            ptext = f"({', '.join(f'{p}: {render_type(t)}' for p, t in params)})" if params else ""
            out.append(f"event {ev}{ptext};")
        if self.chance(0.2):
            g = self.name("g")
            t = self.choice([VALUE, BOOL, ("int", 0, 2)])
            self.global_vars[g] = t
            out.append(f"ghost var {g}: {render_type(t)} = {self.literal(t)};")
        home_head = self.machine("home")
        cache_head = self.machine("cache")
        home_body = self.machine_body("home")
        cache_body = self.machine_body("cache")
        out += [*self.procedures, home_head, *home_body, "}", cache_head, *cache_body, "}"]
        for _ in range(draw(st.integers(0, 2))):
            agents = [self.name("a") for _ in range(draw(st.integers(0, 2)))]
            ctx = self.invariant_ctx(None, [])
            body = self.bool_expr(self.invariant_ctx(ctx, agents), 2)
            if agents:
                binders = ", ".join(f"{a}: agent" for a in agents)
                body = f"{self.choice(['forall', 'exists'])} {binders} :: {body}"
            aux = "aux " if self.chance(0.2) else ""
            out.append(f"invariant {aux}{self.name('inv')}: {body};")
        if self.chance(0.3):
            out.append("property coherent: coherence;")
        return "\n".join(out) + "\n"


@st.composite
def specs(draw: Draw, agents: int = 2) -> str:
    """The text of a small well-formed spec at ``agents`` agents (2 by default)."""
    return SpecBuilder(draw, agents).build()


def load(text: str) -> Model:
    """Load a generated spec; one that does not load is a bug in this module."""
    try:
        return load_spec_text(text, "<random>")
    except Exception as err:  # pragma: no cover - a strategy bug; show the spec
        raise AssertionError(f"a generated spec does not load: {err}\n{text}") from err


@st.composite
def loaded_specs(draw: Draw, agents: int = 2) -> tuple[str, Model]:
    """A random spec's text and its model (asserting that it loads)."""
    text = draw(specs(agents))
    return text, load(text)
