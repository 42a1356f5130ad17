"""NOTE(infer-repair): the final proof's counterexamples to induction put back candidates.

Houdini chooses and minimises its lines at one size (``InferOptions.cutoff`` agents), in a
finite encoding whose pre-states a heuristic narrows (NOTE(infer-fifo-keys)); the final proof
is for every N, over every state the parameterised encoding allows. On msi_home_acks its
concrete counterexamples to induction were states no search reaches (a ``Data`` from a node
to itself, the home in ``S_M`` waiting for nobody) that candidates Houdini kept, then
minimised away, rule out. Those candidates, read on each counterexample's pre-state as mining
reads explored states, are put back (the fewest literals first, a few per counterexample)
and the proof runs again: its verdict is still the only one. The obligations the last proof
settled are not checked again (``prove_all``'s ``reuse``): the lines only grow, and more
hypotheses keep an obligation proved.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coherence.semantics import Semantics
from coherence.smt.infer_mine import Candidate, Templates, violated

PER_CTI = 3  # candidates put back per counterexample
ROUNDS = 3  # proofs again, at most


def repairs(cands: list[Candidate], alive: Iterable[int], taken: Iterable[int],
            tpl: Templates, ctis: Iterable[Any]) -> list[int]:
    """Indices of ``alive`` candidates (not ``taken``) false in some counterexample's
    pre-state: up to PER_CTI per counterexample, the smallest first."""
    pool = sorted(set(alive) - set(taken), key=lambda k: (cands[k].size, k))
    out: list[int] = []
    for cti in ctis:
        if cti.state is None or cti.instance is None:  # not replayed in the reference
            continue
        rows = tpl.rows(Semantics(cti.instance), cti.state, readable_only=True)
        hit = [k for k in pool if k not in out and violated(cands[k], rows)]
        out.extend(hit[:PER_CTI])
    return out
