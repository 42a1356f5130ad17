"""Controller state machines: one diagram per machine of a spec.

Drawn the way the Primer's (Sorin, Hill & Wood) controller tables read as pictures: a node per
state (stable states solid, transient states dashed and shaded), one edge per (from, to) pair
carrying every transition between them as a line ``event / actions``. Processor events are
blue, message arrivals are written ``?Msg`` (CSP's receive) in dark red, internal rules are
purple; a message a state stalls is listed inside the state. A hierarchy's machine is drawn
once per kind, titled with its index tuple and how many instances run (``replication``).
"""

from __future__ import annotations

from pathlib import Path

import graphviz

from coherence import ir
from coherence.diagrams.pretty import Printer, paths
from coherence.diagrams.render import FONT, html, new_graph

EVENT_COLOUR = "#1f4e9c"
MESSAGE_COLOUR = "#8b1a1a"
RULE_COLOUR = "#6a2c91"
STABLE_FILL = "#e3eefa"
TRANSIENT_FILL = "#fff3d4"
WRAP = 46


def params_note(model: ir.Model) -> str:
    return ", ".join(f"{p.name}={p.value}" for p in model.params)


def machine_heading(machine: ir.Machine) -> str:
    """``L1[g: gpu, s: sm]`` for a hierarchy's machine, else the name."""
    if not machine.indices:
        return machine.name
    return f"{machine.name}[{', '.join(f'{f.name}: {f.type}' for f in machine.indices)}]"


def replication(model: ir.Model, machine: ir.Machine) -> str:
    """How many instances of the machine run, in words."""
    if machine.kind is ir.MachineKind.CACHE:
        return "cache controller, one per agent"
    if machine.kind is ir.MachineKind.HOME:
        return "home controller, one per line"
    count = 1
    for f in machine.indices:
        count *= f.type.size()
    per = " and ".join(str(f.type) for f in machine.indices)
    text = (f"one per {per} ({count} instance{'s' if count != 1 else ''})" if per
            else "one instance")
    if model.lines > 1:
        text += ", per line"
    processor = ir.event_machine(model)
    if processor is not None and processor.name == machine.name:
        text += "; the processors"
    return text


def event_text(model: ir.Model, t: ir.Transition, printer: Printer) -> tuple[str, str]:
    """The trigger of a transition as text, and its colour."""
    if t.kind is ir.TransitionKind.MESSAGE:
        text, colour = f"?{t.name}", MESSAGE_COLOUR
    elif t.kind is ir.TransitionKind.RULE:
        args = ", ".join(f"{p.name}: {p.type}" for p in t.params)
        text, colour = f"rule {t.name}{f'({args})' if args else ''}", RULE_COLOUR
    else:
        args = ", ".join(p.name for p in t.params)
        text, colour = f"{t.name}{f'({args})' if args else ''}", EVENT_COLOUR
    if t.guard is not None:
        text += f" [{printer.expr(t.guard)}]"
    return text, colour


def _wrap(parts: list[str], first: int) -> list[str]:
    """Pack action texts into lines of about WRAP characters (the first line is shorter)."""
    lines: list[str] = []
    current, room = "", WRAP - first
    for p in parts:
        piece = p if not current else f"; {p}"
        if current and len(current) + len(piece) > room:
            lines.append(current + ";")
            current, room = p, WRAP
        else:
            current += piece
    if current:
        lines.append(current)
    return lines


def transition_label(model: ir.Model, t: ir.Transition, printer: Printer,
                     actions: list[str]) -> str:
    """One control path of a transition as HTML-like label lines (left-aligned)."""
    trigger, colour = event_text(model, t, printer)
    head = f'<font color="{colour}">{html(trigger)}</font>'
    if not actions:
        return head + '<br align="left"/>'
    lines = _wrap(actions, len(trigger) + 3)
    out = f"{head} / {html(lines[0])}" + '<br align="left"/>'
    for line in lines[1:]:
        out += "    " + html(line) + '<br align="left"/>'
    return out


def machine_graph(model: ir.Model, machine: ir.Machine) -> graphviz.Digraph:
    """The controller FSM of one machine."""
    printer = Printer(model, machine)
    kind = replication(model, machine)
    var_text = "; ".join(f"{v.name}: {v.type} = {printer.expr(v.init)}" for v in machine.vars)
    title = (f"<<b>{html(machine_heading(machine))}</b> — {html(kind)}<br/>"
             f'<font point-size="10">{html(Path(model.file).name)} ({html(params_note(model))})'
             + (f"<br/>vars: {html(var_text)}" if var_text else "")
             + '<br/><font color="#1f4e9c">blue: processor event</font> · '
             '<font color="#8b1a1a">?M: message M arrives</font> · '
             '<font color="#6a2c91">rule</font> · solid: stable state · '
             "dashed: transient state</font>>")
    g = new_graph(machine.name, title)
    g.attr(rankdir="TB", nodesep="0.5", ranksep="0.6")
    stalls: dict[str, list[str]] = {s.name: [] for s in machine.states}
    for t in machine.transitions:
        if t.stall:
            for sname in t.states:
                stalls[sname].append(t.name)
    g.node("__init", label="", shape="point", width="0.12")
    for s in machine.states:
        label = f"<b>{html(s.name)}</b>"
        if stalls[s.name]:
            label += (f'<br/><font point-size="9">stall: '
                      f"{html(', '.join(stalls[s.name]))}</font>")
        style = "rounded,filled,bold" if s.stable else "rounded,filled,dashed"
        g.node(f"s_{s.name}", label=f"<{label}>", shape="box", style=style,
               fillcolor=STABLE_FILL if s.stable else TRANSIENT_FILL, margin="0.15,0.06")
    g.edge("__init", f"s_{machine.init_state}", arrowsize="0.7")
    edges: dict[tuple[str, str], list[str]] = {}
    for t in machine.transitions:
        if t.stall:
            continue
        for src in t.states:
            at = Printer(model, machine, src)  # tests of `state` are known in each source
            ways = paths(at, t.body)
            if len({dst for _, dst in ways}) == 1:  # one destination: keep `if`s inline
                ways = [(at.actions(t.body), ways[0][1])]
            for actions, dst in ways:
                label = transition_label(model, t, at, actions)
                edges.setdefault((src, dst or src), []).append(label)
    for (src, dst), labels in edges.items():
        g.edge(f"s_{src}", f"s_{dst}", label="<" + "".join(labels) + ">",
               fontname=FONT, arrowsize="0.8")
    return g


def spec_graphs(model: ir.Model) -> list[tuple[str, graphviz.Digraph]]:
    """(file stem, graph) for every machine of the spec: home first, or a hierarchy's in
    declaration order."""
    stem = Path(model.file).stem
    ordered = list(model.machines) if model.is_hierarchical else sorted(
        model.machines, key=lambda m: (m.kind is not ir.MachineKind.HOME, m.name))
    return [(f"{stem}.fsm.{m.name}", machine_graph(model, m)) for m in ordered]
