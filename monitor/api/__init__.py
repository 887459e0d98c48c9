"""The Python API: :func:`analyze` for data in hand, :class:`Campaign` for a campaign in a
database. Each is a thin layer over the functions the commands use: ``monitor analyze`` is
:func:`analyze_file` and its printing, and a :class:`Campaign`'s methods are what ``monitor
ingest``, ``recompute``, ``report``, ``workers`` and ``export`` call.

pandas and polars are never imported here: a DataFrame is read through its own ``to_dicts``
(polars) or ``to_dict("records")`` (pandas), and :meth:`Table.to_pandas` imports pandas only
when it is called (the ``monitor[pandas]`` extra).
"""

from __future__ import annotations

from monitor.api.analysis import Analysis, analyze, analyze_file
from monitor.api.campaign import Campaign
from monitor.api.spec import KINDS as KINDS  # importable here, as it was
from monitor.api.spec import campaign_spec
from monitor.api.tables import Row, Table

__all__ = [
    "Analysis",
    "Campaign",
    "Row",
    "Table",
    "analyze",
    "analyze_file",
    "campaign_spec",
]
