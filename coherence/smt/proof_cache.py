"""NOTE(proof-cache): the proof obligations a proof for every N settled, kept in a file, so
that a proof stopped by ``--timeout``, Ctrl-C or a kill resumes where it stopped, and runs on
several machines add up to one proof (MSI's inferred proof takes hours in one process).

A record says "this formula is unsat". Its key is the obligation's formula digest
(NOTE(formula-digest)): the same in every process that builds the same formula, up to the
names of fresh symbols. So a record is found again by a run on another machine, by a later
version of the tool that encodes the obligation the same way (a change to the order of the
tries or their budgets keeps the records), and by another spec whose obligation is the very
same formula; a mutant's obligation is another formula and matches nothing.

The file is only ever appended to, one JSON object per line, each written whole by one
``write`` (so forked workers and concurrent runs can share it); a line that does not parse
(a run killed mid-write) is skipped and reported, never rewritten.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import z3

from coherence.smt.formula_digest import Digest

# 3: the digest reads a fresh binder without its number (format 2's records of formulas with
# one, a multicast's, were keyed by how many fresh names the process had made)
FORMAT = 3


class CacheError(Exception):
    """The cache file cannot be used (a directory, unreadable, unwritable)."""


class ProofCache:
    """The settled obligations recorded in ``path`` (created when missing). ``known`` is
    read again from where it stopped whenever a key is missing from it, so a run sees what
    a concurrent run (or its own forked workers) settled since."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.known: set[str] = set()
        self.skipped: list[int] = []  # numbers of the lines that are not records
        self.other_format = 0  # records of an earlier format
        self._offset = 0
        self._lines = 0
        self._out: Any = None
        self._pid = -1
        self._context: tuple[int, ...] = ()
        self._state: Digest | None = None
        self._held: list[Any] = []
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

    def key(self, assertions: Sequence[Any]) -> str:
        """The digest of the conjunction of ``assertions``; the hypotheses (all but the
        last) are read once for the queries of an action that share them."""
        context = tuple(a.get_id() for a in assertions[:-1])
        if self._state is None or context != self._context:
            # the terms are held, so that no other term can take their ids while they key
            self._held = list(assertions[:-1])
            self._context, self._state = context, Digest().add(*self._held)
        return self._state.extended(assertions[-1])

    def has(self, key: str) -> bool:
        if key in self.known:
            return True
        self._read()
        return key in self.known

    def add(self, key: str, goal: str, what: str, seconds: float, spec: str) -> None:
        """Record the formula of ``key`` as unsat (one line, flushed: a kill loses at most
        it); ``goal``, ``what`` and ``spec`` say which obligation it was, for people."""
        if key in self.known:
            return
        line = json.dumps({"v": FORMAT, "key": key, "spec": spec, "goal": goal, "what": what,
                           "seconds": round(seconds, 3), "z3": z3.get_version_string()}) + "\n"
        if self._out is None or self._pid != os.getpid():  # a forked worker opens its own
            self._out = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            self._pid = os.getpid()
        self._out.write(line)
        self._out.flush()
        self.known.add(key)

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
                ok = isinstance(record, dict) and isinstance(record.get("key"), str)
            except ValueError:
                ok = False
            if ok and record.get("v") == FORMAT:
                self.known.add(record["key"])
            elif ok:
                self.other_format += 1  # keys of another scheme: they match nothing here
            elif raw.strip():
                self.skipped.append(self._lines)
        self._offset += end
