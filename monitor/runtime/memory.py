"""The memory of a long-lived process between runs (``monitor schedule`` and the workers of a
cluster): freed memory kept for the next run, and garbage collected while the process is idle."""

from __future__ import annotations

import gc


def collect_between_runs() -> None:
    """Collect the last run's garbage now, while the process is idle, and set what lives on
    aside (:func:`gc.freeze`) until the next collection here: a full collection scans every
    long-lived object (the subjects' names, the arrays and columns kept for the next run),
    tens of milliseconds at 1M judgments, and would otherwise fall in the middle of some run
    (``bench/recompute.py``). What the frozen objects leave as garbage is collected the next
    time round."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


# glibc's mallopt parameters (malloc.h) and the values keep_freed_memory sets.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -2, -3, -8
_KEEP = (
    (_M_MMAP_THRESHOLD, 256 << 20),
    (_M_TRIM_THRESHOLD, 1 << 30),
    (_M_TOP_PAD, 64 << 20),
    (_M_ARENA_MAX, 1),
)


def keep_freed_memory() -> bool:
    """Let this long-lived process reuse the memory it frees rather than hand it back to the
    system after every run. By default glibc maps each large NumPy array afresh and unmaps it
    when freed, so every run touches its temporaries (tens of megabytes) page by page again:
    at 1M judgments about 15,000 page faults, 0.1 s of a 1.5 s incremental run
    (``bench/recompute.py``). Arrays below 256 MB then come from the heap, and up to 1 GB of
    free heap is kept; one heap for every thread (a run takes some measures in a second
    thread, whose own arena would map its arrays afresh). False where the C library has no
    ``mallopt`` (not glibc)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(mallopt(param, value) == 1 for param, value in _KEEP)
