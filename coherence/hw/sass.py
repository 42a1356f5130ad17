"""Did the compiled code keep the program's order? A check on SASS from ``cuobjdump -sass``.

For each role's probe kernel, the memory instructions are read in order and classed: loads
(``LDG``, ``LD``), stores (``STG``, ``ST``), fences (``MEMBAR``, ``FENCE``), L1 invalidations
(``CCTL``). The loads and stores must appear in program order (plus the probe's final result
store), and every PTX fence must leave at least one fence instruction between its
neighbours unless it is cta-scoped (which may compile to nothing: reported, not failed).

What this cannot check, and says so: which register holds which location's address (the
order of classes is checked, not addresses), and the test kernel itself (the probes compile
the same role code with the same flags, inlined into a smaller kernel).
"""

from __future__ import annotations

import re

import attrs

_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def functions(sass: str) -> dict[str, list[str]]:
    """Function name -> its instructions' opcodes (with modifiers), in address order."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in sass.splitlines():
        m = _FUNC.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
            continue
        if current is not None:
            i = _INSN.search(line)
            if i:
                current.append(i.group(1))
    return out


def classify(opcode: str) -> str | None:
    head = opcode.split(".")[0]
    if head in ("LDG", "LD"):
        return "L"
    if head in ("STG", "ST"):
        return "S"
    if head in ("MEMBAR", "FENCE"):
        return "F"
    if head == "CCTL":
        return "C"
    if head in ("ATOM", "ATOMG", "RED"):
        return "A"
    return None


@attrs.frozen
class RoleCheck:
    role: int
    ok: bool
    memory_ops: tuple[str, ...]
    notes: tuple[str, ...]


def check_role(role: int, opcodes: list[str], expected: list[str],
               fence_scopes: list[str | None]) -> RoleCheck:
    """``expected``: L/S/F per PTX op in program order; the probe adds one final S."""
    mem = [(op, classify(op)) for op in opcodes if classify(op) is not None]
    got_ls = [c for _, c in mem if c in ("L", "S")]
    want_ls = [c for c in expected if c in ("L", "S")] + ["S"]
    notes: list[str] = []
    ok = True
    if got_ls != want_ls:
        ok = False
        notes.append(f"loads/stores {''.join(got_ls)} != program order {''.join(want_ls)}")
    else:
        # walk the program: between access k and k+1, a PTX fence needs an F instruction
        seq = [c for _, c in mem]
        positions = [i for i, c in enumerate(seq) if c in ("L", "S")]
        k = 0
        fence_i = 0
        for c in expected:
            if c in ("L", "S"):
                k += 1
                continue
            scope = fence_scopes[fence_i]
            fence_i += 1
            lo = positions[k - 1] if k > 0 else -1
            hi = positions[k] if k < len(positions) else len(seq)
            if "F" not in seq[lo + 1:hi]:
                if scope == "cta":
                    notes.append(f"fence {fence_i} (cta scope) compiled to no fence instruction")
                else:
                    ok = False
                    notes.append(f"fence {fence_i} ({scope} scope) has no fence instruction")
    return RoleCheck(role, ok, tuple(op for op, _ in mem), tuple(notes))
