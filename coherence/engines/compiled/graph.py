"""The compiled engine's liveness graph (issue 16): the generated C search keeps every edge.

The model is generated with ``liveness=True`` (NOTE(compiled-liveness) in
``coherence.engines.cgen.clive``: each action names its fairness task, and each liveness
predicate is C), and the runtime, with ``co_options.graph``, logs each stored edge per thread
and builds compressed rows after the search (``co_graph_*`` in ``co_runtime.c``). What comes
back is ``coherence.liveness.built.Built``, the representation the reference engine's graph
has, so the checks in ``coherence.liveness.check`` are the same code for both. The search's
storage is kept until the checks are done (its states are read for the counterexamples),
then freed.
"""

from __future__ import annotations

import ctypes
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from coherence import ir
from coherence.engines.compiled.build import build as build_library
from coherence.engines.compiled.engine import Library, run_search
from coherence.layout import Layout
from coherence.liveness import reference
from coherence.liveness.built import Built, Instance, instances
from coherence.liveness.graph import Graph, Reverse
from coherence.results import CheckOptions


def _buffer(a: array, ctype: Any) -> Any:
    return (ctype * len(a)).from_buffer(a)


def _zeros(code: str, n: int) -> array:
    """An array of ``max(n, 1)`` zeros (ctypes cannot view an empty buffer); the caller
    trims it."""
    return array(code, bytes(array(code).itemsize * max(n, 1)))


@contextmanager
def build(model: ir.Model, layout: Layout, insts: list[Instance], options: CheckOptions,
          start: float) -> Iterator[Built]:
    from coherence.engines.cgen.codegen import CodegenError, generate

    try:
        generated = generate(model, layout, liveness=True)
    except CodegenError as err:  # the oracle builds it, and the report says so
        with reference.build(model, layout, insts, options, start) as built:
            built.engine = f"reference (the compiled engine cannot translate this model: {err})"
            yield built
        return
    path, _cached = build_library(generated.source)
    lib = Library.load(path)
    if lib.words != layout.words or lib.bits != layout.bits:
        raise RuntimeError(f"generated code packs {lib.bits} bits in {lib.words} words, "
                           f"the layout {layout.bits} in {layout.words}")
    total = len(instances(model))
    if lib.lib.co_live_instances() != total:
        raise RuntimeError(f"the library evaluates {lib.lib.co_live_instances()} liveness "
                           f"instances, the model has {total}")
    # NOTE(liveness-symmetry) in coherence.liveness.check: every state, no symmetry
    opts = attrs.evolve(options, symmetry=False, deadlock=False, stop_at_first=False,
                        max_depth=None)
    with lib.lock:
        try:
            stopped, _seconds, _threads = run_search(lib, opts, graph=True)
            yield _collect(lib, layout, insts, total, stopped)
        finally:
            lib.lib.co_free()


def _collect(lib: Library, layout: Layout, insts: list[Instance], total: int,
             stopped: str | None) -> Built:
    n, edges, tasks = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
    if stopped is not None:
        # a partial graph proves nothing: the counts only
        p = lib.progress()
        return Built(Graph(array("q", [0]), array("i"), array("i")), array("i"),
                     _no_state, {}, stopped, [], "compiled", states=int(p.states))
    if lib.lib.co_graph_sizes(ctypes.byref(n), ctypes.byref(edges), ctypes.byref(tasks)) != 0:
        raise MemoryError("the compiled engine could not merge its liveness graph")
    ns, ne, nt = n.value, edges.value, tasks.value
    first, dst, task = _zeros("q", ns + 1), _zeros("i", ne), _zeros("i", ne)
    if lib.lib.co_graph_fill(_buffer(first, ctypes.c_int64), _buffer(dst, ctypes.c_int32),
                             _buffer(task, ctypes.c_int32)) != 0:
        raise MemoryError("the compiled engine could not build its liveness graph")
    del dst[ne:], task[ne:]
    hi, lo, strong = _zeros("Q", nt), _zeros("Q", nt), _zeros("B", nt)
    lib.lib.co_graph_tasks(_buffer(hi, ctypes.c_uint64), _buffer(lo, ctypes.c_uint64),
                           _buffer(strong, ctypes.c_uint8))
    parent = _zeros("i", ns)
    lib.lib.co_parents(_buffer(parent, ctypes.c_int32))
    del parent[ns:]
    # only the instances asked for are evaluated (the others are decided by symmetry)
    k = len(insts)
    slot = array("i", [-1]) * max(1, total)
    for j, inst in enumerate(insts):
        slot[inst.index] = j
    goal, premise = bytearray(max(1, k * ns)), bytearray(max(1, k * ns))
    err = _zeros("q", total)
    lib.lib.co_live_table(_buffer(slot, ctypes.c_int32),
                          (ctypes.c_uint8 * len(goal)).from_buffer(goal),
                          (ctypes.c_uint8 * len(premise)).from_buffer(premise),
                          _buffer(err, ctypes.c_int64))
    errors: dict[str, int] = {}
    for j, inst in enumerate(insts):
        inst.goal = goal[j * ns:(j + 1) * ns]
        inst.premise = premise[j * ns:(j + 1) * ns]
        if err[inst.index] >= 0:
            name = inst.prop.name
            errors[name] = min(errors.get(name, err[inst.index]), err[inst.index])
    words = lib.words

    def state(i: int) -> int:
        buf = (ctypes.c_uint64 * words)()
        if lib.lib.co_state_at(i, buf) != 0:
            raise IndexError(f"no state {i}")
        return layout.from_bytes(bytes(buf))

    keys = [(hi[i], lo[i]) for i in range(nt)]
    graph = Graph(first, dst, task, {i for i in range(nt) if strong[i]})
    return Built(graph, parent, state, errors, None, keys, "compiled",
                 algorithms=CAlgorithms(lib, bytearray(strong[:nt])))


