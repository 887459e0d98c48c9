"""A tiny progress bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from monitor.errors import printable

WIDTH = 30


class Progress:
    """``with Progress("batch7.csv", total=bytes) as bar: bar.update(rows, done)``.

    ``total`` and ``done`` are in any unit (bytes of the file); without a total only the rows
    and the rate are shown. Redraws at most every ``interval`` seconds; silent when disabled
    or when the stream is not a terminal (pipes, logs, tests).
    """

    def __init__(
        self,
        label: str,
        *,
        total: int | None = None,
        enabled: bool = True,
        stream: TextIO | None = None,
        interval: float = 0.2,
    ) -> None:
        self.label = printable(label)  # a file name may hold what a terminal acts on
        self.total = total or None
        self.stream = stream or sys.stderr
        self.enabled = enabled and _is_tty(self.stream)
        self.interval = interval
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def update(self, rows: int, done: int | None = None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        rate = rows / max(now - self.start, 1e-9)
        text = f"{self.label} {rows:,} rows, {rate:,.0f} rows/s"
        if self.total and done is not None:
            share = min(done / self.total, 1.0)
            filled = int(share * WIDTH)
            text = f"{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {share:4.0%} " + (
                f"{rows:,} rows, {rate:,.0f} rows/s"
            )
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
