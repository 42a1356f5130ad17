"""Saved counterexample traces: one JSON format for check, prove and fuzz, read by diagram."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coherence.errors import Span, SpecError, read_source
from coherence.ir import Model
from coherence.trace import Step

FORMAT = "coherence-traces/1"


def traces_json(model: Model, failures: list[Any], source: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "source": source,
        "spec": model.file,
        "params": {p.name: p.value for p in model.params},
        "traces": [
            {"property": f.name, "kind": f.kind, "message": f.message,
             "steps": [s.to_json() for s in f.trace],
             "loop_start": getattr(f, "loop_start", None)}
            for f in failures
        ],
    }


def save_traces(path: str | Path, model: Model, failures: list[Any], source: str) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(traces_json(model, failures, source), indent=2) + "\n")
    tmp.replace(path)  # never leave a half-written file where the user's was


def load_traces(path: str | Path) -> dict[str, Any]:
    try:
        doc = json.loads(read_source(path, "trace"))
    except json.JSONDecodeError as e:
        raise SpecError(f"not valid JSON: {e.msg}", Span(str(path), e.lineno, e.colno)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SpecError(f"not a saved trace file (expected format {FORMAT!r})",
                        Span(str(path), 1, 1))
    for t in doc.get("traces", []):
        t["steps"] = [Step.from_json(s) for s in t["steps"]]
    return doc
