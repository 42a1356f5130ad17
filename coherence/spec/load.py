"""The front end's entry points: file or text in, IR out (parse, then check & lower)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from coherence.errors import NO_SPAN, SpecError, read_source
from coherence.ir import Model
from coherence.spec.lower import lower
from coherence.spec.parse import parse


def load_spec_text(text: str, file: str = "<spec>",
                   overrides: Mapping[str, int] | None = None) -> Model:
    return lower(parse(text, file), file, text, dict(overrides or {}))


def load_spec(path: str | Path, overrides: Mapping[str, int] | None = None) -> Model:
    text = read_source(path, "spec")
    return load_spec_text(text, str(path), overrides)


def parse_overrides(items: list[str], agents: int | None = None) -> dict[str, int]:
    """``--param NAME=VALUE`` strings (and ``--agents N``) to a dict; bad ones are errors."""
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise SpecError(f"--param {item!r}: expected NAME=VALUE", NO_SPAN)
        try:
            out[name] = int(value)
        except ValueError:
            raise SpecError(f"--param {name}: {value!r} is not an integer", NO_SPAN) from None
    if agents is not None:
        out["agents"] = agents
    return out
