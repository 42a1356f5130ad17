"""The symmetry of a hierarchical spec in C (``co_permute``, ``co_canonicalize``).

NOTE(compiled-hierarchy-symmetry): the group is ``coherence.symmetry``'s
(NOTE(hierarchy-symmetry)): one permutation of the ids of each index type within each tuple
of enclosing ids (a *factor*: ``gpu`` once, ``sm`` once per gpu), GPUs moving with their SMs.
An element is held in one int array ``e``: ``e[0 .. CO_NODES)`` the node permutation
(``sigma``), then the processors' permutation (the monitor entries), then each factor's
permutation in ``factors`` order (parents first, enclosing ids in lexicographic order: the
Python ``HierarchySymmetry.factors``). ``co_hexpand`` derives the first two from the factors:
``L1[g, s]`` goes to ``L1[pi(g), pi_g(s)]``.

``co_perm_u`` is ``HierarchySymmetry.permute`` on the unpacked state: each node's block
moves to ``sigma(node)`` with its node-typed values renamed by ``sigma`` and its index-typed
values (and sets and arrays over index types) by the factor of the enclosing ids *of the
node that holds them* (``co_ctx``); message endpoints and fields, FIFO queues and monitor
entries are moved likewise and the unordered multisets re-sorted.

``co_canonicalize`` is the least image (in ``co_ucmp``'s total order) over a candidate set
of elements: per factor, the permutations that sort its ids by a signature (``co_hsigs``:
the sum of a hash of the plain content, control state and variables of no symmetric type, of
every node that has that id there, so GPU ``g``'s signature covers ``L2[g]`` and every
``L1[g, s]``), in every order within ties. The candidate set is equivariant (a node's hash
moves with it, so the signatures of ``pi(s)`` are those of ``s`` permuted, and the
candidates of ``pi(s)`` are those of ``s`` composed with ``pi^-1``), so the least image is
one state per orbit: exact, as the Python canonicaliser is (its representative is the least
image over the whole group in another order; the orbits, hence the counts, are the same).
A tie group whose adjacent transpositions all fix the state is not enumerated (as in
``csym.py``). Against enumerating the whole group: the same counts, 1.3-2.3x faster at 2
GPUs of 2 SMs (gpu_two_level, hmg, compiled_constructs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coherence import ir
from coherence.engines.cgen.cmodel import CodegenError, Shape

if TYPE_CHECKING:
    from coherence.engines.cgen.chier import HierCModel


def factors(model: ir.Model) -> list[tuple[str, tuple[int, ...]]]:
    """The group's factors, in ``HierarchySymmetry``'s order: (index type, enclosing ids)."""
    types = {t.name: t for t in model.indexes}
    out: list[tuple[str, tuple[int, ...]]] = []
    for t in model.indexes:
        paths: list[tuple[int, ...]] = [()]
        for a in ancestors(types, t.name):
            paths = [(*p, v) for p in paths for v in range(types[a].n)]
        out += [(t.name, p) for p in paths]
    return out


def ancestors(types: dict[str, ir.IndexT], name: str) -> list[str]:
    """The enclosing index types of ``name``, outermost first."""
    out: list[str] = []
    parent = types[name].parent
    while parent is not None:
        out.insert(0, parent)
        parent = types[parent].parent
    return out


class _Sym:
    def __init__(self, cm: HierCModel) -> None:
        self.cm = cm
        model = cm.model
        self.types = {t.name: t for t in model.indexes}
        self.factors = factors(model)
        self.base = len(cm.insts) + cm.n  # the factors' first slot in e[]
        self.fo: dict[tuple[str, tuple[int, ...]], int] = {}
        off = self.base
        for f in self.factors:
            self.fo[f] = off
            off += self.types[f[0]].n
        self.ne = off
        # per node, per index type: the offset of the factor that renames its values there
        self.ctx: list[list[int]] = []
        for inst in cm.insts:
            mine = cm.node_index[inst.node]
            row = []
            for t in model.indexes:
                anc = ancestors(self.types, t.name)
                if all(a in mine for a in anc):
                    row.append(self.fo[(t.name, tuple(mine[a] for a in anc))])
                else:
                    row.append(-1)
            self.ctx.append(row)
        self.tpos = {t.name: i for i, t in enumerate(model.indexes)}
        self.nt = max(1, len(model.indexes))
        self.out: list[str] = []
        self.nvar = 0

    # ------------------------------------------------------------ renaming values

    def factor(self, t: ir.IndexT, node: str | None) -> str:
        """The C offset in ``e`` of the permutation renaming ``t`` values held by ``node``
        (None: held by no node, a global or a message field)."""
        if node is None:
            if t.parent is not None:
                raise CodegenError(f"internal: a {t.name} value outside a machine instance")
            return str(self.fo[(t.name, ())])
        return f"co_ctx[({node}) * {self.nt} + {self.tpos[t.name]}]"

    def ren(self, t: ir.Type, c: str, node: str | None) -> str:
        """The renamed code (codes are value + 1, 0 undefined) of a value of type ``t``."""
        if isinstance(t, ir.HNodeT):
            return f"({c} ? e[{c} - 1] + 1 : 0)"
        if isinstance(t, ir.IndexT):
            return f"({c} ? e[{self.factor(t, node)} + {c} - 1] + 1 : 0)"
        if isinstance(t, ir.SetT) and isinstance(t.elem, ir.IndexT):
            return (f"({c} ? (int)co_hpmask((unsigned)({c} - 1), e + {self.factor(t.elem, node)}, "
                    f"{t.elem.n}) + 1 : 0)")
        if ir.is_symmetric(t):
            raise CodegenError(f"internal: renaming a {t} in a hierarchical spec")
        return c

    def map_var(self, shape: Shape, src: str, dst: str, node: str | None, ind: str) -> None:
        """One variable from ``u->v[src..]`` to ``o->v[dst..]``, renamed."""
        if not shape.is_array:
            if ir.is_symmetric(shape.type):
                self.out.append(f"{ind}{{ const int c = u->v[{src}]; "
                                f"o->v[{dst}] = (CO_VT){self.ren(shape.type, 'c', node)}; }}")
            else:
                self.out.append(f"{ind}o->v[{dst}] = u->v[{src}];")
            return
        assert shape.elem is not None and isinstance(shape.type, ir.ArrayT)
        f = int(shape.flag)
        if shape.flag:
            self.out.append(f"{ind}o->v[{dst}] = u->v[{src}];")
        es = shape.elem.size
        self.nvar += 1
        i = f"i{self.nvar}"
        index = shape.type.index
        if isinstance(index, ir.HNodeT):
            to = f"e[{i}]"
        elif isinstance(index, ir.IndexT):
            to = f"e[{self.factor(index, node)} + {i}]"
        else:
            to = i
        self.out.append(f"{ind}for (int {i} = 0; {i} < {shape.count}; {i}++) {{")
        if ir.is_symmetric(shape.type.elem):
            self.map_var(shape.elem, f"{src}+{f}+{i}*{es}", f"{dst}+{f}+({to})*{es}", node,
                         ind + "    ")
        else:
            self.out.append(f"{ind}    for (int k = 0; k < {es}; k++) o->v[{dst}+{f}+({to})*{es} "
                            f"+ k] = u->v[{src}+{f}+{i}*{es} + k];")
        self.out.append(f"{ind}}}")

    def field_renamer(self, net_i: int) -> str:
        """``co_hren_N(code, e)``: a ``type + 1 | fields`` code with its fields renamed."""
        lay = self.cm.nets[net_i].lay
        lines = [f"CO_FN uint64_t co_hren_{net_i}(uint64_t code, const int *e) {{",
                 "    (void)e;", f"    switch ((int)(code >> {lay.union_bits})) {{"]
        for fmt in lay.formats.values():
            sym = [(sh, w, ft) for sh, w, ft in fmt.fields if ir.is_symmetric(ft)]
            if not sym:
                continue
            lines.append(f"    case {fmt.type_code}: {{")
            for sh, w, ft in sym:
                mask = (1 << w) - 1
                lines.append(f"        {{ const int c = (int)((code >> {sh}) & 0x{mask:x}u); "
                             f"code = (code & ~((uint64_t)0x{mask:x}u << {sh})) | "
                             f"((uint64_t){self.ren(ft, 'c', None)} << {sh}); }}")
            lines += ["        break;", "    }"]
        lines += ["    default: break;", "    }", "    return code;", "}", ""]
        return "\n".join(lines)

    # ------------------------------------------------------------ functions

    def tables(self) -> str:
        cm = self.cm
        ctx = ", ".join(str(x) for row in self.ctx for x in row)
        out = [f"#define CO_NE {self.ne}", f"#define CO_NF {len(self.factors)}",
               f"CO_CONST int co_ctx[{len(cm.insts) * self.nt}] = {{{ctx}}};"]
        fb = ", ".join(str(self.fo[f]) for f in self.factors) or "0"
        fl = ", ".join(str(self.types[f[0]].n) for f in self.factors) or "0"
        out.append(f"CO_CONST int co_fbase[{max(1, len(self.factors))}] = {{{fb}}};")
        out.append(f"CO_CONST int co_flen[{max(1, len(self.factors))}] = {{{fl}}};")
        procs = [i.node for i in cm.insts if i.node in cm.proc_of]
        out.append(f"CO_CONST int co_procnode[{max(1, len(procs))}] = "
                   f"{{{', '.join(map(str, procs)) or '0'}}};")
        return "\n".join(out) + "\n"

    def expand(self) -> str:
        """``co_hexpand``: sigma and the processors' permutation from the factors."""
        cm = self.cm
        lines = ["CO_FN void co_hexpand(int *e) {"]
        for inst in cm.insts:
            b = cm.blocks[inst.machine]
            if not inst.values:
                lines.append(f"    e[{inst.node}] = {inst.node};")
                continue
            terms = []
            radix = 1
            for f, v, size in reversed(list(zip(b.machine.indices, inst.values, b.sizes,
                                                strict=True))):
                assert isinstance(f.type, ir.IndexT)
                at = self.ctx[inst.node][self.tpos[f.type.name]]
                terms.append(f"e[{at + v}]" + (f" * {radix}" if radix != 1 else ""))
                radix *= size
            lines.append(f"    e[{inst.node}] = {b.first} + {' + '.join(reversed(terms))};")
        if cm.n:
            lines.append(f"    for (int p = 0; p < {cm.n}; p++) e[{len(cm.insts)} + p] = "
                         "co_proc[e[co_procnode[p]]];")
        lines += ["}", ""]
        return "\n".join(lines)

    def signatures(self) -> str:
        """``co_hsigs``: per factor and id, the sum of a hash of what no renaming changes in
        each node that has that id there (its control state and variables of no symmetric
        type): a node's hash moves with it, so the signatures of an image are the
        original's, permuted (the candidates are equivariant)."""
        cm = self.cm
        lines = ["CO_FN uint64_t co_hmix(uint64_t x) {",
                 "    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;",
                 "    x ^= x >> 27; x *= 0x94d049bb133111ebull;",
                 "    return x ^ (x >> 31);", "}",
                 "CO_FN void co_hsigs(const co_u *u, uint64_t *sig) {",
                 f"    for (int k = 0; k < {max(1, self.ne - self.base)}; k++) sig[k] = 0;",
                 "    for (int line = 0; line < CO_LINES; line++) {"]
        for b in cm.blocks.values():
            if not b.machine.indices:
                continue
            plain = [0] + [k for v in b.machine.vars if not ir.is_symmetric(v.type)
                           for k in range(b.vstart[v.name],
                                          b.vstart[v.name] + b.vshape[v.name].size)]
            lines.append(f"        for (int nd = {b.first}; nd < {b.first + b.count}; nd++) {{")
            lines.append(f"            const int sb = {cm.node_block(b, 'line', 'nd')};")
            lines.append("            uint64_t h = 0x9e3779b97f4a7c15ull + (uint64_t)line;")
            for off in plain:
                lines.append(f"            h = co_hmix(h ^ u->v[sb + {off}]);")
            lines.append(f"            for (int t = 0; t < {self.nt}; t++) {{")
            lines.append(f"                const int f = co_ctx[nd * {self.nt} + t], "
                         f"i = co_nidx[nd * {self.nt} + t];")
            lines.append(f"                if (f >= 0 && i >= 0) sig[f - {self.base} + i] += "
                         "co_hmix(h ^ (uint64_t)t);")
            lines.append("            }")
            lines.append("        }")
        lines += ["    }", "}", ""]
        return "\n".join(lines)

    def permute(self) -> str:
        cm = self.cm
        self.out = ["CO_FN void co_perm_u(const co_u *u, const int *e, co_u *o) {",
                    "    *o = *u;", "    for (int line = 0; line < CO_LINES; line++) {"]
        body = self.out
        lb = cm.line_base("line")
        for v in cm.model.globals:
            if ir.is_symmetric(v.type):
                at = f"{lb}+{cm.gstart[v.name]}"
                self.map_var(cm.gshape[v.name], at, at, None, "        ")
        for b in cm.blocks.values():
            if b.count == 1 and not any(ir.is_symmetric(v.type) for v in b.machine.vars):
                continue  # a single instance (Mem) with nothing to rename stays put
            body.append(f"        for (int nd = {b.first}; nd < {b.first + b.count}; nd++) {{")
            body.append(f"            const int sb = {cm.node_block(b, 'line', 'nd')}, "
                        f"db = {cm.node_block(b, 'line', 'e[nd]')};")
            body.append("            o->v[db] = u->v[sb];")
            for v in b.machine.vars:
                sh = b.vshape[v.name]
                off = b.vstart[v.name]
                if ir.is_symmetric(v.type):
                    self.map_var(sh, f"sb+{off}", f"db+{off}", "nd", "            ")
                else:
                    body.append(f"            for (int k = 0; k < {sh.size}; k++) "
                                f"o->v[db+{off} + k] = u->v[sb+{off} + k];")
            body.append("        }")
        if cm.monitor:
            pb = len(cm.insts)
            body.append("        for (int a = 0; a < CO_AGENTS; a++)")
            body.append(f"            for (int k = 0; k < {cm.mon_stride}; k++) "
                        f"o->v[{cm.mon_block('line', f'e[{pb} + a]')} + k] = "
                        f"u->v[{cm.mon_block('line', 'a')} + k];")
        body.append("    }")
        for info in cm.nets:
            lay = info.lay
            if info.net.ordering == "unordered":
                nb, low = lay.node_bits, lay.type_bits + lay.union_bits
                nm = (1 << nb) - 1
                rb = info.rbase
                body += [
                    "    {",
                    f"        const int c = u->uc[{info.uc}];",
                    "        for (int k = 0; k < c; k++) {",
                    f"            const uint64_t rec = u->r[{rb} + k];",
                    f"            const int s = e[(int)((rec >> {low + nb}) & {nm})], "
                    f"d = e[(int)((rec >> {low}) & {nm})];",
                    f"            const uint64_t head = ((rec >> {low + 2 * nb}) << {2 * nb}) | "
                    f"((uint64_t)s << {nb}) | (uint64_t)d;",
                    f"            const uint64_t nr = (head << {low}) | "
                    f"co_hren_{info.index}(rec & 0x{(1 << low) - 1:x}u, e);",
                    "            int i = k;",
                    f"            while (i > 0 && o->r[{rb} + i - 1] > nr) {{ o->r[{rb} + i] = "
                    f"o->r[{rb} + i - 1]; i--; }}",
                    f"            o->r[{rb} + i] = (CO_RT)nr;",
                    "        }",
                    "    }"]
            elif info.net.ordering == "fifo":
                cap = info.net.capacity
                nn = cm.nodes
                for q in info.queues:
                    body.append(f"    for (int k = 0; k < {cap}; k++) o->r[{q} + k] = 0;")
                for (line, src, dst), q in zip(lay.pairs, info.queues, strict=True):
                    body += [
                        f"    if (u->r[{q}]) {{",
                        f"        const int q = co_fifo_{info.index}[({line} * {nn} + e[{src}]) "
                        f"* {nn} + e[{dst}]];",
                        f"        for (int k = 0; k < {cap} && u->r[{q} + k]; k++) "
                        f"o->r[q + k] = (CO_RT)co_hren_{info.index}(u->r[{q} + k], e);",
                        "    }"]
        body += ["    o->coh = 0;", "}", ""]
        return "\n".join(body)


