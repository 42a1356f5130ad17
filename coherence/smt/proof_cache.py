"""NOTE(proof-cache): the proof obligations a proof for every N settled, kept in a file, so
that a proof stopped by ``--timeout``, Ctrl-C or a kill resumes where it stopped, and runs on
several machines add up to one proof (MSI's inferred proof takes hours in one process).

A record says "this obligation is unsat". Its key is a SHA-256 of what fixes the
obligation's formula: the IR of the spec as proved (aux lines, ``--param`` and ``--skip``
applied; its ``repr``, which leaves out source positions, so an edited comment keeps the
records), the hierarchical shape, every source file of the ``coherence`` package (any edit
of the tool starts afresh), Z3's version, and the obligation's name (property, action, the
action that errs after it). A record of any other spec, code or Z3
never matches, so one file can serve many specs. The key is not a hash of the SMT text: Z3
numbers its fresh names and let-bindings in the order terms were made, which differs
between processes, so the same obligation prints differently (measured on MSI).

The file is only ever appended to, one JSON object per line, each written whole by one
``write`` (so forked workers and concurrent runs can share it); a line that does not parse
(a run killed mid-write) is skipped and reported, never rewritten.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import z3

FORMAT = 1


@functools.cache
def code_digest() -> str:
    """SHA-256 of every ``.py`` file of the installed ``coherence`` package (path and bytes)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def fingerprint(model: Any, shape: Any = None) -> str:
    """What every obligation of ``model``'s proof (for every size of ``shape``'s index, for a
    hierarchical spec) depends on besides its own name."""
    h = hashlib.sha256()
    for part in (f"coherence-proof-cache {FORMAT}", code_digest(), z3.get_version_string(),
                 repr(model), repr(shape)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class CacheError(Exception):
    """The cache file cannot be used (a directory, unreadable, unwritable)."""


class ProofCache:
    """The settled obligations recorded in ``path`` (created when missing). ``known`` is
    read again from where it stopped whenever a key is missing from it, so a run sees what
    a concurrent run (or its own forked workers) settled since."""

    def __init__(self, path: str, fingerprint: str) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self.known: set[str] = set()
        self.skipped: list[int] = []  # numbers of the lines that are not records
        self._offset = 0
        self._lines = 0
        self._out: Any = None
        self._pid = -1
        if os.path.isdir(path):
            raise CacheError(f"{path}: is a directory, not a proof-cache file")
        try:
            with open(path, "a+b") as f:  # created when missing; fails early when unwritable
                f.seek(0, os.SEEK_END)
                if f.tell() > 0:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":  # a run killed mid-line: end that line, so that
                        f.write(b"\n")  # the next record is not glued to it
        except OSError as e:
            raise CacheError(f"{path}: cannot write the proof cache ({e.strerror})") from e
        self._read()

    def key(self, goal: str, what: str, ident: tuple[str, int, int]) -> str:
        text = json.dumps([self.fingerprint, goal, what, list(ident)])
        return hashlib.sha256(text.encode()).hexdigest()

    def has(self, goal: str, what: str, ident: tuple[str, int, int]) -> bool:
        k = self.key(goal, what, ident)
        if k in self.known:
            return True
        self._read()
        return k in self.known

    def add(self, goal: str, what: str, ident: tuple[str, int, int], seconds: float,
            spec: str) -> None:
        """Record the obligation as unsat (one line, flushed: a kill loses at most it)."""
        k = self.key(goal, what, ident)
        if k in self.known:
            return
        line = json.dumps({"v": FORMAT, "key": k, "spec": spec, "goal": goal, "what": what,
                           "seconds": round(seconds, 3)}) + "\n"
        if self._out is None or self._pid != os.getpid():  # a forked worker opens its own
            self._out = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            self._pid = os.getpid()
        self._out.write(line)
        self._out.flush()
        self.known.add(k)

    def _read(self) -> None:
        """Take the complete lines written since the last read."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except OSError as e:
            raise CacheError(f"{self.path}: cannot read the proof cache ({e.strerror})") from e
        end = chunk.rfind(b"\n") + 1  # a line still being written waits for the next read
        for raw in chunk[:end].splitlines():
            self._lines += 1
            try:
                record = json.loads(raw)
                ok = (isinstance(record, dict) and record.get("v") == FORMAT
                      and isinstance(record.get("key"), str))
            except ValueError:
                ok = False
            if ok:
                self.known.add(record["key"])
            elif raw.strip():
                self.skipped.append(self._lines)
        self._offset += end
