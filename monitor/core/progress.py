"""A tiny progress bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from monitor.core.errors import printable

WIDTH = 30
DELAY = 2.0
"""Seconds before the first drawing: work done sooner leaves the terminal untouched."""


class Progress:
    """``with Progress("batch7.csv", total=bytes) as bar: bar.update(rows, done)``.

    ``total`` and ``done`` are in any unit (bytes of the file); ``count`` is the number of
    ``unit`` (rows, judgments) done, whose rate is shown. With a total the bar, its share and
    the time left (extrapolated from the share done so far) are shown too. ``note`` says what is
    under way (a campaign, a step). Draws nothing before ``delay`` seconds (:data:`DELAY`), then at most every
    ``interval`` seconds; ``tick`` also redraws every ``interval`` from a helper thread between
    updates, so that a long step still shows its time passing. Silent when disabled or when the
    stream is not a terminal (pipes, logs, tests).
    """

    def __init__(
        self,
        label: str,
        *,
        total: int | float | None = None,
        enabled: bool = True,
        stream: TextIO | None = None,
        interval: float = 0.2,
        unit: str = "rows",
        delay: float | None = None,
        tick: bool = False,
    ) -> None:
        self.label = printable(label)  # a file name may hold what a terminal acts on
        self.total = total or None
        self.stream = stream or sys.stderr
        self.enabled = enabled and _is_tty(self.stream)
        self.interval = interval
        self.unit = unit
        self.delay = DELAY if delay is None else delay
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False
        self.count = 0
        self.done: int | float | None = None
        self.note = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if tick and self.enabled:
            self._ticker = threading.Thread(target=self._tick, name="monitor-progress", daemon=True)
            self._ticker.start()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def update(self, count: int, done: int | float | None = None, note: str | None = None) -> None:
        """``count`` units done (``done`` of the total); ``note``: what is under way now."""
        if not self.enabled:
            return
        self.count, self.done = count, done
        if note is not None:
            self.note = printable(note)
        self._draw(force=note is not None)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw(force=True)

    def _draw(self, *, force: bool = False) -> None:
        now = time.monotonic()
        elapsed = now - self.start
        if elapsed < self.delay or (not force and now - self.last < self.interval):
            return
        with self._lock:
            if self._stop.is_set():
                return
            self.last = now
            self.stream.write("\r" + self.text(elapsed) + "\x1b[K")
            self.stream.flush()
            self.drawn = True

    def text(self, elapsed: float) -> str:
        """The line drawn after ``elapsed`` seconds."""
        rate = self.count / max(elapsed, 1e-9)
        parts = [self.label]
        if self.total and self.done is not None:
            share = min(max(self.done / self.total, 0.0), 1.0)
            filled = int(share * WIDTH)
            parts.append(f"[{'#' * filled}{'.' * (WIDTH - filled)}] {share:4.0%}")
        if self.count:
            parts.append(f"{self.count:,} {self.unit}, {rate:,.0f} {self.unit}/s")
        parts.append(_clock(elapsed))
        if self.total and self.done:
            left = elapsed * max(self.total - self.done, 0) / self.done
            parts.append(f"{_clock(left)} left")
        if self.note:
            parts.append(self.note)
        return f"{parts[0]} {', '.join(parts[1:])}"

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            if self.drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.drawn = False


def _clock(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
