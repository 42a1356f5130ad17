"""The bundled litmus catalogue (``specs/litmus/*.litmus``) and name-or-path lookup."""

from __future__ import annotations

from pathlib import Path

from coherence.errors import NO_SPAN, SpecError
from coherence.litmus.parse import load_litmus
from coherence.litmus.program import Litmus

SUFFIX = ".litmus"


def catalogue_dir() -> Path:
    """``specs/litmus`` of the working directory if there is one, else of the source tree."""
    here = Path.cwd() / "specs" / "litmus"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "specs" / "litmus"


def catalogue_names(directory: Path | None = None) -> list[str]:
    d = directory or catalogue_dir()
    return sorted(p.name[: -len(SUFFIX)] for p in d.glob(f"*{SUFFIX}"))


def find_test(name_or_path: str, directory: Path | None = None) -> Litmus:
    """A litmus file by path, or a catalogue test by name (``MP``, ``SB``...)."""
    p = Path(name_or_path)
    if p.suffix == SUFFIX or p.exists():
        return load_litmus(p)
    d = directory or catalogue_dir()
    candidate = d / f"{name_or_path}{SUFFIX}"
    if candidate.exists():
        return load_litmus(candidate)
    names = catalogue_names(d)
    raise SpecError(f"no litmus test {name_or_path!r} (catalogue {d}: "
                    f"{', '.join(names) or 'empty'})", NO_SPAN)


def load_catalogue(names: list[str] | None = None, directory: Path | None = None) -> list[Litmus]:
    """Tests by name; ``None`` or ``["all"]`` means the whole catalogue."""
    if not names or names == ["all"]:
        names = catalogue_names(directory)
    return [find_test(n, directory) for n in names]
