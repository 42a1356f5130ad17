"""Visited states of the reference engine: fixed-width packed states in one bytearray.

Each state is ``width`` bytes of the shared layout (``coherence.layout``), stored once; an
open-addressing table of int32 state ids (linear probing, at most 60 % full) finds them; an
int32 parent id per state rebuilds shortest paths. So a state costs its packed width, 4 bytes
of parent and 7-13 bytes of table, instead of a Python object per state.
"""

from __future__ import annotations

from array import array

EMPTY = -1
MAX_LOAD = 0.6


class PackedStore:
    def __init__(self, width: int, capacity: int = 64) -> None:
        self.width = width
        self.data = bytearray()
        self.parents = array("i")
        self.count = 0
        size = 1 << max(4, (int(capacity / MAX_LOAD)).bit_length())
        self.table = array("i", [EMPTY]) * size
        self.mask = size - 1

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, idx: int) -> bytes:
        w = self.width
        return bytes(self.data[idx * w:(idx + 1) * w])

    def _find(self, key: bytes) -> tuple[int, int]:
        """(slot, id): the id stored for ``key``, or EMPTY and the free slot to put it in."""
        w, data, table, mask = self.width, self.data, self.table, self.mask
        h = hash(key) & mask
        while True:
            j = table[h]
            if j == EMPTY or data[j * w:(j + 1) * w] == key:
                return h, j
            h = (h + 1) & mask

    def __contains__(self, key: bytes) -> bool:
        return self._find(key)[1] != EMPTY

    def add(self, key: bytes, parent: int) -> int | None:
        """The new state's id, or None when ``key`` is already stored."""
        slot, j = self._find(key)
        if j != EMPTY:
            return None
        idx = self.count
        self.table[slot] = idx
        self.data += key
        self.parents.append(parent)
        self.count += 1
        if self.count > MAX_LOAD * len(self.table):
            self._grow()
        return idx

    def _grow(self) -> None:
        size = 2 * len(self.table)
        self.table = array("i", [EMPTY]) * size
        self.mask = size - 1
        w, data, table, mask = self.width, self.data, self.table, self.mask
        for idx in range(self.count):
            h = hash(bytes(data[idx * w:(idx + 1) * w])) & mask
            while table[h] != EMPTY:
                h = (h + 1) & mask
            table[h] = idx

    def path_to(self, idx: int) -> list[int]:
        """State ids from an initial state to ``idx``."""
        path = []
        while idx >= 0:
            path.append(idx)
            idx = self.parents[idx]
        return path[::-1]

    def nbytes(self) -> int:
        return (len(self.data) + self.parents.itemsize * len(self.parents)
                + self.table.itemsize * len(self.table))
