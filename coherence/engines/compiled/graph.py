"""The compiled engine's liveness graph (issue 16): the generated C search keeps every edge.

The model is generated with ``liveness=True`` (NOTE(compiled-liveness) in
``coherence.engines.cgen.clive``: each action names its fairness task, and each liveness
predicate is C), and the runtime, with ``co_options.graph``, logs each stored edge per thread
and builds compressed rows after the search (``co_graph_*`` in ``co_runtime.c``). What comes
back is ``coherence.liveness.built.Built``, the representation the reference engine's graph
has, so the checks in ``coherence.liveness.check`` are the same code for both. The search's
storage is kept until the checks are done (its states are read for the counterexamples, its
parents are the breadth-first tree), then freed.

NOTE(graph-memory): what the graph costs (issue 16: liveness within 3x the memory of the
default safety check). The search logs each edge in 6 bytes (8 once a thread has seen more
than 32,767 tasks), in blocks unmapped as soon as the rows have read them; the rows are written
front to back, by source, into anonymous mappings (``_mapped``) that the system commits page
by page as they are written, so the logs and the rows are never both whole. A row costs an
8-byte offset, an edge its 4-byte target and its task in as few bytes as the number of tasks
allows (1 below 128 tasks, 2 below 32,768, else 4). The breadth-first parents are the search's
own array, not a copy. No predecessor rows are built: backward reachability runs Tarjan on
the forward rows (``co_alg_backward``: components complete after their successors, so each
one's answer is final when it completes), at 8 bytes a state for Tarjan's index and low-link
(the component number replaces the low-link once a state is finished) and 4 for its stack. A
verdict asks for the fair states only (``fair_region``); their labels are built again for a
counterexample. An instance's goal and premise flags are made when it is checked
(``Built.evaluate``) and dropped after its verdict. On a large graph the instances run one
at a time (``check.PARALLEL_STATES``), since each running one holds its own work arrays.
"""

from __future__ import annotations

import ctypes
import mmap
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import attrs

from coherence import ir
from coherence.engines.compiled.build import build as build_library
from coherence.engines.compiled.engine import Library, run_search
from coherence.layout import Layout
from coherence.liveness import reference
from coherence.liveness.built import Built, Instance, instances
from coherence.liveness.graph import Graph, Ints, Reverse
from coherence.results import CheckOptions


def _buffer(a: Ints, ctype: Any) -> Any:
    return (ctype * len(a)).from_buffer(a)


def _mapped(code: Literal["b", "h", "i", "q"], n: int) -> memoryview:
    """``max(n, 1)`` zeros of array type ``code`` in an anonymous mapping, committed page by
    page as first written (NOTE(graph-memory)); freed with the last view of it."""
    return memoryview(mmap.mmap(-1, max(n, 1) * array(code).itemsize)).cast(code)