HEAD = """CO_FN unsigned co_hpmask(unsigned m, const int *p, int n) {
    unsigned r = 0;
    for (int a = 0; a < n; a++) if ((m >> a) & 1u) r |= 1u << p[a];
    return r | (m & ~((1u << n) - 1u));
}
/* A total order on unpacked states (the multisets are sorted, so equal states compare 0). */
CO_FN int co_ucmp(const co_u *a, const co_u *b) {
    for (int k = 0; k < CO_NV; k++) if (a->v[k] != b->v[k]) return a->v[k] < b->v[k] ? -1 : 1;
    for (int k = 0; k < CO_NR; k++) if (a->r[k] != b->r[k]) return a->r[k] < b->r[k] ? -1 : 1;
    return 0;
}
/* The next order of seq[b .. b+l) (lexicographic); 0 when it wrapped to ascending. */
CO_FN int co_next_perm(int *seq, int b, int l) {
    int i = b + l - 2;
    while (i >= b && seq[i] > seq[i + 1]) i--;
    if (i < b) {
        for (int x = b, y = b + l - 1; x < y; x++, y--) {
            int t = seq[x]; seq[x] = seq[y]; seq[y] = t;
        }
        return 0;
    }
    int j = b + l - 1;
    while (seq[j] < seq[i]) j--;
    { int t = seq[i]; seq[i] = seq[j]; seq[j] = t; }
    for (int x = i + 1, y = b + l - 1; x < y; x++, y--) {
        int t = seq[x]; seq[x] = seq[y]; seq[y] = t;
    }
    return 1;
}
"""

