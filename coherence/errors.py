"""One located error type for every bad input (spec, litmus file, command-line override).

Rendered like Rumur's and GCC's diagnostics: ``file:line:col: error: message``, then the source
line and a caret, so an editor can jump to it.
"""

from __future__ import annotations

from pathlib import Path

import attrs


@attrs.frozen
class Span:
    """A source position. Excluded from IR equality (``eq=False`` where it is used)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_SPAN = Span("<command line>", 0, 0)


class SpecError(Exception):
    """Bad input, located. The CLI turns it into exit code 2 and never shows a traceback."""

    def __init__(self, message: str, span: Span = NO_SPAN, source: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source

    def location(self) -> str:
        if self.span.line <= 0:
            return self.span.file
        return str(self.span)

    def render(self) -> str:
        head = f"{self.location()}: error: {self.message}"
        if self.source is None or self.span.line <= 0:
            return head
        lines = self.source.splitlines()
        if not 1 <= self.span.line <= len(lines):
            return head
        text = lines[self.span.line - 1].expandtabs(1)
        caret = " " * (max(self.span.col, 1) - 1) + "^"
        return f"{head}\n  {text}\n  {caret}"

    def __str__(self) -> str:
        return self.render()


def read_source(path: str | Path, what: str = "spec") -> str:
    """A user's input file as text; every way reading can fail becomes a located SpecError."""
    where = Span(str(path), 0, 0)
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("no such file" if what == "spec" else f"no such {what} file",
                        where) from None
    except IsADirectoryError:
        raise SpecError(f"is a directory, not a {what} file", where) from None
    except UnicodeDecodeError as e:
        raise SpecError(f"not UTF-8 text ({e.reason} at byte {e.start})", where) from None
    except OSError as e:
        raise SpecError(f"cannot read: {e.strerror}", where) from None
