"""Diagrams of a protocol with graphviz: controller FSMs, reachable state graphs, and
message-sequence charts of counterexamples.

Every module builds a ``graphviz.Digraph`` from the IR (or a trace) alone; ``render`` writes
it as DOT, SVG and PNG. The DOT text is deterministic (no timestamps, no absolute paths), so
it can be kept as a golden file; SVG and PNG depend on the installed ``dot``.
"""
