"""monitor: a quality monitor for annotation campaigns.

From Python (see docs/python.md)::

    import monitor

    result = monitor.analyze(df, kind="rating", scale_min=1, scale_max=5)
    result.workers.to_pandas()

    campaign = monitor.Campaign("sqlite:///monitor.db", "relevance")
    campaign.ingest("judgments.csv")
    campaign.recompute()

``analyze`` and ``Campaign`` are loaded on first use, so that ``import monitor`` (and
``monitor --help``) stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from monitor.core.version import __version__

if TYPE_CHECKING:
    from monitor.api import Analysis, Campaign, analyze

__all__ = ["Analysis", "Campaign", "__version__", "analyze"]

_API = frozenset({"Analysis", "Campaign", "analyze"})


def __getattr__(name: str) -> Any:  # noqa: ANN401 - the API's objects
    if name in _API:
        import monitor.api

        return getattr(monitor.api, name)
    raise AttributeError(f"module 'monitor' has no attribute {name!r}")
