"""Hypothesis example counts: ``MONITOR_HYPOTHESIS=thorough`` (the slow job, see README) runs ten
times a property's usual number of random examples; ``tests/conftest.py`` loads the profile."""

from __future__ import annotations

import os

THOROUGH = os.environ.get("MONITOR_HYPOTHESIS") == "thorough"


def examples(n: int) -> int:
    """A property's number of examples: ``n``, or ``10 n`` in the thorough profile."""
    return 10 * n if THOROUGH else n
