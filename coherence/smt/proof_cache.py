"""NOTE(proof-cache): the proof obligations a proof for every N settled, kept in a file, so
that a proof stopped by ``--timeout``, Ctrl-C or a kill resumes where it stopped, and runs on
several machines add up to one proof (MSI's inferred proof takes hours in one process).

A record says "this formula is unsat". Its key is the obligation's formula digest
(NOTE(formula-digest)): the same in every process that builds the same formula, up to the
names of fresh symbols. So a record is found again by a run on another machine, by a later
version of the tool that encodes the obligation the same way (a change to the order of the
tries or their budgets keeps the records), and by another spec whose obligation is the very
same formula; a mutant's obligation is another formula and matches nothing.

NOTE(proof-cache-subsets): an obligation is a conjunction, and one that is unsat stays unsat
with more conjuncts. So a record of format 4 keys an obligation by its anchor (the formulas
that name its fresh symbols: the domain, the action) and its goal, and lists its other
assertions (the hypotheses) as a set of digests read after the anchor
(``Digest.relative``); a later obligation with the same anchor and goal is settled by it when
its own hypotheses include that set. A spec whose inferred lines grew (a repair round, a set
completed at another size, MSI's 154 lines and the few added to them) keeps every record of
the smaller set. Each set is written once (a ``set`` line) and named by its digest.

The file is only ever appended to, one JSON object per line, each written whole by one
``write`` (so forked workers and concurrent runs can share it); a line that does not parse
(a run killed mid-write) is skipped and reported, never rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

import attrs
import z3

from coherence.smt.formula_digest import Digest

# 3: the digest reads a fresh binder without its number (format 2's records of formulas with
# one, a multicast's, were keyed by how many fresh names the process had made)
FORMAT = 3
SUBSETS = 4  # NOTE(proof-cache-subsets): records of an anchor, a goal and a set of hypotheses
SHORT = 32  # hex digits kept of a hypothesis's digest in a set (128 bits)


@attrs.frozen
class Entry:
    """An obligation as a format-4 record reads it."""

    anchor: str
    goal: str
    hyps: frozenset[str]
    name: str  # the set's name: the digest of its sorted members


@attrs.frozen
class Lookup:
    """What ``ProofCache.look`` found for one obligation."""

    key: str | None  # the exact digest (format 3), where it was needed
    entry: Entry | None  # None where a hypothesis names a fresh symbol the anchor does not
    found: bool


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
        self.sets: dict[str, frozenset[str]] = {}  # format 4: a set's name -> its members
        self.subsets: dict[tuple[str, str], list[str]] = {}  # (anchor, goal) -> set names
        self._anchor_ids: tuple[int, ...] | None = None
        self._anchor: tuple[Digest, str] | None = None
        self._relative: dict[int, str | None] = {}  # ast id -> its digest after the anchor
        self._anchor_held: list[Any] = []
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

    def look(self, assertions: Sequence[Any], anchor: Sequence[Any] | None) -> Lookup:
        """The obligation ``assertions`` (its goal last) looked up: where ``anchor`` is given,
        as a format-4 entry (NOTE(proof-cache-subsets)); by its exact digest where it has no
        entry, or where the file holds format-3 records (read up to now by ``covers``), which
        only that digest finds. Each digest walks every hypothesis: one, not both, where the
        file is all format 4."""
        entry = self.entry(assertions, anchor) if anchor is not None else None
        if entry is not None and self.covers(entry):
            return Lookup(None, entry, True)
        if entry is not None and not self.known:
            return Lookup(None, entry, False)
        key = self.key(assertions)
        return Lookup(key, entry, self.has(key))

    def entry(self, assertions: Sequence[Any], anchor: Sequence[Any]) -> Entry | None:
        ids = tuple(a.get_id() for a in anchor)
        if ids != self._anchor_ids:
            self._anchor_held = list(anchor)
            state = Digest().add(*anchor)
            self._anchor_ids, self._anchor = ids, (state, state.hexdigest())
            self._relative = {}
        assert self._anchor is not None
        state, anchor_hex = self._anchor
        inside = set(ids)
        hyps: set[str] = set()
        for a in assertions[:-1]:
            k = a.get_id()
            if k in inside:
                continue
            if k not in self._relative:
                self._anchor_held.append(a)  # held: no other term takes its id meanwhile
                self._relative[k] = state.relative(a)
            d = self._relative[k]
            if d is None:
                return None
            hyps.add(d[:SHORT])
        goal = state.relative(assertions[-1])
        if goal is None:
            return None
        members = frozenset(hyps)
        name = hashlib.sha256(",".join(sorted(members)).encode()).hexdigest()[:SHORT]
        return Entry(anchor_hex, goal, members, name)

    def covers(self, entry: Entry) -> bool:
        """Whether a format-4 record of ``entry``'s anchor and goal has hypotheses among its
        own (a record of this run, another's, or one written since the last read)."""
        if self._covered(entry):
            return True
        self._read()
        return self._covered(entry)

    def _covered(self, entry: Entry) -> bool:
        return any(self.sets[n] <= entry.hyps
                   for n in self.subsets.get((entry.anchor, entry.goal), ()) if n in self.sets)

    def record(self, look: Lookup, goal: str, what: str, seconds: float, spec: str) -> None:
        """Record ``look``'s obligation as unsat: as a format-4 record where it has an entry
        (an exact format-3 hit is upgraded so), else by its exact digest."""
        if look.entry is None:
            assert look.key is not None  # ``look`` digests what has no entry
            self.add(look.key, goal, what, seconds, spec)
            return
        e = look.entry
        if self._covered(e):
            return
        if e.name not in self.sets:
            self._write({"v": SUBSETS, "set": e.name, "hyps": sorted(e.hyps)})
            self.sets[e.name] = e.hyps
        self._write({"v": SUBSETS, "anchor": e.anchor, "goal_digest": e.goal, "hyps": e.name,
                     "spec": spec, "goal": goal, "what": what, "seconds": round(seconds, 3),
                     "z3": z3.get_version_string()})
        self.subsets.setdefault((e.anchor, e.goal), []).append(e.name)

    def _write(self, record: dict[str, Any]) -> None:
        if self._out is None or self._pid != os.getpid():  # a forked worker opens its own
            self._out = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            self._pid = os.getpid()
        self._out.write(json.dumps(record) + "\n")
        self._out.flush()

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
        self._write({"v": FORMAT, "key": key, "spec": spec, "goal": goal, "what": what,
                     "seconds": round(seconds, 3), "z3": z3.get_version_string()})
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
            except ValueError:
                record = None
            ok = isinstance(record, dict) and isinstance(record.get("key"), str)
            if ok and record.get("v") == FORMAT:
                self.known.add(record["key"])
            elif isinstance(record, dict) and record.get("v") == SUBSETS and self._subset(record):
                continue
            elif ok:
                self.other_format += 1  # keys of another scheme: they match nothing here
            elif raw.strip():
                self.skipped.append(self._lines)
        self._offset += end

    def _subset(self, record: dict[str, Any]) -> bool:
        """Take a format-4 line (a set, or a record naming one); False if it is not one."""
        hyps = record.get("hyps")
        if isinstance(record.get("set"), str) and isinstance(hyps, list):
            self.sets[record["set"]] = frozenset(str(h) for h in hyps)
            return True
        anchor, goal = record.get("anchor"), record.get("goal_digest")
        if isinstance(anchor, str) and isinstance(goal, str) and isinstance(hyps, str):
            names = self.subsets.setdefault((anchor, goal), [])
            if hyps not in names:
                names.append(hyps)
            return True
        return False
