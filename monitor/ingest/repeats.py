"""Rows of one file that give one judgment id to different judgments.

A row with a judgment id is that judgment: a second row of the file with the same id and the
same judgment (worker, item or pair, answer) is a duplicate, but one with another judgment
means the file contradicts itself, and keeping either row would be a silent choice. The ingest
refuses such rows, naming both lines, or sets all of them aside with ``--skip-invalid``.
(Across files the first stored judgment stays the judgment of its id.)

The ids are told apart by the 16-byte digest of their dedup key (what the store keeps unique).
Every chunk's ids are looked up against those of the file's earlier chunks, kept as sorted
NumPy runs merged two by two (32 bytes a row with an id: the 16-byte digest, a 64-bit
fingerprint of the judgment and the line; runs stop growing at :data:`MAX_RUN`
rows); rows without an id are keyed by their content, so they cannot disagree with a row of
the same key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from monitor.ingest.validate import shown
from monitor.store.models import DIGEST_SIZE

__all__ = ["Clash", "Repeats", "clash_words"]

_HI, _LO = 0, 1
# The longest run two runs are merged into: a merge copies both (a few times their 32 bytes a
# row), so past this size runs stay apart and a chunk looks in each.
MAX_RUN = 1 << 21
_KEY, _LINE = itemgetter(4), itemgetter(-1)  # a record's dedup key and line


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
    """Ids (digest halves) sorted by their first half, with each row's judgment fingerprint
    and line."""

    hi: np.ndarray
    lo: np.ndarray
    judged: np.ndarray
    line: np.ndarray

    def __len__(self) -> int:
        return len(self.hi)

    @staticmethod
    def merge(a: _Run, b: _Run) -> _Run:
        """One run of the ids of both."""
        hi, lo = np.concatenate((a.hi, b.hi)), np.concatenate((a.lo, b.lo))
        order = np.argsort(hi, kind="stable")  # two sorted runs: a merge
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

    def __init__(self, pairwise: bool, max_run: int = MAX_RUN) -> None:
        # What a record judged: worker, item (or left, right), answer (value, label, set).
        self.judged = itemgetter(0, 1, 2, 3) if pairwise else itemgetter(0, 1, 2, 3, 9)
        self.max_run = max_run
        self.runs: list[_Run] = []
        self.set_aside: dict[bytes, tuple[int, ...]] = {}  # id -> its lines, once clashing

    def clashes(self, records: Sequence[tuple[Any, ...]]) -> tuple[list[Clash], dict[str, bytes]]:
        """The ids of this chunk's records (in file order) that the file gives to different
        judgments, in this chunk or with an earlier one, or that are set aside already; and
        the digest of every key with an id (the loader needs them too). The chunk's other ids
        are remembered. The work per row is vectorised; only ids seen twice reach Python."""
        keyed = [i for i, r in enumerate(records) if r[5] is not None]
        if not keyed:
            return [], {}
        size, sha = DIGEST_SIZE, hashlib.sha256
        rows = [records[i] for i in keyed]
        keys = list(map(_KEY, rows))
        digests = [sha(key.encode()).digest()[:size] for key in keys]
        halves = np.frombuffer(b"".join(digests), dtype="<u8").reshape(-1, 2)
        hi, lo = halves[:, _HI], halves[:, _LO]
        n = len(keyed)
        order = np.lexsort((np.arange(n), lo, hi))  # by id, then file order
        same = (hi[order][1:] == hi[order][:-1]) & (lo[order][1:] == lo[order][:-1])
        starts = np.flatnonzero(np.concatenate(([True], ~same)))
        ends = np.append(starts[1:], n)
        firsts = order[starts]  # each id's first row in this chunk (positions in keyed)
        earlier = self._earlier(hi[firsts], lo[firsts])
        suspects = np.flatnonzero((ends - starts > 1) | (earlier[:, 0] >= 0))
        if self.set_aside:
            aside = [g for g, p in enumerate(firsts.tolist()) if digests[p] in self.set_aside]
            suspects = np.union1d(suspects, np.array(aside, dtype=np.int64))
        found: list[Clash] = []
        old = np.zeros(len(firsts), dtype=bool)  # ids not new to the file, or set aside now
        for g in suspects.tolist():
            members = sorted(order[starts[g] : ends[g]].tolist())
            clash = self._group(records, [keyed[p] for p in members], digests[members[0]],
                                earlier[g])  # fmt: skip
            old[g] = clash is not None or earlier[g, 0] >= 0
            if clash is not None:
                found.append(clash)
        new = firsts[~old]
        marks = np.fromiter(map(hash, map(self.judged, rows)), np.int64, n)
        lines = np.fromiter(map(_LINE, rows), np.int64, n)
        self._remember(hi[new], lo[new], marks[new], lines[new])
        found.sort(key=lambda c: c.indices[0])
        return found, dict(zip(keys, digests, strict=True))

    def _group(
        self,
        records: Sequence[tuple[Any, ...]],
        members: list[int],
        digest: bytes,
        earlier: np.ndarray,
    ) -> Clash | None:
        """The clash of the rows ``members`` of this chunk with one id, if they make one."""
        lines = tuple(records[i][-1] for i in members)
        if digest in self.set_aside:
            self.set_aside[digest] += lines
            return Clash(digest, self.set_aside[digest], tuple(members), None)
        marks = [hash(self.judged(records[i])) for i in members]
        first = None if earlier[0] < 0 else (int(earlier[1]), int(earlier[2]))
        reference = marks[0] if first is None else first[0]
        if all(m == reference for m in marks):
            return None
        before = () if first is None else (first[1],)
        self.set_aside[digest] = before + lines
        return Clash(digest, before + lines, tuple(members), None if first is None else first[1])

    def _earlier(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """For each id, ``(found, judgment fingerprint, line)`` in an earlier chunk; found is
        -1 when the id is new to the file."""
        out = np.full((len(hi), 3), -1, dtype=np.int64)
        for run in self.runs:
            at = run.find(hi, lo)
            hit = (at >= 0) & (out[:, 0] < 0)
            out[hit, 0] = 1
            out[hit, 1] = run.judged[at[hit]]
            out[hit, 2] = run.line[at[hit]]
        return out

    def _remember(
        self, hi: np.ndarray, lo: np.ndarray, marks: np.ndarray, lines: np.ndarray
    ) -> None:
        """Keep the ids new to the file as a sorted run; merge runs of similar sizes."""
        if not len(hi):
            return
        order = np.argsort(hi, kind="stable")
        self.runs.append(_Run(hi[order], lo[order], marks[order], lines[order]))
        while (
            len(self.runs) > 1
            and len(self.runs[-2]) <= 2 * len(self.runs[-1])
            and len(self.runs[-2]) + len(self.runs[-1]) <= self.max_run
        ):
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