def task_code(tasks: int) -> Literal["b", "h", "i"]:
    """The narrowest signed array type that holds every task id and ``UNFAIR`` (-1)."""
    return "b" if tasks < 128 else "h" if tasks < 32768 else "i"


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
    code = task_code(nt)
    first, dst, task = _mapped("q", ns + 1), _mapped("i", ne), _mapped(code, ne)
    task_buf = _buffer(task, ctypes.c_byte)
    if lib.lib.co_graph_fill(_buffer(first, ctypes.c_int64), _buffer(dst, ctypes.c_int32),
                             ctypes.addressof(task_buf), task.itemsize) != 0:
        raise MemoryError("the compiled engine could not build its liveness graph")
    del task_buf
    dst, task = dst[:ne], task[:ne]
    hi, lo, strong = _zeros("Q", nt), _zeros("Q", nt), _zeros("B", nt)
    lib.lib.co_graph_tasks(_buffer(hi, ctypes.c_uint64), _buffer(lo, ctypes.c_uint64),
                           _buffer(strong, ctypes.c_uint8))
    # the search's parents in place (CO_NONE reads as -1), valid until co_free
    parents = (ctypes.c_int32 * max(ns, 1)).from_address(lib.lib.co_parents_view())
    parent = memoryview(parents).cast("B").cast("i")[:ns]
    # only the instances asked for are evaluated (the others are decided by symmetry); here
    # only whether P or Q raises a model error somewhere: each instance's goal and premise
    # flags are made when it is checked, and dropped after (NOTE(graph-memory))
    slot = array("i", [-1]) * max(1, total)
    for j, inst in enumerate(insts):
        slot[inst.index] = j
    err = _zeros("q", total)
    lib.lib.co_live_table(_buffer(slot, ctypes.c_int32), None, None,
                          _buffer(err, ctypes.c_int64))
    errors: dict[str, int] = {}
    for inst in insts:
        if err[inst.index] >= 0:
            name = inst.prop.name
            errors[name] = min(errors.get(name, err[inst.index]), err[inst.index])

    def evaluate(inst: Instance) -> None:
        one = array("i", [-1]) * max(1, total)
        one[inst.index] = 0
        goal, premise, e = bytearray(max(1, ns)), bytearray(max(1, ns)), _zeros("q", total)
        lib.lib.co_live_table(_buffer(one, ctypes.c_int32),
                              (ctypes.c_uint8 * len(goal)).from_buffer(goal),
                              (ctypes.c_uint8 * len(premise)).from_buffer(premise),
                              _buffer(e, ctypes.c_int64))
        del goal[ns:], premise[ns:]
        inst.goal, inst.premise = goal, premise

    words = lib.words

    def state(i: int) -> int:
        buf = (ctypes.c_uint64 * words)()
        if lib.lib.co_state_at(i, buf) != 0:
            raise IndexError(f"no state {i}")
        return layout.from_bytes(bytes(buf))

    keys = [(hi[i], lo[i]) for i in range(nt)]
    graph = Graph(first, dst, task, {i for i in range(nt) if strong[i]})
    return Built(graph, parent, state, errors, None, keys, "compiled",
                 algorithms=CAlgorithms(lib, bytearray(strong[:nt])), evaluate=evaluate)


class CAlgorithms:
    """``coherence.liveness.graph.Algorithms`` in the runtime's C (``co_alg_*``), on the
    graph's own buffers."""

    parallel = True

    def __init__(self, lib: Library, strong: bytearray) -> None:
        self.lib = lib.lib
        self.strong = strong or bytearray(1)

    def reverse(self, g: Graph) -> Reverse:
        # no predecessor rows: backward_reachable works on the forward ones
        return Reverse(array("q"), array("i"), g)

    def backward_reachable(self, rev: Reverse, targets: bytearray,
                           allowed: bytearray | None = None) -> bytearray:
        g = rev.graph
        assert g is not None, "CAlgorithms.reverse made this"
        n = g.n
        seen = bytearray(max(n, 1))
        if self.lib.co_alg_backward(n, _buffer(g.first, ctypes.c_int64),
                                    _ptr(g.dst, ctypes.c_int32), _bytes(targets),
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
        count, flags = self._fair(g, allowed, _buffer(label, ctypes.c_int32))
        del label[n:]
        return label, count, flags

    def fair_region(self, g: Graph, allowed: bytearray | None = None) -> bytearray:
        return self._fair(g, allowed, None)[1]  # no labels: 4 bytes a state fewer

    def _fair(self, g: Graph, allowed: bytearray | None, label: Any) -> tuple[int, bytearray]:
        n = g.n
        flags = bytearray(max(n, 1))
        task = _ptr(g.task, ctypes.c_byte)  # read as g.task.itemsize-byte ids
        count = self.lib.co_alg_fair_sets(
            n, _buffer(g.first, ctypes.c_int64), _ptr(g.dst, ctypes.c_int32),
            None if task is None else ctypes.addressof(task), g.task.itemsize,
            len(self.strong), _bytes(self.strong),
            None if allowed is None else _bytes(allowed), label, _bytes(flags))
        if count < 0:
            raise MemoryError("fair sets: out of memory")
        del flags[n:]
        return int(count), flags


def _ptr(a: Ints, ctype: Any) -> Any:
    """A pointer to an array's buffer, None when it is empty (nothing will be read)."""
    return _buffer(a, ctype) if len(a) else None


def _bytes(b: bytearray) -> Any:
    return (ctypes.c_uint8 * len(b)).from_buffer(b) if len(b) else None


def _no_state(i: int) -> int:
    raise IndexError(f"no state {i}: the search stopped")
