"""Rows of one file that give one judgment id to different judgments.

A row with a judgment id is that judgment: a second row of the file with the same id and the
same judgment (worker, item or pair, answer) is a duplicate, but one with another judgment
means the file contradicts itself, and keeping either row would be a silent choice. The ingest
refuses such rows, naming both lines, or sets all of them aside with ``--skip-invalid``.
(Across files the first stored judgment stays the judgment of its id.)

The ids are told apart by the 16-byte digest of their dedup key (what the store keeps unique).
Every chunk's ids are looked up against those of the file's earlier chunks, kept as sorted
NumPy runs merged two by two (32 bytes a row with an id: the first 16 bytes of the digest,
a 64-bit fingerprint of the judgment and the line); rows without an id are keyed by their
content, so they cannot disagree with a row of the same key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from monitor.ingest.validate import shown
from monitor.store.models import DIGEST_SIZE

__all__ = ["Clash", "Repeats", "clash_words"]

_HI, _LO = 0, 1


@dataclass(frozen=True)
class Clash:
    """Rows of one file that give the id ``digest`` to different judgments: ``lines`` are all
    the rows known with that id (in file order), ``indices`` those of this chunk (positions in
    its records); ``earlier`` is the line of the first row when it came in an earlier chunk
    and is set aside now (it may have been stored: the ingest takes it back)."""

    digest: bytes
    lines: tuple[int, ...]
    indices: tuple[int, ...]
    earlier: int | None


@dataclass
class _Run:
    """Sorted ids (digest halves) with each row's judgment fingerprint and line."""

    hi: np.ndarray
    lo: np.ndarray
    judged: np.ndarray
    line: np.ndarray

    def __len__(self) -> int:
        return len(self.hi)

    @staticmethod
    def merge(a: _Run, b: _Run) -> _Run:
        hi, lo = np.concatenate((a.hi, b.hi)), np.concatenate((a.lo, b.lo))
        order = np.lexsort((lo, hi))
        judged, line = np.concatenate((a.judged, b.judged)), np.concatenate((a.line, b.line))
        return _Run(hi[order], lo[order], judged[order], line[order])

    def find(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """For each id, its position in the run, -1 when it is not there."""
        at = np.searchsorted(self.hi, hi)
        inside = at < len(self.hi)
        safe = np.where(inside, at, 0)
        same = inside & (self.hi[safe] == hi)
        found = np.where(same & (self.lo[safe] == lo), safe, -1)
        for k in np.flatnonzero(same & (found < 0)):  # equal first halves: look at each
            for j in range(int(at[k]), len(self.hi)):
                if self.hi[j] != hi[k]:
                    break
                if self.lo[j] == lo[k]:
                    found[k] = j
                    break
        return found


class Repeats:
    """The judgment ids of one file seen so far, chunk after chunk, and what each judged."""

    def __init__(self, pairwise: bool) -> None:
        # What a record judged: worker, item (or left, right), answer (value, label, set).
        self.judged = (0, 1, 2, 3) if pairwise else (0, 1, 2, 3, 9)
        self.runs: list[_Run] = []
        self.set_aside: dict[bytes, tuple[int, ...]] = {}  # id -> its lines, once clashing

    def clashes(self, records: Sequence[tuple[Any, ...]]) -> list[Clash]:
        """The ids of this chunk's records (in file order) that the file gives to different
        judgments, in this chunk or with an earlier one, or that are set aside already; then
        the chunk's other ids are remembered."""
        keyed = [i for i, r in enumerate(records) if r[5] is not None]
        if not keyed:
            return []
        size, sha, judged = DIGEST_SIZE, hashlib.sha256, self.judged
        groups: dict[bytes, list[int]] = {}
        for i in keyed:
            groups.setdefault(sha(records[i][4].encode()).digest()[:size], []).append(i)
        mark = {i: hash(tuple(records[i][k] for k in judged)) for i in keyed}
        earlier = self._earlier([d for d in groups if d not in self.set_aside])
        found: list[Clash] = []
        new: list[tuple[bytes, int]] = []
        for digest, members in groups.items():
            lines = tuple(records[i][-1] for i in members)
            if digest in self.set_aside:
                self.set_aside[digest] += lines
                found.append(Clash(digest, self.set_aside[digest], tuple(members), None))
                continue
            first = earlier.get(digest)
            reference = mark[members[0]] if first is None else first[0]
            if any(mark[i] != reference for i in members):
                before = () if first is None else (first[1],)
                self.set_aside[digest] = before + lines
                line = None if first is None else first[1]
                found.append(Clash(digest, before + lines, tuple(members), line))
            elif first is None:
                new.append((digest, members[0]))
        self._remember(new, mark, records)
        return sorted(found, key=lambda c: c.indices[0])

    def _earlier(self, digests: list[bytes]) -> dict[bytes, tuple[int, int]]:
        """``id -> (judgment fingerprint, line)`` of the ids an earlier chunk had."""
        if not self.runs or not digests:
            return {}
        halves = np.frombuffer(b"".join(digests), dtype="<u8").reshape(-1, 2)
        out: dict[bytes, tuple[int, int]] = {}
        for run in self.runs:
            at = run.find(halves[:, _HI], halves[:, _LO])
            for k in np.flatnonzero(at >= 0).tolist():
                out.setdefault(digests[k], (int(run.judged[at[k]]), int(run.line[at[k]])))
        return out

    def _remember(
        self, new: list[tuple[bytes, int]], mark: dict[int, int], records: Sequence[tuple[Any, ...]]
    ) -> None:
        """Keep the ids new to the file as a sorted run; merge runs of similar sizes."""
        if not new:
            return
        halves = np.frombuffer(b"".join(d for d, _ in new), dtype="<u8").reshape(-1, 2)
        hi, lo = halves[:, _HI].copy(), halves[:, _LO].copy()
        order = np.lexsort((lo, hi))
        judged = np.array([mark[i] for _, i in new], dtype=np.int64)
        lines = np.array([records[i][-1] for _, i in new], dtype=np.int64)
        self.runs.append(_Run(hi[order], lo[order], judged[order], lines[order]))
        while len(self.runs) > 1 and len(self.runs[-2]) <= 2 * len(self.runs[-1]):
            b, a = self.runs.pop(), self.runs.pop()
            self.runs.append(_Run.merge(a, b))


def clash_words(external: str, others: Sequence[int]) -> tuple[str, str]:
    """The message and hint of a row whose id ``external`` the rows on the lines ``others``
    give to another judgment."""
    lines = sorted(set(others))
    if not lines:
        place = "given twice on this line"
    elif len(lines) == 1:
        place = f"also on line {lines[0]}"
    else:
        place = f"also on lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}"
    return (
        f"the judgment id {shown(external)} is {place}, and these rows do not give the same "
        "judgment (worker, item, answer)",
        "one id names one judgment: which one is meant? Correct the file; with --skip-invalid "
        "all of these rows are set aside",
    )