TAIL = """/* perm: every factor's permutation, concatenated in factor order (the module doc). */
CO_FN void co_permute(const co_state *s, const int *perm, co_state *out) {
    int e[CO_NE];
    for (int k = CO_NODES + CO_AGENTS; k < CO_NE; k++) e[k] = perm[k - CO_NODES - CO_AGENTS];
    co_hexpand(e);
    co_u u, o;
    co_unpack(s, &u);
    co_perm_u(&u, e, &o);
    co_pack(&o, out);
}
/* The least image over the candidates: per factor, the permutations that sort its ids by
 * signature (co_hsigs), every order within ties; a tie group whose adjacent transpositions
 * all fix the state is not enumerated (they generate its whole symmetric group, which then
 * fixes the state: every order gives the same images). Exact: the module doc. */
CO_FN void co_canonicalize(co_state *s) {
    enum { B = CO_NODES + CO_AGENTS, NI = CO_NE - B > 0 ? CO_NE - B : 1 };
    int e[CO_NE], seq[NI], gb[NI], gl[NI], ng = 0;
    uint64_t sig[NI];
    co_u u, t, best;
    co_unpack(s, &u);
    co_hsigs(&u, sig);
    for (int f = 0; f < CO_NF; f++) {
        const int o = co_fbase[f] - B, n = co_flen[f];
        for (int a = 0; a < n; a++) {
            int i = a;
            while (i > 0 && sig[o + seq[o + i - 1]] > sig[o + a]) {
                seq[o + i] = seq[o + i - 1];
                i--;
            }
            seq[o + i] = a;
        }
        for (int i = 0; i < n;) {
            int j = i + 1;
            while (j < n && sig[o + seq[o + j]] == sig[o + seq[o + i]]) j++;
            if (j - i > 1) {
                int fixed = 1;
                for (int k = i; k + 1 < j && fixed; k++) {
                    for (int g = 0; g < CO_NF; g++)
                        for (int x = 0; x < co_flen[g]; x++) e[co_fbase[g] + x] = x;
                    e[co_fbase[f] + seq[o + k]] = seq[o + k + 1];
                    e[co_fbase[f] + seq[o + k + 1]] = seq[o + k];
                    co_hexpand(e);
                    co_perm_u(&u, e, &t);
                    if (co_ucmp(&t, &u) != 0) fixed = 0;
                }
                if (!fixed) { gb[ng] = o + i; gl[ng] = j - i; ng++; }
            }
            i = j;
        }
    }
    for (int f = 0; f < CO_NF; f++)
        for (int k = 0; k < co_flen[f]; k++) e[co_fbase[f] + seq[co_fbase[f] - B + k]] = k;
    co_hexpand(e);
    co_perm_u(&u, e, &best);
    for (;;) {
        int g = 0;
        while (g < ng && !co_next_perm(seq, gb[g], gl[g])) g++;
        if (g == ng) break;
        for (int f = 0; f < CO_NF; f++)
            for (int k = 0; k < co_flen[f]; k++) e[co_fbase[f] + seq[co_fbase[f] - B + k]] = k;
        co_hexpand(e);
        co_perm_u(&u, e, &t);
        if (co_ucmp(&t, &best) < 0) best = t;
    }
    co_pack(&best, s);
}
"""


def hier_symmetry_source(cm: HierCModel) -> str:
    sym = _Sym(cm)
    parts = [HEAD, sym.tables(), sym.expand()]
    for info in cm.nets:
        if info.net.ordering != "bus":
            parts.append(sym.field_renamer(info.index))
    parts.append(sym.permute())
    parts.append(sym.signatures())
    parts.append(TAIL)
    return "\n".join(parts)


def element_perm(model: ir.Model, perms: dict[tuple[str, tuple[int, ...]], tuple[int, ...]]
                 ) -> list[int]:
    """``co_permute``'s ``perm`` argument for a group element given per factor (tests)."""
    return [x for f in factors(model) for x in perms[f]]


__all__ = ["element_perm", "factors", "hier_symmetry_source"]
