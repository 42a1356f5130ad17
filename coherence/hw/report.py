"""Rendering saved harness results: model verdicts per test and variant, a Markdown table and
a PNG heat map. Pure Python plus matplotlib (only for the PNG); no CuPy, so a report can be
rendered anywhere from committed results."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from coherence.errors import Span, SpecError, read_source
from coherence.hw.environments import ENVIRONMENTS
from coherence.litmus.catalogue import find_test
from coherence.litmus.compare import Comparison, compare
from coherence.litmus.model import DEFAULT_CORE, program_key, run_on_model
from coherence.litmus.place import load_for_test
from coherence.litmus.program import Litmus, Outcome, holds, outcome_dict
from coherence.litmus.sc import sc_outcomes
from coherence.litmus.variants import apply_variant

ENVIRONMENT_NAMES = frozenset(ENVIRONMENTS)
SCHEMA = 2  # written now: one row per test, variant and environment, plus link results
SCHEMAS = (1, 2)  # read


def load_results(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        doc = json.loads(read_source(p, "results"))
    except json.JSONDecodeError as e:
        raise SpecError(f"not JSON: {e.msg}", Span(str(path), e.lineno, e.colno)) from None
    if not isinstance(doc, dict) or doc.get("schema") not in SCHEMAS or "results" not in doc:
        raise SpecError("not a coherence hw results file (schema "
                        f"{' or '.join(map(str, SCHEMAS))})", Span(str(path), 0, 0))
    return doc


def result_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every histogram of a results file, labelled: ``where`` is the environment of a GPU run
    (``-`` in schema 1 files) or the placement of a link run (``cpu+gpu0@pinned``)."""
    out = [{**r, "where": r.get("environment", "-")} for r in doc["results"]]
    out += [{**r, "where": r["placement"], "timeouts": r.get("timeouts", 0),
             "sass": {"checked": False}} for r in doc.get("link_results", [])]
    return out


def parse_outcome(test: Litmus, text: str) -> Outcome:
    values = dict(item.split("=", 1) for item in text.split())
    try:
        return tuple(int(values[n]) for n in test.outcome_names())
    except (KeyError, ValueError):
        raise SpecError(f"{test.name}: outcome {text!r} does not match the test's registers "
                        "and locations") from None


def observed(test: Litmus, hist: dict[str, int]) -> dict[Outcome, int]:
    return {parse_outcome(test, k): int(v) for k, v in hist.items()}


class Verdicts:
    """Model runs are cached per (spec, compiled program): many variants share one.

    A hierarchical spec runs each test with its threads on processors of one GPU (the default
    placement, ``same-gpu``): the results compared are one GPU's, its roles on distinct SMs."""

    def __init__(self, specs: list[str], core: str = DEFAULT_CORE,
                 params: dict[str, int] | None = None) -> None:
        self.specs = specs
        self.core = core
        self.params = params or {}
        self._cache: dict[tuple, set[Outcome]] = {}

    def allowed(self, spec: str, test: Litmus) -> set[Outcome]:
        model, where = load_for_test(spec, self.params, test)
        key = (spec, program_key(model, test), where.nodes)
        if key not in self._cache:
            self._cache[key] = run_on_model(model, test, core=self.core,
                                            nodes=where.nodes).outcomes
        return self._cache[key]

    def compare(self, result: dict[str, Any]) -> tuple[Litmus, list[Comparison]]:
        test = apply_variant(find_test(result["test"]), result["variant"])
        obs = observed(test, result["distinct_sm"])
        sc = sc_outcomes(test)
        comps = [compare(test, Path(s).stem, self.allowed(s, test), sc, obs) for s in self.specs]
        return test, comps


