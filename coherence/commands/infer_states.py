"""The compiled engine as the state source of ``prove --infer``'s mining phase.

Mining (``coherence.smt.infer_mine``) needs the reachable states of 2 and 3 agents; the
reference BFS spends most of its time canonicalising states in Python, the compiled engine
(generated C, cached by hash) finds the same set in milliseconds. The back ends never import
each other, so this command-layer module joins them: ``compiled_states`` has the contract of
``infer_mine.explore`` (``StateSource``) and gives the reference search's answer wherever the
two could differ:

- no C compiler, a model the code generator or the packed layout refuses: the reference;
- a failure met (the reference's ``broken`` names the first failure in *its* BFS order and
  the depth of that state, which refutes the spec early): the reference, which stops there;
- a state limit reached (the reference's prefix is the one of its own order): the reference;
- the deadline reached: the compiled search's states so far (reachable states, as the
  reference's prefix is; which ones depends on timing in either search).

A complete search stores one state of each orbit under agent renaming, as the reference does
(maybe not the same one); mining evaluates its atoms over every agent and pair of agents of a
state, so the candidates are the same (tests/test_infer_mine_compiled.py compares them).
"""

from __future__ import annotations

import time

from coherence import ir
from coherence.smt.infer_mine import Explored, StateSource, explore, symmetry_of

# Mining stops at ``InferOptions.max_states`` (50,000) states per size, which the library
# explores in a tenth of a second even unoptimised, while -O3 takes 5 times longer to compile
# (German at 3 agents: 0.17 s at -O0, 0.85 s at -O3, on the 2-core development machine): the
# first run of each size pays the compilation, later ones find the library cached.
MINE_CFLAGS = ("-O0",)


def compiled_states(model: ir.Model, agents: int, max_states: int,
                    deadline: float) -> Explored:
    """``infer_mine.explore``'s answer, from the compiled engine where it gives the same (see
    the module docstring); ``Explored.note`` says why the reference search ran instead."""
    from coherence.engines import EngineUnavailable
    from coherence.engines.stopping import time_limit_reached
    from coherence.errors import SpecError
    from coherence.layout import Layout, LayoutError
    from coherence.results import CheckOptions
    from coherence.semantics import Semantics
    from coherence.spec.load import rebind

    t0 = time.perf_counter()
    inst = rebind(model, {"agents": agents})  # a size outside the spec's range: SpecError

    def reference(why: str) -> Explored:
        ex = explore(model, agents, max_states, deadline)
        ex.note = f"reference search: {why}"
        ex.seconds = time.perf_counter() - t0  # with the compiled attempt's
        return ex

    try:
        from coherence.engines.compiled import CompiledEngine
        from coherence.engines.compiled.build import BuildError
    except ImportError as err:  # pragma: no cover - a broken installation
        return reference(f"the compiled engine cannot be loaded: {err}")
    engine = CompiledEngine()
    reason = engine.available()
    if reason is not None:
        return reference(reason)
    time_limit = max(deadline - time.perf_counter(), 1e-3)
    options = CheckOptions(symmetry=symmetry_of(Semantics(inst)) is not None, deadlock=False,
                           max_states=max_states, stop_at_first=True, time_limit=time_limit)
    try:
        layout = Layout(inst)
        raw, codes = engine.reachable(inst, layout, options, MINE_CFLAGS)
    except (EngineUnavailable, LayoutError, BuildError, SpecError) as err:
        # SpecError: CompilerNotFound (a compiler that cannot run); BuildError: a compiler
        # that rejects the generated code (a bug, but the reference search still answers)
        return reference((getattr(err, "message", None) or str(err)).splitlines()[0])
    if raw.failures:
        return reference("a failure was met (the reference search finds the first, and its "
                         "depth)")
    if raw.stopped is not None and raw.stopped.startswith("interrupted"):
        raise KeyboardInterrupt(raw.stopped)
    timed_out = raw.stopped == time_limit_reached(time_limit)
    if raw.stopped is not None and not timed_out:
        return reference(raw.stopped)
    states = [layout.unpack(code) for code in codes]
    return Explored(agents, states, raw.stopped is None, time.perf_counter() - t0,
                    engine="compiled")


def state_source(name: str) -> StateSource | None:
    """The state source of ``--mine-engine NAME`` (None: infer's default, the reference)."""
    return compiled_states if name == "auto" else None
