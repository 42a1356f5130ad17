"""The diagrams of every bundled spec, kept in ``diagrams/`` and checked for staleness.

    python -m coherence.diagrams.bundled            # regenerate diagrams/ (DOT, SVG, PNG)
    python -m coherence.diagrams.bundled --check    # exit 1 if diagrams/ is stale

What is drawn: the controller FSMs of every ``specs/*.coh`` (not the litmus or mutant
folders), the message-sequence charts of the seed protocol's counterexamples, and its
reachable state graph in the smallest configuration that still fails; and the charts of the
seed's broadcast on two-level GPUs (``multigpu_broadcast``, issue 20), a lane per L1, L2 and
memory, grouped by GPU. A test
(tests/test_diagrams.py) regenerates the DOT files and compares them with the committed ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import graphviz

from coherence.diagrams import fsm, msc, states
from coherence.diagrams.render import FORMATS, write
from coherence.engines import check
from coherence.results import CheckOptions
from coherence.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[2]
SEED = "broadcast_invalidate"
# The seed's counterexamples are the same with 2 GPUs as with 3, and found in a second.
SEED_TRACE_PARAMS = {"agents": 2}
SEED_STATES_PARAMS = {"agents": 2, "capacity": 1}
# The seed's scheme on two-level GPUs: its two invariants fail in 6 and 7 steps with one SM
# per GPU; searching to depth 7 finds both shortest counterexamples in about a second (the
# whole space, without symmetry, takes the reference engine ~20 s).
HIER_SEED = "multigpu_broadcast"
HIER_TRACE_PARAMS = {"gpus": 2, "sms": 1}
HIER_TRACE_DEPTH = 7


def bundled_specs(specs_dir: Path) -> list[Path]:
    return sorted(specs_dir.glob("*.coh"))


def graphs(specs_dir: Path) -> list[tuple[str, graphviz.Digraph, str]]:
    """(file stem, graph, command that draws it) for everything in diagrams/."""
    out: list[tuple[str, graphviz.Digraph, str]] = []
    for path in bundled_specs(specs_dir):
        rel = f"specs/{path.name}"
        model = load_spec(path)
        for stem, g in fsm.spec_graphs(model):
            out.append((stem, g, f"coherence diagram {rel} --kind fsm --out diagrams"))
    seed = specs_dir / f"{SEED}.coh"
    if seed.exists():
        rel = f"specs/{seed.name}"
        model = load_spec(seed, SEED_TRACE_PARAMS)
        result = check(model, CheckOptions())
        for f in result.failures:
            stem = f"{SEED}.check.{f.name}"
            out.append((stem, msc.chart(model, msc.as_failure(f), "check"),
                        f"coherence diagram {rel} --kind trace --agents 2 --out diagrams"))
        small = load_spec(seed, SEED_STATES_PARAMS)
        sg = states.explore(small)
        out.append((f"{SEED}.states", states.graph(small, sg),
                    f"coherence diagram {rel} --kind states --agents 2 -p capacity=1 "
                    "--out diagrams"))
    hier = specs_dir / f"{HIER_SEED}.coh"
    if hier.exists():
        rel = f"specs/{hier.name}"
        model = load_spec(hier, HIER_TRACE_PARAMS)
        result = check(model, CheckOptions(max_depth=HIER_TRACE_DEPTH))
        params = " ".join(f"-p {k}={v}" for k, v in HIER_TRACE_PARAMS.items())
        for f in result.failures:
            out.append((f"{HIER_SEED}.check.{f.name}", msc.chart(model, msc.as_failure(f), "check"),
                        f"coherence diagram {rel} --kind trace {params} --max-depth "
                        f"{HIER_TRACE_DEPTH} --out diagrams"))
    return out


def index(items: list[tuple[str, graphviz.Digraph, str]]) -> str:
    lines = ["# Diagrams of the bundled specs", "",
             "Generated; do not edit. Regenerate with `python -m coherence.diagrams.bundled`;",
             "`python -m pytest tests/test_diagrams.py` fails when these are stale.", "",
             "| diagram | drawn by |", "|---|---|"]
    for stem, _g, command in items:
        lines.append(f"| [{stem}]({stem}.png) ([svg]({stem}.svg), [dot]({stem}.dot)) "
                     f"| `{command}` |")
    return "\n".join(lines) + "\n"


def generate(out_dir: Path, specs_dir: Path, formats: tuple[str, ...] = FORMATS) -> list[str]:
    """Write every bundled diagram and the index into out_dir; returns the files written."""
    items = graphs(specs_dir)
    written: list[str] = []
    for stem, g, _command in items:
        written += write(g, out_dir, stem, formats)
    (out_dir / "README.md").write_text(index(items), encoding="utf-8")
    return [*written, str(out_dir / "README.md")]


def stale(out_dir: Path, specs_dir: Path, scratch: Path) -> list[str]:
    """What differs between out_dir and a fresh generation (DOT files and the index)."""
    generate(scratch, specs_dir, ("dot",))
    problems: list[str] = []
    fresh = {p.name for p in scratch.glob("*.dot")} | {"README.md"}
    kept = {p.name for p in out_dir.glob("*.dot")} | (
        {"README.md"} if (out_dir / "README.md").exists() else set())
    problems += [f"missing: {name}" for name in sorted(fresh - kept)]
    problems += [f"no longer generated: {name}" for name in sorted(kept - fresh)]
    for name in sorted(fresh & kept):
        if (scratch / name).read_bytes() != (out_dir / name).read_bytes():
            problems.append(f"out of date: {name}")
    for name in sorted(fresh - {"README.md"}):
        for fmt in FORMATS[1:]:
            image = Path(name).with_suffix(f".{fmt}").name
            if not (out_dir / image).exists():
                problems.append(f"missing: {image}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m coherence.diagrams.bundled",
                                description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only report whether diagrams/ is stale")
    p.add_argument("--out", default=str(ROOT / "diagrams"))
    p.add_argument("--specs", default=str(ROOT / "specs"))
    args = p.parse_args(argv)
    out, specs = Path(args.out), Path(args.specs)
    if args.check:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            problems = stale(out, specs, Path(tmp))
        for line in problems:
            print(line)
        return 1 if problems else 0
    for old in out.glob("*"):
        if old.suffix in (".dot", ".svg", ".png"):
            old.unlink()
    for f in generate(out, specs):
        print(f"wrote {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
