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
        lines = self.source.split("\n")  # as the parsers count lines (not splitlines)
        if not 1 <= self.span.line <= len(lines):
            return head
        text = lines[self.span.line - 1].rstrip("\r").expandtabs(1)
        caret = " " * (max(self.span.col, 1) - 1) + "^"
        return f"{head}\n  {text}\n  {caret}"

    def __str__(self) -> str:
        return self.render()


def read_source(path: str | Path, what: str = "spec") -> str:
    """A user's input file as text; every way reading can fail becomes a located SpecError (a
    byte that is not UTF-8 is located by line and column). A leading byte-order mark is
    dropped."""
    where = Span(str(path), 0, 0)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise SpecError("no such file" if what == "spec" else f"no such {what} file",
                        where) from None
    except IsADirectoryError:
        raise SpecError(f"is a directory, not a {what} file", where) from None
    except OSError as e:
        raise SpecError(f"cannot read: {e.strerror or e}", where) from None
    return decode_source(data, str(path))


def decode_source(data: bytes, file: str) -> str:
    """``data`` as UTF-8 text without a leading byte-order mark; a bad byte is a SpecError at
    its line and column (columns count characters, as in every other error)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        col = len(data[line_start:e.start].decode("utf-8", errors="replace")) + 1
        source = data.decode("utf-8", errors="replace")
        shown = source.split("\n")[line - 1]
        printable = all(c.isprintable() or c == "\t" for c in shown)  # else: a binary file
        raise SpecError(f"not UTF-8 text: byte 0x{data[e.start]:02x} ({e.reason})",
                        Span(file, line, col), source if printable else None) from None
    return text[1:] if text.startswith("\ufeff") else text
