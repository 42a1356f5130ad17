"""Failure identity: the one definition of which failures are "the same" in every engine.

NOTE(failure-keys): keys carry no values and no agent names (``results.FailureKey``), so a
failure found by the reference engine, the compiled engine or any other has one key, and a
property fails once in a report however many agents or values show it.
"""

from __future__ import annotations

from coherence.results import FailureKey
from coherence.semantics import CoherenceViolation, ModelError, Outcome, Violation

DEADLOCK: FailureKey = ("deadlock",)


def error_keys(err: ModelError) -> list[FailureKey]:
    """The keys of an action's model error (a coherence violation may break several
    coherence properties at once)."""
    if isinstance(err, CoherenceViolation):
        return [("coherence", name) for name in err.properties]
    return [("error", err.code, str(err.span) if err.span is not None else "")]


def outcome_keys(out: Outcome) -> list[FailureKey]:
    return error_keys(out.error) if out.error is not None else []


def violation_key(v: Violation) -> FailureKey:
    if v.key:
        return v.key
    return (v.kind, v.name)


def key_kind(key: FailureKey) -> str:
    return key[0]


def key_name(key: FailureKey) -> str:
    """The property a key belongs to, as reports name it."""
    kind = key[0]
    if kind == "deadlock":
        return "deadlock"
    if kind == "no-transition":
        return key[2]
    if kind == "error" and len(key) == 3:
        return "error"
    return key[1]


def property_of(key: FailureKey) -> str:
    """The entry of ``CheckResult.properties`` that a failure breaks."""
    kind = key[0]
    if kind == "no-transition":
        return "no-transition"
    if kind == "deadlock":
        return "deadlock"
    if kind == "error":
        return "errors" if len(key) == 3 else key[1]
    return key[1]
