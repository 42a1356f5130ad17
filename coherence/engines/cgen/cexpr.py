"""IR expressions and statements to C, in the exact evaluation order of the semantics.

One ``Frame`` emits the body of one C function: a guard, a transition body at one bus
depth, or an invariant. Values are C ``int``s with ``CO_UNDEF`` for *undefined*; every
check the reference makes (``_check``, agent indices, array flags, ranges) becomes an early
``return CO_E(key)``, in the order ``coherence.semantics`` makes it, because which error an
action raises decides its failure key. (Python evaluates ``x[i] = v`` as ``v`` first, then
``x`` and ``i``: an assignment to a cache variable checks the value before the agent index.)

Inside a quantifier or ``count`` an error does not return: it is deferred to the end of
the quantifier, which reports the least one only when no instance decides the result
(NOTE(quantifier-errors) in ``coherence.semantics``; ``ErrorScope``).

One deliberate difference: an array index outside the array's index type (possible only with
arithmetic, ``a[i + 1]``) is the model error "index" here; the reference indexes a Python
tuple with it (an IndexError, or a wrapped negative index), which is no behaviour to copy.

NOTE(compiled-values): inside a function ``u`` is the unpacked state (``co_u *``), ``line``
the line, ``self`` the running machine's node id (the home is ``CO_AGENTS``), ``src`` and
``mf`` the message's sender and field values, ``pr`` the transition's parameters.
"""

from __future__ import annotations

from collections.abc import Callable

from coherence import ir
from coherence.engines.cgen.cmodel import CModel, CodegenError, Shape
from coherence.errors import Span
from coherence.semantics import BUS_NESTING_LIMIT, error_rank

BusRequest = Callable[[int, int], str]  # (message type, depth) -> C function name


class ErrorScope:
    """A quantifier or ``count`` being emitted: its errors go to ``rank`` and ``key`` (the
    least so far) and jump to ``label``, the end of the instance (NOTE(quantifier-errors))."""

    def __init__(self, rank: str, key: str) -> None:
        self.rank = rank
        self.key = key
        self.label = ""


