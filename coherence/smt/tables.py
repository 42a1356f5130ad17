"""What every Z3 encoder looks up about a model: the semantics' index tables, and which kinds
of machine send each message (the source of a message in flight is always one of those)."""

from __future__ import annotations

from coherence import ir
from coherence.semantics import Semantics


class ModelTables:
    def __init__(self, model: ir.Model) -> None:
        self.model = model
        self.sem = Semantics(model)
        self.home = model.home
        self.cache = model.caches[0] if model.caches else None
        self.msg_index = self.sem.msg_index
        self.net_index = self.sem.net_index
        self.global_slot = self.sem.global_slot
        self.var_slot = self.sem.var_slot
        self.field_pos = self.sem.field_pos
        self.senders = message_senders(model, self.msg_index)
        self.to_home = messages_to_home(model, self.msg_index)


def message_senders(model: ir.Model,
                    msg_index: dict[str, int]) -> dict[int, set[ir.MachineKind]]:
    """Per message type, the kinds of machine (HOME, CACHE) with a send of it."""
    out: dict[int, set[ir.MachineKind]] = {i: set() for i in range(len(model.messages))}
    for machine in model.machines:
        for tr in machine.transitions:
            for st in ir.walk_stmts(tr.body):
                if isinstance(st, (ir.Send, ir.Broadcast)):
                    out[msg_index[st.message]].add(machine.kind)
    return out


def messages_to_home(model: ir.Model, msg_index: dict[str, int]) -> set[int]:
    """NOTE(home-sources): the message types every send of which names ``home`` itself as its
    destination (requests to a directory): each such message in flight is the home's. Empty
    in a hierarchical spec, which has no home."""
    home_only: dict[int, bool] = {}
    for machine in model.machines:
        for tr in machine.transitions:
            for st in ir.walk_stmts(tr.body):
                if isinstance(st, ir.Send):
                    to_home = (isinstance(st.dst, ir.Lit) and isinstance(st.dst.type, ir.NodeT)
                               and st.dst.value == st.dst.type.n)
                    t = msg_index[st.message]
                    home_only[t] = home_only.get(t, True) and to_home
                elif isinstance(st, (ir.Broadcast, ir.Multicast)):
                    home_only[msg_index[st.message]] = False
    return {t for t, only in home_only.items() if only}
