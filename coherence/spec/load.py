"""The front end's entry points: file or text in, IR out (parse, then check & lower)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import attrs
import lark

from coherence.errors import NO_SPAN, SpecError, read_source
from coherence.ir import Model
from coherence.spec.lower import lower
from coherence.spec.parse import parse, strip_bom


@attrs.frozen(eq=False)
class SpecSource:
    """A parsed spec kept with every model lowered from it (``Model.origin``), so that a back
    end can bind it to other parameter values without reading the file again (the file may
    have changed, and the command line's ``--param`` values must survive)."""

    file: str
    text: str
    tree: lark.Tree


def load_spec_text(text: str, file: str = "<spec>",
                   overrides: Mapping[str, int] | None = None) -> Model:
    text = strip_bom(text)
    source = SpecSource(file, text, parse(text, file))
    return _bind(source, dict(overrides or {}))


def _bind(source: SpecSource, values: dict[str, int]) -> Model:
    return attrs.evolve(lower(source.tree, source.file, source.text, values), origin=source)


def rebind(model: Model, overrides: Mapping[str, int]) -> Model:
    """``model`` with some parameters (``agents`` among them) set to other values, lowered again
    in memory from the parse tree it came from.

    Every other parameter keeps the value ``model`` was bound to (its command-line overrides
    included), and the result checks the same invariants and properties as ``model`` (what
    ``--skip`` dropped stays dropped). A value outside a parameter's range is a SpecError.
    """
    source = model.origin
    if not isinstance(source, SpecSource):
        raise SpecError(f"{model.file}: this model was not loaded from a spec, so it cannot be "
                        "bound to other parameter values", NO_SPAN)
    values = {p.name: p.value for p in model.params}
    values.update(overrides)
    other = _bind(source, values)
    keep_inv = {i.name for i in model.invariants}
    keep_prop = {p.name for p in model.properties}
    return attrs.evolve(
        other,
        invariants=tuple(i for i in other.invariants if i.name in keep_inv),
        properties=tuple(p for p in other.properties if p.name in keep_prop),
    )


def extend(model: Model, text: str) -> Model:
    """``model``'s spec with ``text`` (more declarations: inferred invariants) appended, bound
    to the same parameter values. Only ``text`` is parsed (the spec's tree is reused) and its
    errors point at the lines it would have in the spec. What ``model`` dropped stays dropped;
    the invariants of ``text`` are added."""
    source = model.origin
    if not isinstance(source, SpecSource):
        raise SpecError(f"{model.file}: this model was not loaded from a spec", NO_SPAN)
    sep = "" if source.text.endswith("\n") else "\n"
    pad = "\n" * (source.text.count("\n") + len(sep))
    extra = parse(pad + text, source.file)
    tree = lark.Tree(source.tree.data, [*source.tree.children, *extra.children])
    values = {p.name: p.value for p in model.params}
    other = _bind(SpecSource(source.file, source.text + sep + text, tree), values)
    before = {i.name for i in _bind(source, values).invariants}
    keep_inv = {i.name for i in model.invariants}
    keep_prop = {p.name for p in model.properties}
    return attrs.evolve(
        other,
        invariants=tuple(i for i in other.invariants
                         if i.name in keep_inv or i.name not in before),
        properties=tuple(p for p in other.properties if p.name in keep_prop),
    )


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
        # plain decimal digits only: int() would also take '1_0', ' 10' and non-ASCII digits
        if re.fullmatch(r"[+-]?[0-9]{1,18}", value) is None:
            raise SpecError(f"--param {name}: {value!r} is not an integer", NO_SPAN)
        out[name] = int(value)
    if agents is not None:
        out["agents"] = agents
    return out