class Frame:
    """Emits one C function body; ``kind`` is "guard", "body" or "inv"."""

    def __init__(self, cm: CModel, kind: str, machine: ir.Machine | None = None,
                 depth: int = 0, message: int | None = None,
                 bus: BusRequest | None = None, params: tuple[ir.Field, ...] = ()) -> None:
        self.cm = cm
        self.kind = kind
        self.machine = machine
        self.depth = depth
        self.message = message  # the handled message type (msg.FIELD positions)
        self.bus = bus
        self.out: list[str] = []
        self.ind = 1
        self.ntmp = 0
        self.msgvars: dict[str, str] = {}  # message quantifier variable -> C prefix
        self.scopes: list[ErrorScope] = []  # the quantifiers being emitted, innermost last
        for i, p in enumerate(params):
            self.emit(f"const int L_{p.name} = pr[{i}];")

    # ------------------------------------------------------------ emission helpers

    def emit(self, s: str) -> None:
        self.out.append("    " * self.ind + s)

    def tmp(self) -> str:
        self.ntmp += 1
        return f"t{self.ntmp}"

    def let(self, c: str) -> str:
        t = self.tmp()
        self.emit(f"int {t} = {c};")
        return t

    def fail(self, code: str, span: Span) -> str:
        """The C statement that raises this model error here."""
        return self.raise_error(f"{error_rank(code, span)}LL",
                                str(self.cm.key(("error", code, str(span)))))

    def raise_error(self, rank: str, key: str) -> str:
        """Outside quantifiers, returns the error (an invariant's is 2: it has one error key);
        inside one, keeps it if it is the least so far and ends the instance."""
        if self.scopes:
            s = self.scopes[-1]
            if self.kind == "inv":  # one error key: any error will do
                return f"{{ {s.rank} = 0; goto {s.label}; }}"
            return f"{{ CO_KEEP({s.rank}, {s.key}, {rank}, {key}); goto {s.label}; }}"
        if self.kind == "inv":
            return "return 2;"
        return f"return CO_E({key});"

    def open_scope(self) -> ErrorScope:
        n = self.ntmp = self.ntmp + 1
        self.emit(f"long long q{n}_rank = CO_NO_ERROR; int q{n}_key = 0; (void)q{n}_key;")
        scope = ErrorScope(f"q{n}_rank", f"q{n}_key")
        self.scopes.append(scope)
        return scope

    def instance(self, scope: ErrorScope, body: Callable[[], str]) -> None:
        """Emits one instance of a quantifier in braces: what ``body`` emits, then the
        statement it returns. The braces make its errors' jump to the label after them skip
        no declaration still in scope (C++ forbids that; CUDA is C++)."""
        self.ntmp += 1
        scope.label = f"q_end{self.ntmp}"
        self.open("")
        self.emit(body())
        self.close()
        self.emit(f"{scope.label}: ;")

    def close_scope(self, scope: ErrorScope) -> None:
        """After the loop: the least deferred error is raised (in the enclosing scope, if
        any) unless an instance decided the result (which clears it)."""
        assert self.scopes.pop() is scope
        self.emit(f"if ({scope.rank} != CO_NO_ERROR) "
                  f"{self.raise_error(scope.rank, scope.key)}")

    def check(self, v: str, span: Span) -> None:
        self.emit(f"if ({v} == CO_UNDEF) {self.fail('undefined', span)}")

    def open(self, head: str) -> None:
        self.emit(head + " {")
        self.ind += 1

    def close(self, tail: str = "}") -> None:
        self.ind -= 1
        self.emit(tail)

    def agent(self, e: ir.Expr, span: Span) -> str:
        """``Semantics.agent_expr``: an agent index, checked."""
        a = self.ex(e)
        self.emit(f"if ({a} == CO_UNDEF) {self.fail('undefined-agent', span)}")
        self.emit(f"if ({a} >= CO_AGENTS) {self.fail('not-agent', span)}")
        return a

    # ------------------------------------------------------------ places (slots)

    def place(self, e: ir.Expr, span: Span | None = None) -> tuple[str, Shape]:
        """The v[] index of a variable or array element, after the checks that reading it as
        an array base makes (``span`` overrides the Index's own span, as an assignment's
        target chain reports errors at the assignment)."""
        cm = self.cm
        if isinstance(e, ir.GVar):
            return f"{cm.line_base('line')}+{cm.gstart[e.name]}", cm.gshape[e.name]
        if isinstance(e, ir.MVar):
            if e.agent is None:
                return f"{cm.line_base('line')}+{cm.hstart[e.name]}", cm.hshape[e.name]
            a = self.agent(e.agent, e.span)
            return f"{cm.cache_block('line', a)}+{cm.cstart[e.name]}", cm.cshape[e.name]
        if isinstance(e, ir.Index):
            base, shape = self.place(e.base, span)
            at = span if span is not None else e.span
            assert shape.elem is not None
            b = self.let(base)
            if shape.flag:
                self.emit(f"if (!u->v[{b}]) {self.fail('undefined-array', at)}")
            i = self.ex(e.index)
            self.check(i, at)
            k = self.let(f"{i} - {shape.index_lo}")
            self.emit(f"if ({k} < 0 || {k} >= {shape.count}) {self.fail('index', at)}")
            return f"{b}+{int(shape.flag)}+{k}*{shape.elem.size}", shape.elem
        raise CodegenError(f"{e.span}: this expression is not a variable")

    def read(self, slot: str, shape: Shape) -> str:
        if shape.is_array:
            raise CodegenError(f"a whole array ({shape.type}) used as a value")
        if isinstance(shape.type, ir.StateT):
            return self.let(f"u->v[{slot}]")
        return self.let(f"CO_DEC(u->v[{slot}], {shape.lo})")

    # ------------------------------------------------------------ expressions

    def ex(self, e: ir.Expr) -> str:
        cm = self.cm
        if isinstance(e, ir.Lit):
            if isinstance(e.type, ir.ArrayT):
                raise CodegenError(f"{e.span}: an array literal used as a value")
            return "CO_UNDEF" if e.value is None else str(e.value)
        if isinstance(e, ir.Local):
            if isinstance(e.type, ir.ArrayT):
                raise CodegenError(f"{e.span}: a local array")
            return f"L_{e.name}"
        if isinstance(e, ir.SelfId):
            return "self"
        if isinstance(e, (ir.GVar, ir.MVar, ir.Index)):
            slot, shape = self.place(e)
            return self.read(slot, shape)
        if isinstance(e, ir.MState):
            if e.agent is None:
                if cm.home is None:
                    raise CodegenError(f"{e.span}: the spec has no home machine")
                return self.let(f"u->v[{cm.line_base('line')}+{cm.hstate}]")
            a = self.agent(e.agent, e.span)
            return self.let(f"u->v[{cm.cache_block('line', a)}]")
        if isinstance(e, ir.MsgField):
            if self.message is None:
                raise CodegenError(f"{e.span}: msg outside a message transition")
            msg = cm.model.messages[self.message]
            pos = [f.name for f in msg.fields].index(e.name)
            return f"mf[{pos}]"
        if isinstance(e, ir.MsgSrc):
            return "src"
        if isinstance(e, ir.Unary):
            a = self.ex(e.arg)
            self.check(a, e.span)
            return self.let(f"1 - {a}" if e.op == "!" else f"-{a}")
        if isinstance(e, ir.Binary):
            return self._binary(e)
        if isinstance(e, ir.SetLit):
            if not isinstance(e.type, ir.SetT):
                raise CodegenError(f"{e.span}: a set of {e.type} outside 'in'")
            m = self.let("0")
            for x in e.elems:
                v = self.ex(x)
                self.check(v, e.span)
                self.emit(f"{m} |= 1 << {v};")
            return m
        if isinstance(e, ir.Call):
            if e.func == "all_agents":
                return str((1 << cm.n) - 1)
            if e.func == "size":
                s = self.ex(e.args[0])
                self.check(s, e.span)
                return self.let(f"CO_POPCOUNT((unsigned){s})")
            arg = e.args[0]
            if isinstance(arg.type, ir.ArrayT):
                slot, shape = self.place(arg)
                if not shape.flag:
                    return "0"
                return self.let(f"u->v[{slot}] == 0")
            v = self.ex(arg)
            return self.let(f"{v} == CO_UNDEF")
        if isinstance(e, ir.Quant):
            forall = int(e.kind == "forall")
            r = self.let(str(forall))
            dom = ir.domain(e.var_type)
            scope = self.open_scope()
            self.open(f"for (int L_{e.var} = {dom.start}; L_{e.var} < {dom.stop}; "
                      f"L_{e.var}++)")
            self.instance(scope, lambda: (
                f"if (({self.ex(e.body)} != 0) != {forall}) "
                f"{{ {r} = {1 - forall}; {scope.rank} = CO_NO_ERROR; break; }}"))
            self.close()
            self.close_scope(scope)
            return r
        if isinstance(e, ir.Count):
            r = self.let("0")
            dom = ir.domain(e.var_type)
            scope = self.open_scope()
            self.open(f"for (int L_{e.var} = {dom.start}; L_{e.var} < {dom.stop}; "
                      f"L_{e.var}++)")
            self.instance(scope, lambda: f"if ({self.ex(e.body)} != 0) {r}++;")
            self.close()
            self.close_scope(scope)
            return r
        if isinstance(e, ir.InFlight):
            d = self.ex(e.dst) if e.dst is not None else None
            r = self.let("0")
            cond = f"{{m}}_dst == {d}" if d is not None else "1"
            self._messages(e.message, r, lambda pre: (
                f"if ({cond.format(m=pre)}) {{ {r} = 1; {pre}_stop = 1; }}"))
            return r
        if isinstance(e, ir.MsgQuant):
            # NOTE(message-count): ``count`` visits every message (duplicates included) and
            # adds one per true body, like ``ir.Count``: no instance decides it, so any
            # error in the body is raised (the least one) after the loop.
            count = e.kind == "count"
            forall = int(e.kind == "forall")
            r = self.let("0" if count else str(forall))
            scope = self.open_scope()

            def body(pre: str) -> str:
                def decide() -> str:
                    self.msgvars[e.var] = pre
                    b = self.ex(e.body)
                    del self.msgvars[e.var]
                    if count:
                        return f"if ({b} != 0) {r}++;"
                    return (f"if (({b} != 0) != {forall}) {{ {r} = {1 - forall}; "
                            f"{scope.rank} = CO_NO_ERROR; {pre}_stop = 1; }}")
                self.instance(scope, decide)
                return ""
            self._messages(e.message, r, body)
            self.close_scope(scope)
            return r
        if isinstance(e, ir.MsgVarAttr):
            pre = self.msgvars[e.var]
            if e.attr in ("src", "dst", ir.POSITION):  # NOTE(message-position): pos
                return f"{pre}_{e.attr}"
            t = cm.msg_index[e.message]
            info = cm.nets[cm.net_index[cm.model.messages[t].network]]
            pos = [f.name for f in cm.model.messages[t].fields].index(e.attr)
            shift, width, ft = info.lay.formats[t].fields[pos]
            lo = ft.lo if isinstance(ft, ir.IntT) else 0
            return self.let(f"CO_DEC((int)(({pre}_code >> {shift}) & {(1 << width) - 1}u), "
                            f"{lo})")
        if isinstance(e, ir.Cond):  # only the chosen branch runs, with its checks
            c = self.ex(e.cond)
            self.check(c, e.span)
            r = self.let("0")
            self.open(f"if ({c})")
            self.emit(f"{r} = {self.ex(e.then)};")
            self.close("} else {")
            self.ind += 1
            self.emit(f"{r} = {self.ex(e.orelse)};")
            self.close()
            return r
        raise CodegenError(f"cannot translate {type(e).__name__}")

    def _messages(self, message: str, result: str, body: Callable[[str], str]) -> None:
        """Runs ``body`` for each message of this type in flight on ``line``, in the
        semantics' listing order (unordered: sorted; fifo: by (src, dst), head first),
        with ``P_src``, ``P_dst``, ``P_code`` and ``P_pos`` (the slot of a fifo queue, 0 its
        head; -1 unordered: NOTE(message-position)) bound; it sets ``P_stop`` to end the loop."""
        cm = self.cm
        t = cm.msg_index[message]
        info = cm.nets[cm.net_index[cm.model.messages[t].network]]
        if info.net.ordering == "bus":
            return
        lay = info.lay
        tc = lay.formats[t].type_code
        pre = f"m{self.ntmp + 1}"
        self.ntmp += 1
        self.emit(f"int {pre}_stop = 0;")
        nb, low = lay.node_bits, lay.type_bits + lay.union_bits
        nmask = (1 << nb) - 1
        if info.net.ordering == "unordered":
            self.open(f"for (int k = 0; !{pre}_stop && k < {info.net.capacity}; k++)")
            self.emit(f"const uint64_t {pre}_code = u->r[{info.rbase} + k];")
            self.emit(f"if (!{pre}_code) break;")
            self.emit(f"if ((int)({pre}_code >> {low + 2 * nb}) != line || "
                      f"(int)(({pre}_code >> {lay.union_bits}) & {(1 << lay.type_bits) - 1}) "
                      f"!= {tc}) continue;")
            self.emit(f"const int {pre}_src = (int)(({pre}_code >> {low + nb}) & {nmask});")
            self.emit(f"const int {pre}_dst = (int)(({pre}_code >> {low}) & {nmask});")
            self.emit(f"const int {pre}_pos = -1; (void){pre}_pos;")
            if stmt := body(pre):
                self.emit(stmt)
            self.close()
            return
        for (line, src, dst), q in zip(lay.pairs, info.queues, strict=True):
            self.open(f"if (line == {line})")
            self.open(f"for (int k = 0; !{pre}_stop && k < {info.net.capacity}; k++)")
            self.emit(f"const uint64_t {pre}_code = u->r[{q} + k];")
            self.emit(f"if (!{pre}_code) break;")
            self.emit(f"if ((int)({pre}_code >> {lay.union_bits}) != {tc}) continue;")
            self.emit(f"const int {pre}_src = {src};")
            self.emit(f"const int {pre}_dst = {dst};")
            self.emit(f"const int {pre}_pos = k; (void){pre}_pos;")
            if stmt := body(pre):
                self.emit(stmt)
            self.close()
            self.close()

    def _binary(self, e: ir.Binary) -> str:
        op, span = e.op, e.span
        if op in ("&&", "||", "->"):
            a = self.ex(e.left)
            self.check(a, span)
            r = self.let("0")
            if op == "&&":
                self.open(f"if ({a})")
            elif op == "||":
                self.emit(f"if ({a}) {r} = 1;")
                self.open("else")
            else:
                self.emit(f"if (!{a}) {r} = 1;")
                self.open("else")
            b = self.ex(e.right)
            self.check(b, span)
            self.emit(f"{r} = {b} != 0;")
            self.close()
            return r
        if op == "in":
            if isinstance(e.right, ir.SetLit) and not isinstance(e.right.type, ir.SetT):
                a = self.ex(e.left)
                self.check(a, span)
                elems = [self.ex(x) for x in e.right.elems]
                if not elems:
                    return "0"
                return self.let(" || ".join(f"{a} == {x}" for x in elems))
            s = self.ex(e.right)
            self.check(s, span)
            a = self.ex(e.left)
            self.check(a, span)
            return self.let(f"({s} >> {a}) & 1")
        if op in ("with", "without"):
            s = self.ex(e.left)
            self.check(s, span)
            a = self.ex(e.right)
            self.check(a, span)
            return self.let(f"{s} | (1 << {a})" if op == "with" else f"{s} & ~(1 << {a})")
        if op in ("==", "!=") and isinstance(e.left.type, ir.ArrayT):
            return self._array_eq(e)
        a = self.ex(e.left)
        self.check(a, span)
        b = self.ex(e.right)
        self.check(b, span)
        return self.let(f"{a} {op} {b}")

    def _array_eq(self, e: ir.Binary) -> str:
        """Tuple equality of two arrays: their codes (flags included) are equal."""
        sa, shape = self.place(e.left)
        sa = self.let(sa)
        if shape.flag:
            self.emit(f"if (!u->v[{sa}]) {self.fail('undefined', e.span)}")
        sb, _ = self.place(e.right)
        sb = self.let(sb)
        if shape.flag:
            self.emit(f"if (!u->v[{sb}]) {self.fail('undefined', e.span)}")
        r = self.let("1")
        self.emit(f"for (int k = 0; k < {shape.size}; k++) "
                  f"if (u->v[{sa} + k] != u->v[{sb} + k]) {{ {r} = 0; break; }}")
        return self.let(f"{r}" if e.op == "==" else f"!{r}")

    # ------------------------------------------------------------ statements

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: ir.Stmt) -> None:
        cm = self.cm
        if isinstance(s, ir.Assign):
            self._assign(s)
        elif isinstance(s, ir.If):
            c = self.ex(s.cond)
            self.check(c, s.span)
            self.open(f"if ({c})")
            self.block(s.then)
            if s.orelse:
                self.close("} else {")
                self.ind += 1
                self.block(s.orelse)
            self.close()
        elif isinstance(s, ir.For):
            dom = ir.domain(s.var_type)
            self.open(f"for (int L_{s.var} = {dom.start}; L_{s.var} < {dom.stop}; L_{s.var}++)")
            self.block(s.body)
            self.close()
        elif isinstance(s, ir.Let):
            if isinstance(s.value.type, ir.ArrayT):
                raise CodegenError(f"{s.span}: let of a whole array")
            v = self.ex(s.value)
            self.emit(f"const int L_{s.var} = {v};")
        elif isinstance(s, ir.Send):
            d = self.ex(s.dst)
            self.emit(f"if ({d} == CO_UNDEF) {self.fail('undefined-dst', s.span)}")
            args = [self.ex(a) for a in s.args]
            self._deliver(cm.msg_index[s.message], args, d, s.span)
        elif isinstance(s, ir.Broadcast):
            args = [self.ex(a) for a in s.args]
            skip = self.ex(s.exclude) if s.exclude is not None else "-1"
            b = self.tmp()
            self.open(f"for (int {b} = 0; {b} < CO_AGENTS; {b}++)")
            self.emit(f"if ({b} == {skip}) continue;")
            self._deliver(cm.msg_index[s.message], args, b, s.span)
            self.close()
        elif isinstance(s, ir.Goto):
            assert self.machine is not None
            self.emit(f"gt = {self.machine.state_index(s.state)};")
        elif isinstance(s, ir.Perform):
            v = self.ex(s.value)
            self.check(v, s.span)
            a = self.agent(s.agent, s.span)
            if cm.monitor:
                self.emit(f"co_mon_{s.kind}(u, line, {a}, {v});")
        elif isinstance(s, ir.Assert):
            c = self.ex(s.cond)
            self.check(c, s.span)
            self.emit(f"if (!{c}) {self.fail('assert', s.span)}")
        else:  # pragma: no cover
            raise CodegenError(f"cannot translate {type(s).__name__}")

    def _range_check(self, v: str, t: ir.Type, span: Span) -> None:
        rng: tuple[int, int] | None = None
        if isinstance(t, ir.IntT):
            rng = (t.lo, t.hi)
        elif isinstance(t, (ir.ValueT, ir.AgentT, ir.EnumT)):
            rng = (0, t.size() - 1)
        elif isinstance(t, ir.NodeT):
            rng = (0, t.n)
        if rng is not None:
            self.emit(f"if ({v} != CO_UNDEF && ({v} < {rng[0]} || {v} > {rng[1]})) "
                      f"{self.fail('range', span)}")

    def _assign(self, s: ir.Assign) -> None:
        target, span = s.target, s.span
        t = target.type
        if isinstance(t, ir.ArrayT):
            self._assign_array(s)
            return
        if isinstance(target, ir.Index):
            slot, shape = self.place(target, span)
            slot = self.let(slot)
            v = self.ex(s.value)
            self._range_check(v, t, span)
        else:
            v = self.ex(s.value)
            self._range_check(v, t, span)
            slot, shape = self._variable_slot(target, span)
        self.emit(f"co_setv(u, {slot}, (unsigned)CO_ENC({v}, {shape.lo}));")

    def _variable_slot(self, target: ir.Expr, span: Span) -> tuple[str, Shape]:
        """The first slot and shape of a whole variable: a cache's (its agent evaluated
        here, with its errors) or a global's or the home's."""
        if isinstance(target, ir.MVar) and target.agent is not None:
            a = self.agent(target.agent, span)
            return (f"{self.cm.cache_block('line', a)}+{self.cm.cstart[target.name]}",
                    self.cm.cshape[target.name])
        return self.place(target)

    def _assign_array(self, s: ir.Assign) -> None:
        """A whole array: ``undefine a`` (flag and elements 0) or a copy of another array
        (the codes, flags included, are the tuple's)."""
        target, span = s.target, s.span
        size = self.cm.size_of(target.type)
        if isinstance(target, ir.Index):  # the target chain is checked before the value
            slot, shape = self.place(target, span)
            d = self.let(slot)
        src = self._array_value(s)
        if not isinstance(target, ir.Index):
            slot, shape = self._variable_slot(target, span)
            d = self.let(slot)
        if src is None:
            if not shape.flag:
                raise CodegenError(f"{span}: internal: an undefined array without a flag")
            self.emit(f"for (int k = 0; k < {size}; k++) co_setv(u, {d} + k, 0);")
        else:
            self.emit(f"for (int k = 0; k < {size}; k++) co_setv(u, {d} + k, {src}[k]);")

    def _array_value(self, s: ir.Assign) -> str | None:
        if isinstance(s.value, ir.Lit) and s.value.value is None:
            return None
        if not isinstance(s.value, (ir.GVar, ir.MVar, ir.Index)):
            raise CodegenError(f"{s.span}: an array assigned from an expression")
        size = self.cm.size_of(s.value.type)
        sslot, _ = self.place(s.value)
        src = self.tmp()
        self.emit(f"CO_VT {src}[{size}];")
        self.emit(f"for (int k = 0; k < {size}; k++) {src}[k] = u->v[{sslot} + k];")
        return src

    def _deliver(self, t: int, args: list[str], dst: str, span: Span) -> None:
        """``Semantics.deliver``: onto the network, or (bus) into the receiver's handler."""
        cm = self.cm
        message = cm.model.messages[t]
        for f, a in zip(message.fields, args, strict=True):  # fields are range-checked
            self._range_check(a, f.type, span)
        info = cm.nets[cm.net_index[message.network]]
        src = "self"
        if info.net.ordering == "bus":
            if self.depth > BUS_NESTING_LIMIT:  # NOTE(bus-nesting)
                self.emit(self.fail("bus-nesting", span))
                return
            assert self.bus is not None
            fn = self.bus(t, self.depth + 1)
            fv = self.tmp()
            vals = ", ".join(args) if args else "0"
            self.emit(f"const int {fv}[{max(1, len(args))}] = {{{vals}}};")
            kb = cm.key(("error", "no-machine", str(span)))
            for i, code in enumerate(("bus-no-transition", "bus-stall", "bus-ambiguous")):
                if cm.key(("error", code, str(span))) != kb + 1 + i:  # co_bus_* adds 1..3
                    raise CodegenError(f"{span}: internal: bus error keys not consecutive")
            r = self.tmp()
            self.emit(f"int {r} = {fn}(u, line, {src}, {dst}, {fv}, {kb});")
            self.emit(f"if ({r}) return {r};")
            return
        lay = info.lay
        fmt = lay.formats[t]
        code = f"((uint64_t){fmt.type_code} << {lay.union_bits})"
        for (shift, _w, ft), a in zip(fmt.fields, args, strict=True):
            lo = ft.lo if isinstance(ft, ir.IntT) else 0
            code += f" | ((uint64_t)CO_ENC({a}, {lo}) << {shift})"
        r = self.tmp()
        if info.net.ordering == "unordered":
            nb = lay.node_bits
            head = f"((uint64_t)((((line) << {nb}) | {src}) << {nb} | ({dst})))"
            self.emit(f"int {r} = co_send_{info.index}(u, ({head} << "
                      f"{lay.type_bits + lay.union_bits}) | {code});")
        else:
            kq = cm.key(("error", "no-queue", str(span)))
            self.emit(f"int {r} = co_send_{info.index}(u, line, {src}, {dst}, {code}, {kq});")
        self.emit(f"if ({r}) return {r};")
