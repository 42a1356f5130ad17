"""Writing a graph as DOT, SVG and PNG, and the helpers every diagram shares.

The DOT file is written from the graph's source text, so it is byte-for-byte deterministic;
SVG and PNG come from Graphviz's ``dot`` program.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html import escape
from pathlib import Path

import graphviz

from coherence.errors import NO_SPAN, Span, SpecError

FORMATS = ("dot", "svg", "png")
FONT = "Helvetica"


def new_graph(name: str, title: str) -> graphviz.Digraph:
    g = graphviz.Digraph(name=name)
    g.attr(label=title, labelloc="t", fontname=FONT, fontsize="16", charset="UTF-8")
    g.attr("node", fontname=FONT, fontsize="11")
    g.attr("edge", fontname=FONT, fontsize="10")
    return g


def html(text: str) -> str:
    """Text made safe inside a graphviz HTML-like label."""
    return escape(text, quote=False)


def file_stem(*parts: str) -> str:
    """A file name from free text: letters, digits and '_' only, parts joined by '.'."""
    return ".".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_") or "x" for p in parts)


def dot_available() -> bool:
    return shutil.which("dot") is not None


def write(graph: graphviz.Digraph, directory: str | Path, stem: str,
          formats: tuple[str, ...] = FORMATS) -> list[str]:
    """Write ``stem.dot`` (always) and ``stem.svg``/``stem.png`` (as asked) into directory."""
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SpecError(f"cannot create the output directory: {e.strerror}",
                        Span(str(directory), 0, 0)) from None
    dot_path = out / f"{stem}.dot"
    dot_path.write_text(graph.source, encoding="utf-8")
    written = [str(dot_path)]
    images = [f for f in formats if f != "dot"]
    if images and not dot_available():
        raise SpecError("Graphviz's `dot` program is not installed (Debian: apt-get install "
                        "graphviz); use --format dot to write DOT files only", NO_SPAN)
    for fmt in images:
        target = out / f"{stem}.{fmt}"
        proc = subprocess.run(["dot", f"-T{fmt}", "-o", str(target), str(dot_path)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:  # a bug in a diagram module, not the user's input
            raise RuntimeError(f"dot failed on {dot_path}: {proc.stderr.strip()}")
        written.append(str(target))
    return written
