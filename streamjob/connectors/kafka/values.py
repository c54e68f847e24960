"""Record values of the bulk path without a Python bytes object per record.

:func:`join_values` builds the newline-joined buffer of a fetch's values (what the JSON
whole-slice decoder reads, :class:`.decode._JsonDecoder`) straight from the fetched,
decompressed record bytes with numpy: the bytes between values (record headers, keys,
batch headers) are dropped, and the byte after each value becomes the newline. No
``bytes`` object is made per record.

:class:`LazyValues` is the ``values`` sequence a :class:`.formats.RecordSlice` of the
bulk path carries: one or more ranges of fetched :class:`.batches.Columns` (or plain
lists, from kafka-python's fallbacks). It gives :meth:`LazyValues.joined` cheaply and
makes the per-record list only when a path indexes or iterates it (the per-record
decoders of :mod:`.formats`, malformed records, dead letters); that list is then what
:meth:`.batches.Columns.values` returns, so every path sees the same values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_NEWLINE = 0x0A


def join_values(data: bytes, pos: np.ndarray, length: np.ndarray) -> bytearray | None:
    """``b"\\n".join`` of the values ``data[pos[i]:pos[i] + length[i]]`` (numpy int64
    arrays of one length, positions increasing, values not overlapping), as a bytearray,
    or None when a value is null (length -1).

    Cost: one copy of the value bytes, plus a few numpy passes over the records (not
    over the bytes) and one over the bytes from the first value to the last one's end."""
    if len(length) and length.min() < 0:
        return None
    out = bytearray(_joined_size(length))
    _join_into(np.frombuffer(out, np.uint8), 0, data, pos, length)
    return out


def _joined_size(length: np.ndarray) -> int:
    return int(length.sum()) + len(length) - 1 if len(length) else 0


def _join_into(out: np.ndarray, at: int, data: bytes, pos: np.ndarray,
               length: np.ndarray) -> int:
    """Write the values (none null) newline-joined into ``out`` from ``at``; returns the
    position after the last value."""
    n = len(pos)
    if n == 0:
        return at
    size = _joined_size(length)
    dest = out[at:at + size]
    ends = pos + length
    # the byte after value i (i < n-1) is kept, as the newline; the bytes up to the next
    # value's start are dropped
    drop_from = ends[:-1] + 1
    drop_len = pos[1:] - drop_from
    first, last = int(pos[0]), int(ends[-1])
    if n > 1 and drop_len.min() < 0:  # values touching: not a record layout; join plainly
        dest[:] = np.frombuffer(b"\n".join(
            [data[p:e] for p, e in zip(pos.tolist(), ends.tolist())]), np.uint8)
        return at + size
    seg = np.frombuffer(data, np.uint8, count=last - first, offset=first)
    if size == last - first:  # nothing between the values but one byte each
        dest[:] = seg
    else:
        keep = np.ones(last - first, bool)
        total = int(drop_len.sum())
        rel = drop_from - first
        starts = np.repeat(rel - (np.cumsum(drop_len) - drop_len), drop_len)
        keep[starts + np.arange(total)] = False
        dest[:] = seg[keep]
    if n > 1:
        dest[np.cumsum(length[:-1] + 1) - 1] = _NEWLINE
    return at + size


class LazyValues(Sequence):
    """The values (bytes, None for null) of records taken from ``parts``: each part a
    ``(Columns, lo, hi)`` range of one fetch's records, or a list of values.

    Slicing with step 1 and :meth:`peek` are cheap; iterating, indexing and
    :meth:`tolist` make (once) the list of per-record bytes. :meth:`joined` gives the
    newline-joined buffer without it."""

    __slots__ = ("_parts", "_len", "_list")

    def __init__(self, parts: list) -> None:
        self._parts = [p for p in parts if _part_len(p)]
        self._len = sum(_part_len(p) for p in self._parts)
        self._list: list | None = None

    @classmethod
    def concat(cls, seqs: list) -> "LazyValues":
        """One sequence of ``seqs`` (LazyValues or lists) in order."""
        parts: list = []
        for s in seqs:
            parts += s._parts if isinstance(s, LazyValues) else [s]
        return cls(parts)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):
        if isinstance(i, slice):
            lo, hi, step = i.indices(self._len)
            if step != 1:
                return self.tolist()[i]
            return self._range(lo, max(lo, hi))
        return self.tolist()[i]  # record by record from here on: the list, made once

    def peek(self, i: int):
        """Value ``i`` (0 <= i < len) without making the list (one bytes object)."""
        if self._list is not None:
            return self._list[i]
        if not 0 <= i < self._len:
            raise IndexError("LazyValues index out of range")
        for part in self._parts:
            size = _part_len(part)
            if i < size:
                if isinstance(part, tuple):
                    cols, lo, _ = part
                    return cols.values(lo + i, lo + i + 1)[0]
                return part[i]
            i -= size
        raise IndexError("LazyValues index out of range")  # not reached

    def __iter__(self):
        return iter(self.tolist())

    def __eq__(self, other) -> bool:
        if isinstance(other, (LazyValues, list, tuple)):
            return self.tolist() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment] - mutable-like, as a list

    def __repr__(self) -> str:
        return f"LazyValues({self._len} values)"

    def tolist(self) -> list:
        """The values as a list of bytes/None (made once, then kept)."""
        if self._list is None:
            out: list = []
            for part in self._parts:
                if isinstance(part, tuple):
                    cols, lo, hi = part
                    out += cols.values(lo, hi)
                else:
                    out += part
            self._list = out
        return self._list

    def joined(self) -> bytearray | None:
        """``b"\\n".join(self)`` (as a bytearray) without per-record objects, or None
        when a value is null."""
        if self._list is not None:
            return _join_list(self._list)
        pieces = []
        for part in self._parts:
            if isinstance(part, tuple):
                cols, lo, hi = part
                length = cols.value_len[lo:hi]
                if length.min() < 0:
                    return None
                pieces.append((cols.data, cols.value_pos[lo:hi], length))
            else:
                piece = _join_list(part)
                if piece is None:
                    return None
                pieces.append(piece)
        sizes = [_joined_size(p[2]) if isinstance(p, tuple) else len(p) for p in pieces]
        out = bytearray(sum(sizes) + max(len(pieces) - 1, 0))
        view, at = np.frombuffer(out, np.uint8), 0
        for i, piece in enumerate(pieces):
            if i:
                view[at] = _NEWLINE
                at += 1
            if isinstance(piece, tuple):
                at = _join_into(view, at, *piece)
            else:
                view[at:at + len(piece)] = np.frombuffer(piece, np.uint8)
                at += len(piece)
        return out

    def _range(self, lo: int, hi: int) -> "LazyValues":
        parts, at = [], 0
        for part in self._parts:
            size = _part_len(part)
            a, b = max(lo - at, 0), min(hi - at, size)
            if a < b:
                if isinstance(part, tuple):
                    parts.append((part[0], part[1] + a, part[1] + b))
                else:
                    parts.append(part[a:b])
            at += size
            if at >= hi:
                break
        return LazyValues(parts)


def _part_len(part) -> int:
    return part[2] - part[1] if isinstance(part, tuple) else len(part)


def _join_list(values: list) -> bytearray | None:
    try:
        return bytearray(b"\n").join(values)
    except TypeError:
        return None  # a null value