def rows(docs: Iterable[dict[str, Any]], specs: list[str], core: str = DEFAULT_CORE,
         params: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """One row per test and variant. GPU cores issue later loads while earlier ones are
    outstanding, so a comparison with a GPU wants ``core="pipelined"``."""
    v = Verdicts(specs, core, params)
    out = []
    for doc in docs:
        for r in result_rows(doc):
            test, comps = v.compare(r)
            n = sum(r["distinct_sm"].values())
            cond = sum(c for o, c in observed(test, r["distinct_sm"]).items()
                       if holds(test.condition, outcome_dict(test, o)))
            out.append({
                "test": r["test"], "variant": r["variant"], "where": r["where"],
                "instances": n,
                "shared_sm_instances": sum(r["shared_sm"].values()),
                "timeouts": r["timeouts"], "condition": test.condition.text(),
                "condition_observed": cond,
                "sass": ("ok" if r["sass"].get("ok") else "MISMATCH") if r["sass"].get(
                    "checked") else "unchecked",
                "models": {c.model: {"consistent": c.consistent,
                                     "condition_allowed": any(
                                         row.allowed and row.interesting for row in c.rows),
                                     "forbidden_observed": [row.outcome for row in c.rows
                                                            if row.verdict ==
                                                            "forbidden-observed"],
                                     "allowed_unobserved": [row.outcome for row in c.rows
                                                            if row.verdict ==
                                                            "allowed-unobserved"]}
                           for c in comps},
            })
    return out


def markdown(table: list[dict[str, Any]], provenance: dict[str, Any] | None,
             core: str = DEFAULT_CORE) -> str:
    models = list(table[0]["models"]) if table else []
    lines = []
    if provenance and provenance.get("gpu"):
        lines.append(f"GPU: {provenance.get('gpu')} ({provenance.get('sms')} SMs), driver "
                     f"{provenance.get('driver_version')}, CUDA runtime "
                     f"{provenance.get('cuda_runtime_version')}, CuPy {provenance.get('cupy')}, "
                     f"{provenance.get('date')}")
        lines.append("")
    head = ["test", "variant", "where", "instances", "condition seen", "rate ≤", *models,
            "SASS"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in table:
        n = r["instances"]
        rate = f"{r['condition_observed'] / n:.2e}" if r["condition_observed"] else (
            f"{3 / n:.1e} (3/n)" if n else "-")
        cells = [r["test"], r["variant"], r["where"], f"{n:,}", f"{r['condition_observed']:,}",
                 rate]
        for m in models:
            v = r["models"][m]
            word = "allows" if v["condition_allowed"] else "forbids"
            cells.append(f"{word}; {'consistent' if v['consistent'] else '**REFUTED**'}")
        cells.append(r["sass"])
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Models run with the {core} core. "
                 "`allows`/`forbids`: whether the model allows the test's condition; "
                 "`REFUTED`: an outcome the model forbids was observed; rate ≤: an upper "
                 "bound (95 %, rule of three) when the condition was never observed; where: "
                 "the environment of a GPU run, or the agents and memory of a link run.")
    return "\n".join(lines) + "\n"


def environment_scores(table: list[dict[str, Any]], reference: str) -> dict[str, Any]:
    """Mutation score of each environment and the bound reached on each forbidden variant,
    with ``reference`` (a model of the table) deciding which variants allow their condition."""
    from coherence.hw.mutation import forbidden_bounds, mutation_scores

    gpu_rows = [r for r in table if r["where"] in ENVIRONMENT_NAMES]
    if not gpu_rows:
        return {"reference": reference, "scores": [], "forbidden": []}
    if reference not in gpu_rows[0]["models"]:
        raise SpecError(f"reference model {reference!r} is not among the report's models "
                        f"({', '.join(gpu_rows[0]['models'])})")
    observed: dict[str, dict[tuple[str, str], int]] = {}
    instances: dict[str, dict[tuple[str, str], int]] = {}
    allowed: dict[tuple[str, str], bool] = {}
    for r in gpu_rows:
        k = (r["test"], r["variant"])
        observed.setdefault(r["where"], {})[k] = r["condition_observed"]
        instances.setdefault(r["where"], {})[k] = r["instances"]
        allowed[k] = r["models"][reference]["condition_allowed"]
    bounds = forbidden_bounds(observed, instances, allowed)
    return {"reference": reference,
            "scores": [s.to_json() for s in mutation_scores(observed, allowed)],
            "forbidden": [{"test": t, "variant": v, **b} for (t, v), b in sorted(bounds.items())]}


def scores_markdown(scores: dict[str, Any]) -> str:
    if not scores["scores"]:
        return ""
    lines = ["", f"Mutation score per environment (mutants: the variants whose condition "
             f"{scores['reference']} allows; killed: the condition was observed):", "",
             "| environment | mutants | killed | score | missed |", "|---|---|---|---|---|"]
    for s in scores["scores"]:
        score = "-" if s["score"] is None else f"{s['score']:.2f}"
        lines.append(f"| {s['environment']} | {s['mutants']} | {s['killed']} | {score} | "
                     f"{', '.join(s['missed']) or '-'} |")
    if scores["forbidden"]:
        n = min(f["instances"] for f in scores["forbidden"])
        seen = [f"{f['test']} {f['variant']}" for f in scores["forbidden"] if f["seen"]]
        lines += ["", f"Variants whose condition {scores['reference']} forbids: "
                  f"{len(scores['forbidden'])}; fewest instances over all environments "
                  f"{n:,} (rate below {3 / n:.1e} where never seen); observed anyway: "
                  f"{', '.join(seen) or 'none'}."]
    return "\n".join(lines) + "\n"


def plot(table: list[dict[str, Any]], path: str | Path, title: str) -> None:
    """Heat map: tests × variants, colour = log10 of the condition's observed rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tests = sorted({r["test"] for r in table})
    def column(r: dict[str, Any]) -> str:
        return r["variant"] if r["where"] == "-" else f"{r['variant']} {r['where']}"

    variants = list(dict.fromkeys(column(r) for r in table))
    grid = [[math.nan] * len(variants) for _ in tests]
    labels = [[""] * len(variants) for _ in tests]
    for r in table:
        i, j = tests.index(r["test"]), variants.index(column(r))
        n, c = r["instances"], r["condition_observed"]
        grid[i][j] = math.log10(c / n) if c and n else -9.0
        labels[i][j] = f"{c}" if c else "0"
    fig, ax = plt.subplots(figsize=(1.1 * len(variants) + 3, 0.45 * len(tests) + 2))
    im = ax.imshow(grid, cmap="magma", vmin=-9, vmax=0, aspect="auto")
    ax.set_xticks(range(len(variants)), variants, rotation=45, ha="right")
    ax.set_yticks(range(len(tests)), tests)
    for i in range(len(tests)):
        for j in range(len(variants)):
            ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=7,
                    color="white" if (grid[i][j] or -9) < -4 else "black")
    fig.colorbar(im, ax=ax, label="log10(rate of the condition); -9 = never")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