class CAlgorithms:
    """``coherence.liveness.graph.Algorithms`` in the runtime's C (``co_alg_*``), on the
    graph's own buffers."""

    parallel = True

    def __init__(self, lib: Library, strong: bytearray) -> None:
        self.lib = lib.lib
        self.strong = strong or bytearray(1)

    def reverse(self, g: Graph) -> Reverse:
        n, ne = g.n, len(g.dst)
        rfirst, rsrc = _zeros("q", n + 1), _zeros("i", ne)
        self.lib.co_alg_reverse(n, _buffer(g.first, ctypes.c_int64), _ptr(g.dst, ctypes.c_int32),
                                _buffer(rfirst, ctypes.c_int64), _buffer(rsrc, ctypes.c_int32))
        del rsrc[ne:]
        return Reverse(rfirst, rsrc)

    def backward_reachable(self, rev: Reverse, targets: bytearray,
                           allowed: bytearray | None = None) -> bytearray:
        n = len(rev.first) - 1
        seen = bytearray(max(n, 1))
        if self.lib.co_alg_backward(n, _buffer(rev.first, ctypes.c_int64),
                                    _ptr(rev.src, ctypes.c_int32), _bytes(targets),
                                    None if allowed is None else _bytes(allowed),
                                    _bytes(seen)) != 0:
            raise MemoryError("backward reachability: out of memory")
        del seen[n:]
        return seen

    def forward_reachable(self, g: Graph, sources: bytearray,
                          allowed: bytearray | None = None) -> bytearray:
        n = g.n
        seen = bytearray(max(n, 1))
        if self.lib.co_alg_forward(n, _buffer(g.first, ctypes.c_int64),
                                   _ptr(g.dst, ctypes.c_int32), _bytes(sources),
                                   None if allowed is None else _bytes(allowed),
                                   _bytes(seen)) != 0:
            raise MemoryError("forward reachability: out of memory")
        del seen[n:]
        return seen

    def fair_sets(self, g: Graph, allowed: bytearray | None = None
                  ) -> tuple[array, int, bytearray]:
        n = g.n
        label = _zeros("i", n)
        count = self.lib.co_alg_fair_sets(
            n, _buffer(g.first, ctypes.c_int64), _ptr(g.dst, ctypes.c_int32),
            _ptr(g.task, ctypes.c_int32), len(self.strong), _bytes(self.strong),
            None if allowed is None else _bytes(allowed), _buffer(label, ctypes.c_int32))
        if count < 0:
            raise MemoryError("fair sets: out of memory")
        del label[n:]
        flags = self.fair_flags(label)
        return label, int(count), flags

    @staticmethod
    def fair_flags(label: array) -> bytearray:
        # label >= 0 as bytes: the top byte of each little-endian int32 is 0xff only at -1
        raw = label.tobytes()[3::4]
        return bytearray(raw.translate(_NONNEGATIVE))


_NONNEGATIVE = bytes([1] * 128 + [0] * 128)  # a label's top byte: < 0x80 iff label >= 0


def _ptr(a: array, ctype: Any) -> Any:
    """A pointer to an array's buffer, None when it is empty (nothing will be read)."""
    return _buffer(a, ctype) if len(a) else None


def _bytes(b: bytearray) -> Any:
    return (ctypes.c_uint8 * len(b)).from_buffer(b) if len(b) else None


def _no_state(i: int) -> int:
    raise IndexError(f"no state {i}: the search stopped")
