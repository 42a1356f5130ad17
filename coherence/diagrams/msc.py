"""Counterexample message-sequence charts: one lane per agent and the home (a hierarchy: per
machine instance, grouped by level, NOTE(hierarchy-lanes)), time downwards.

Each trace step is one row. The acting machine's lane shows the step number, the event and
what changed (control state in bold, variables, performed loads and stores); a machine that
changed inside the step (a message on an atomic bus) shows its changes on its own lane. A
message is an arrow from the row where it was sent to the row where it arrived, so overtaking
on an unordered network shows as crossing arrows; messages still in flight at the end go to
the lanes' last row, dashed. The violated property is written at the bottom.

Works from ``coherence.trace.Step`` lists alone (what ``check``, ``prove`` and ``fuzz`` produce
and ``coherence.traces_io`` saves), so a saved trace draws the same chart as a live one.
Messages on an atomic bus are not in a Step (they never sit in the network); they are found by
replaying the step's action through the semantics, and left out if the replay does not match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import graphviz

from coherence import ir
from coherence.diagrams.fsm import params_note
from coherence.diagrams.pretty import Printer
from coherence.diagrams.render import FORMATS, file_stem, html, new_graph, write
from coherence.semantics import Semantics
from coherence.trace import Formatter, Send, Step, action_from_json

MESSAGE_COLOUR = "#1f4e9c"
BUS_COLOUR = "#2e7d32"
ERROR_COLOUR = "#c62828"
LIFELINE = "#9e9e9e"
_PERFORM = re.compile(r"performs (load|store): (.+?) (?:load returns|store of) (\S+)$")


@attrs.frozen
class TraceFailure:
    """What a chart needs of a failure, from a checker result or a saved trace file."""

    name: str
    kind: str
    message: str
    trace: list[Step]
    loop_start: int | None = None  # a liveness lasso: steps from this one on repeat forever


def as_failure(f: Any) -> TraceFailure:
    if isinstance(f, dict):
        return TraceFailure(f["property"], f["kind"], f["message"], list(f["steps"]),
                            f.get("loop_start"))
    return TraceFailure(f.name, f.kind, f.message, list(f.trace),
                        getattr(f, "loop_start", None))


def _loop_note(failure: TraceFailure) -> str:
    k, n = failure.loop_start, len(failure.trace)
    if k is None:
        return ""
    if k > n:
        return " · then it stays in the last state forever"
    return f" · steps {k}..{n} repeat forever (↻)"


def lanes(model: ir.Model) -> list[str]:
    """Lane names, the home in the middle so that most arrows are short; a hierarchy's
    instances grouped by level (``hierarchy_lanes``)."""
    if model.is_hierarchical:
        return [lane.name for lane in hierarchy_lanes(model)]
    caches = [f"{c.name}[{a}]" for c in model.caches for a in range(model.agents)]
    home = [model.home.name] if model.home is not None else []
    half = (len(caches) + 1) // 2
    return caches[:half] + home + caches[half:]


@attrs.frozen
class Lane:
    """One machine instance of a hierarchy: its name (as traces write it), its machine, and
    the index values that place it: ``(("gpu", 0), ("sm", 1))`` for ``L1[0, 1]``."""

    name: str
    machine: ir.Machine
    path: tuple[tuple[str, int], ...]


def hierarchy_lanes(model: ir.Model) -> list[Lane]:
    """NOTE(hierarchy-lanes): one lane per machine instance, grouped by level: the instances
    that share leading index values sit together, the most deeply indexed first (the L1s of a
    GPU, then its L2), and machines with no index (memory) come last. Within a group, machines
    keep their declaration order."""
    sem = Semantics(model)
    position = {t.name: k for k, t in enumerate(model.indexes)}
    order = {m.name: k for k, m in enumerate(model.machines)}
    beyond = len(model.indexes)
    out: list[tuple[tuple[tuple[int, int], ...], Lane]] = []
    for inst in sem.instances:
        machine = sem.node_machine[inst.node]
        path = tuple((f.type.name, v) for f, v in zip(machine.indices, inst.values, strict=True)
                     if isinstance(f.type, ir.IndexT))
        key = (*((position[t], v) for t, v in path), (beyond, order[machine.name]))
        out.append((key, Lane(sem.node_name(inst.node), machine, path)))
    return [lane for _key, lane in sorted(out, key=lambda kv: kv[0])]


@attrs.frozen
class Group:
    """Consecutive lanes that share leading index values (``gpu 0``), drawn as one box;
    ``depth`` is how many values they share."""

    label: str
    first: int
    last: int
    depth: int


def lane_groups(lanes_: Sequence[Lane]) -> list[Group]:
    """The boxes around lanes of one GPU (and deeper): every prefix of index values shared by
    two or more lanes, outermost first; a prefix that holds the same lanes as a shorter one
    adds no box."""
    groups: list[Group] = []
    deepest = max((len(lane.path) for lane in lanes_), default=0)
    seen: set[tuple[int, int]] = set()
    for depth in range(1, deepest + 1):
        i = 0
        while i < len(lanes_):
            prefix = lanes_[i].path[:depth]
            j = i
            while (j + 1 < len(lanes_) and len(prefix) == depth
                   and lanes_[j + 1].path[:depth] == prefix):
                j += 1
            if len(prefix) == depth and j > i and (i, j) not in seen:
                seen.add((i, j))
                groups.append(Group(" · ".join(f"{t} {v}" for t, v in prefix), i, j, depth))
            i = j + 1
    return groups


def initial_states(model: ir.Model) -> dict[str, str]:
    if model.is_hierarchical:
        return {lane.name: lane.machine.init_state for lane in hierarchy_lanes(model)}
    out = {}
    for c in model.caches:
        for a in range(model.agents):
            out[f"{c.name}[{a}]"] = c.init_state
    if model.home is not None:
        out[model.home.name] = model.home.init_state
    return out


def bus_messages(model: ir.Model, trace: Sequence[Step]) -> list[list[Send]]:
    """Per step, the messages delivered on an atomic bus; empty lists if replay fails."""
    empty: list[list[Send]] = [[] for _ in trace]
    if not any(n.ordering is ir.Ordering.BUS for n in model.networks):
        return empty
    sem = Semantics(model)
    fmt = Formatter(sem)
    state = sem.initial_states()[0]
    out: list[list[Send]] = []
    for step in trace:
        try:
            result = sem.execute(state, action_from_json(step.action))
        except (KeyError, IndexError, TypeError, ValueError):
            return empty
        if result is None:
            return empty
        out.append([Send(fmt.node(s), fmt.node(d), fmt.message(t, f))
                    for s, d, t, f in result.bus])
        if result.state is None:
            break
        state = result.state
    return out + [[] for _ in range(len(trace) - len(out))]


_CHANGE = re.compile(r"^(?:\.(\w+))?(?: \(line (\d+)\))?: (.*)$")


def _parse_change(change: str, names: list[str]) -> tuple[str, str | None, int, str] | None:
    """A change line of a Step (see coherence.trace) as (lane, variable or None for the
    control state, line, "old → new"); None if it names no lane (sends, globals)."""
    for name in names:
        if change.startswith(name):
            m = _CHANGE.match(change[len(name):])
            if m is None:
                continue
            var, line, text = m.groups()
            if var is None:
                if not text.startswith("state "):
                    continue
                text = text[len("state "):]
            return name, var, int(line or 0), text
    return None


def _notes(step: Step, names: list[str],
           lines: int) -> tuple[dict[str, list[str]], list[tuple[str, int, str]]]:
    """HTML lines per lane for what changed in a step, and the new control states."""
    notes: dict[str, list[str]] = {}
    moved: list[tuple[str, int, str]] = []
    for change in step.changes:
        if change.startswith("performs "):
            continue
        parsed = _parse_change(change, names)
        if parsed is None:
            if " sends " in change:
                continue
            notes.setdefault(step.actor, []).append(html(change))  # a global variable
            continue
        lane, var, line, text = parsed
        at = f" (line {line})" if lines > 1 else ""
        if var is None:
            moved.append((lane, line, text.split(" → ")[-1]))
            notes.setdefault(lane, []).append(f"<b>{html(text)}</b>{html(at)}")
        else:
            notes.setdefault(lane, []).append(html(f"{var}: {text}{at}"))
    for p in step.performs:
        m = _PERFORM.match(p)
        if m is None:
            notes.setdefault(step.actor, []).append(html(p))
            continue
        kind, agent, value = m.groups()
        text = f"load → {value}" if kind == "load" else f"store {value}"
        notes.setdefault(agent, []).append(f'<font color="#2e7d32"><b>{html(text)}</b></font>')
    return notes, moved


def _states_text(word: str, states: dict[tuple[str, int], str], name: str, lines: int) -> str:
    if lines == 1:
        return f"{word} {states.get((name, 0), '?')}"
    return f"{word} " + " · ".join(f"L{k}: {states.get((name, k), '?')}" for k in range(lines))


def _event(step: Step) -> str:
    if step.received is not None:
        line = re.search(r" \(line \d+\)$", step.event)
        return f"?{step.received.message}{line.group(0) if line else ''}"
    return step.event


# Layout, in inches. The chart is laid out here and pinned (neato, ``pos="x,y!"``): lanes
# must stay straight columns and rows straight lines, which dot's ranking does not promise.
CHAR_W = 0.085  # a character of the 11-point font, a little generous
LINE_H = 0.2
BOX_PAD_H = 0.3
ROW_GAP = 0.45
LANE_GAP = 0.5
# a hierarchy's lane groups (NOTE(hierarchy-lanes)): extra room between groups, the margin
# of a group's box around its lanes (more for outer boxes), room for its label
GROUP_GAP = 0.4
GROUP_PAD = 0.12
GROUP_LABEL_H = 0.3
GROUP_FILL = "#1f4e9c0d"
GROUP_COLOUR = "#5c6f8a"


def _text_len(label: str) -> int:
    """Visible characters of the longest line of an HTML-like label."""
    lines = re.split(r"<br[^>]*>", label)
    return max((len(re.sub(r"<[^>]+>", "", x).replace("&amp;", "&").replace(
        "&lt;", "<").replace("&gt;", ">")) for x in lines), default=0)


def _lines(label: str) -> int:
    return max(1, len([x for x in re.split(r"<br[^>]*>", label) if x.strip()]))


def _overlaps(a: tuple[float, float, float, float],
              b: tuple[float, float, float, float]) -> bool:
    return abs(a[0] - b[0]) * 2 < a[2] + b[2] and abs(a[1] - b[1]) * 2 < a[3] + b[3]


Segment = tuple[tuple[float, float], tuple[float, float]]


def _crosses(box: tuple[float, float, float, float], seg: Segment) -> bool:
    (x0, y0), (x1, y1) = seg
    return any(_overlaps(box, (x0 + (x1 - x0) * k / 24, y0 + (y1 - y0) * k / 24, 0, 0))
               for k in range(25))


def _label_place(boxes: list[tuple[float, float, float, float]], segments: list[Segment],
                 p: tuple[float, float], q: tuple[float, float],
                 chars: int) -> tuple[float, float]:
    """Where on the arrow p→q its label goes: the middle, or the nearest spot that covers
    neither a box, another label nor another arrow."""
    w, h = chars * CHAR_W * 0.8 + 0.1, 0.22
    lift = 0.14 if p[1] == q[1] else 0.0  # above a horizontal arrow, not on it
    own = (p, q)
    for t in (0.5, 0.38, 0.62, 0.27, 0.73, 0.18, 0.82):
        x, y = p[0] + (q[0] - p[0]) * t, p[1] + (q[1] - p[1]) * t + lift
        box = (x, y, w, h)
        if not any(_overlaps(box, b) for b in boxes) and not any(
                _crosses(box, sg) for sg in segments if sg != own):
            return x, y
    return (p[0] + q[0]) / 2, (p[1] + q[1]) / 2 + lift


def chart(model: ir.Model, failure: TraceFailure, source: str) -> graphviz.Digraph:
    """The message-sequence chart of one counterexample."""
    names = lanes(model)
    groups = lane_groups(hierarchy_lanes(model)) if model.is_hierarchical else []
    for step in failure.trace:
        if step.actor not in names:
            raise ValueError(f"step {step.index}: {step.actor!r} is not a machine of this spec "
                             f"(lanes: {', '.join(names)})")
    trace = failure.trace
    n = len(trace)
    end = n + 1
    title = (f"<<b>Counterexample: {html(failure.name)}</b> ({html(failure.kind)})<br/>"
             f'<font point-size="10">{html(Path(model.file).name)} '
             f"({html(params_note(model))}) · from {html(source)} · "
             f"{n} {'step' if n == 1 else 'steps'}{_loop_note(failure)}<br/>"
             f'<font color="{MESSAGE_COLOUR}">network message</font> · '
             f'<font color="{BUS_COLOUR}">atomic bus</font> · dashed: still in flight'
             + (" · a box per group of lanes that share index values" if groups else "")
             + "</font>>")

    # ---- contents: a label per (lane, row) where something happens
    labels: dict[tuple[int, int], str] = {}
    nlines = model.lines
    state = {(name, k): init for name, init in initial_states(model).items()
             for k in range(nlines)}
    for i, name in enumerate(names):
        labels[(i, 0)] = (f"<b>{html(name)}</b><br/>"
                          f'<font point-size="9">{html(_states_text("init", state, name, nlines))}'
                          "</font>")
    bus = bus_messages(model, trace)
    for row, step in enumerate(trace, start=1):
        notes, moved = _notes(step, names, nlines)
        for b in reversed(bus[row - 1]):  # a machine that took a bus message says so
            if b.dst != step.actor:
                notes.setdefault(b.dst, []).insert(0, html(f"?{b.message}"))
        for lane_name, line, new_state in moved:
            state[(lane_name, line)] = new_state
        for i, name in enumerate(names):
            lines = list(notes.get(name, []))
            if name == step.actor:
                lines.insert(0, f"<b>{step.index}.</b> {html(_event(step))}")
                if step.index == failure.loop_start:
                    lines.insert(0, "<b>↻ the cycle starts here</b>")
                if step.error:
                    lines.append(f'<font color="{ERROR_COLOUR}"><b>ERROR:</b> '
                                 f"{html(step.error)}</font>")
            elif lines:
                lines.insert(0, f'<font point-size="9">(step {step.index})</font>')
            if lines:
                labels[(i, row)] = '<br align="left"/>'.join(lines) + '<br align="left"/>'
    for i, name in enumerate(names):
        labels[(i, end)] = (f'<font point-size="9">{html(_states_text("end", state, name, nlines))}'
                            "</font>")

    # ---- messages: (src lane, src row, dst lane, dst row, text, style)
    lane = {name: i for i, name in enumerate(names)}
    arrows: list[tuple[int, int, int, int, str, str]] = []
    pending: list[tuple[int, Send]] = []
    for row, step in enumerate(trace, start=1):
        if step.received is not None:
            got = step.received
            for k, (sent_row, s) in enumerate(pending):
                if (s.src, s.dst, s.message) == (got.src, got.dst, got.message):
                    del pending[k]
                    arrows.append((lane[s.src], sent_row, lane[s.dst], row, s.message, "net"))
                    break
        for b in bus[row - 1]:
            if b.src in lane and b.dst in lane:
                arrows.append((lane[b.src], row, lane[b.dst], row, b.message, "bus"))
        pending += [(row, s) for s in step.sends if s.src in lane and s.dst in lane]
    for sent_row, s in pending:
        arrows.append((lane[s.src], sent_row, lane[s.dst], end, s.message, "flight"))

    # ---- geometry
    widths = [max(_text_len(labels[(i, r)]) for r in range(end + 1) if (i, r) in labels)
              * CHAR_W + 0.3 for i in range(len(names))]
    longest = max((len(a[4]) for a in arrows), default=0) * CHAR_W * 0.85
    starts = {g.first for g in groups} | {g.last + 1 for g in groups}  # a box's edge
    xs = [0.0]
    for i in range(1, len(names)):
        gap = max(LANE_GAP, longest + 0.3) + (GROUP_GAP if i in starts else 0.0)
        xs.append(xs[-1] + (widths[i - 1] + widths[i]) / 2 + gap)
    heights = [max(_lines(labels[(i, r)]) * LINE_H + BOX_PAD_H
                   for i in range(len(names)) if (i, r) in labels) if any(
        (i, r) in labels for i in range(len(names))) else 0.1 for r in range(end + 1)]
    ys = [0.0]
    for r in range(1, end + 1):
        ys.append(ys[-1] - (heights[r - 1] + heights[r]) / 2 - ROW_GAP)

    g = new_graph("msc", title)
    g.attr(layout="neato", splines="false", overlap="true", outputorder="edgesfirst")
    deepest = max((gr.depth for gr in groups), default=0)
    for k, gr in enumerate(groups):  # first, so that the lanes' boxes are drawn over them
        pad = GROUP_PAD * (1 + deepest - gr.depth)
        left = xs[gr.first] - widths[gr.first] / 2 - pad
        right = xs[gr.last] + widths[gr.last] / 2 + pad
        top = ys[0] + heights[0] / 2 + pad + GROUP_LABEL_H
        bottom = ys[end] - heights[end] / 2 - pad
        g.node(f"group{k}", label=html(gr.label), shape="box", style="rounded,dashed,filled",
               fillcolor=GROUP_FILL, color=GROUP_COLOUR, fontcolor=GROUP_COLOUR,
               fontsize="12", labelloc="t", fixedsize="true", width=f"{right - left:.3f}",
               height=f"{top - bottom:.3f}", pos=f"{(left + right) / 2:.3f},"
               f"{(top + bottom) / 2:.3f}!")

    def pos(i: int, r: int) -> str:
        return f"{xs[i]:.3f},{ys[r]:.3f}!"

    def nid(i: int, r: int) -> str:
        return f"n{i}_{r}"

    for (i, r), label in sorted(labels.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if r == 0:
            g.node(nid(i, r), label=f"<{label}>", pos=pos(i, r), shape="box",
                   style="filled,bold", fillcolor="#e3eefa")
        elif r == end:
            g.node(nid(i, r), label=f"<{label}>", pos=pos(i, r), shape="box",
                   style="rounded,filled", fillcolor="white", color=LIFELINE)
        else:
            step = trace[r - 1]
            actor = names[i] == step.actor
            g.node(nid(i, r), label=f"<{label}>", pos=pos(i, r), shape="box",
                   style="rounded,filled", fillcolor="#fff8e1" if actor else "#f0f0f0",
                   color=ERROR_COLOUR if actor and step.error else "black")
    # boxes already placed, (centre x, centre y, width, height), for label placement
    boxes = [(xs[i], ys[r], _text_len(lb) * CHAR_W + 0.3, _lines(lb) * LINE_H + BOX_PAD_H)
             for (i, r), lb in labels.items()]
    for i in range(len(names)):
        g.edge(nid(i, 0), nid(i, end), style="dashed", color=LIFELINE, arrowhead="none")
    segments: list[Segment] = [((xs[a[0]], ys[a[1]]), (xs[a[2]], ys[a[3]])) for a in arrows]
    for k, (si, sr, di, dr, text, kind) in enumerate(arrows):
        for li, lr in ((si, sr), (di, dr)):
            if (li, lr) not in labels:  # a message leaves a lane where nothing else happens
                labels[(li, lr)] = ""
                g.node(nid(li, lr), label="", shape="point", width="0.03", pos=pos(li, lr),
                       color=LIFELINE)
        colour = BUS_COLOUR if kind == "bus" else MESSAGE_COLOUR
        g.edge(nid(si, sr), nid(di, dr), color=colour, penwidth="1.3",
               style="dashed" if kind == "flight" else "solid")
        text = text + (" (in flight)" if kind == "flight" else "")
        mx, my = _label_place(boxes, segments, (xs[si], ys[sr]), (xs[di], ys[dr]), len(text))
        boxes.append((mx, my, len(text) * CHAR_W * 0.8 + 0.1, 0.22))
        g.node(f"m{k}", label=html(text), pos=f"{mx:.3f},{my:.3f}!", shape="box",
               style="filled", fillcolor="white", color="white", fontcolor=colour,
               fontsize="9", margin="0.02,0.01", width="0", height="0")

    verdict = (f"<b>VIOLATED: {html(failure.name)}</b> ({html(failure.kind)})<br/>"
               f"{html(failure.message)}")
    inv = next((x for x in model.invariants if x.name == failure.name), None)
    if inv is not None and failure.kind == "invariant":
        verdict += f'<br/><font point-size="9">{html(Printer(model).expr(inv.expr))}</font>'
    g.node("violation", label=f"<{verdict}>", shape="box", color=ERROR_COLOUR,
           fontcolor=ERROR_COLOUR, penwidth="2",
           pos=f"{(xs[0] + xs[-1]) / 2:.3f},{ys[end] - heights[end] / 2 - 0.75:.3f}!")
    return g


def draw_failures(directory: str | Path, model: ir.Model, failures: Sequence[Any],
                  source: str, formats: tuple[str, ...] = FORMATS) -> list[str]:
    """Write one chart (DOT, SVG, PNG) per failure into ``directory``; returns the files.

    ``failures``: ``coherence.results.Failure`` objects, or trace dicts from a saved file.
    """
    written: list[str] = []
    stems: set[str] = set()
    for f in map(as_failure, failures):
        stem = file_stem(Path(model.file).stem, source, f.name)
        base, k = stem, 2
        while stem in stems:
            stem, k = f"{base}.{k}", k + 1
        stems.add(stem)
        written += write(chart(model, f, source), directory, stem, formats)
    return written
