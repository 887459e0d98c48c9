"""A Bloom filter of the dedup digests one file has stored: the lookups a fresh campaign can
skip while it is loaded (see :class:`~monitor.ingest.load.Loader`)."""

from __future__ import annotations

import numpy as np

from monitor.store.models import DIGEST_SIZE

__all__ = ["SeenKeys"]


class SeenKeys:
    """Which digests this file has stored already, as a Bloom filter of fixed size (constant
    memory): "no" is certain, "maybe" is checked against the database.

    While the campaign was empty when the file began (and the advisory lock keeps other ingests
    out), a key the filter has not seen cannot be stored, so only the "maybe" keys are looked
    up: on a fresh campaign the lookup of a whole chunk is skipped. 2^27 bits (16 MiB) and four
    probes keep false positives near 1e-6 at a million rows and 0.5% at ten million.
    """

    BITS = 1 << 27
    PROBES = 4

    def __init__(self) -> None:
        self.bits = np.zeros(self.BITS // 8, dtype=np.uint8)

    def _positions(self, digests: list[bytes]) -> np.ndarray:
        words = np.frombuffer(b"".join(digests), dtype="<u8").reshape(-1, DIGEST_SIZE // 8)
        h1, h2 = words[:, 0], words[:, 1] | np.uint64(1)
        steps = np.arange(self.PROBES, dtype=np.uint64)
        with np.errstate(over="ignore"):
            return (h1[:, None] + steps[None, :] * h2[:, None]) & np.uint64(self.BITS - 1)

    def add(self, digests: list[bytes]) -> np.ndarray:
        """Record ``digests``; return a mask of those that may have been recorded before."""
        if not digests:
            return np.zeros(0, dtype=bool)
        pos = self._positions(digests)
        byte, bit = (pos >> np.uint64(3)).astype(np.int64), (pos & np.uint64(7)).astype(np.uint8)
        flags = np.left_shift(np.uint8(1), bit)
        maybe = ((self.bits[byte] & flags) != 0).all(axis=1)
        np.bitwise_or.at(self.bits, byte.ravel(), flags.ravel())
        return maybe
