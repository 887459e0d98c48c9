"""A campaign's coded arrays kept between runs, so that a run reads only what arrived.

Two places hold them: the memory of the :class:`ArrayCache` (the one a ``monitor schedule``
process keeps for its life in its :class:`~monitor.incremental.cache.RunCache`, so its runs after
the first read only new judgments) and a snapshot file per campaign under the ``cache_dir``
setting (a cold ``monitor recompute`` starts from it). Either is used only when
it still describes the database: same database, campaign (id and creation time) and spec,
schema revision and cache format, and :func:`monitor.store.arrays.extend_arrays` finds the
judgments up to its watermark unchanged (count and sum of ids). Anything else, or a full run,
loads afresh and replaces it. A snapshot extended by only a few judgments (``REWRITE_SHARE``)
is left as it was: reading those again costs the next cold run less than rewriting the file.

Snapshot files hold numbers and JSON only (NumPy ``.npz`` without pickles), written to a
temporary name and renamed, so a reader never sees half a file; a file that does not load is
ignored. The file name is a hash of the database URL (password left out) and the campaign id.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from monitor.core.catalog import Kind
from monitor.store.arrays import (
    CampaignArrays,
    extend_arrays,
    keep_pairs,
    kept_pairs,
    load_arrays,
)
from monitor.store.campaigns import CampaignCounts, CampaignInfo
from monitor.store.models import Campaign

log = logging.getLogger("monitor.store")

FORMAT = 1
"""Bump when the arrays or their coding change: older snapshots are then ignored."""
MAX_IN_MEMORY = 32
REWRITE_SHARE = 0.05
"""A snapshot extended by fewer judgments than this share of its own is not written again:
the next cold run reads those few again (cheap) instead of every run rewriting the file."""
_NUMERIC = ("ids", "workers", "items", "values", "duration_s", "worker_db_ids", "item_db_ids")
_OPTIONAL = ("ann_judgment", "ann_code", "ann_count", "created_s")
_PAIRS = ("pair_keys", "pair_latest")
"""Each (worker, item) pair and its latest judgment (ratings and labels): the extension of a
snapshot updates them with the new judgments instead of sorting every judgment again."""


def _schema_revision(session: Session) -> str:
    try:
        with session.begin_nested():
            return str(session.execute(text("SELECT version_num FROM alembic_version")).scalar())
    except Exception:  # noqa: BLE001 - a database made without alembic: no revision
        return "none"


def cache_meta(session: Session, campaign: CampaignInfo) -> dict[str, Any]:
    """What a kept copy must match to be used. The campaign's creation time tells a campaign
    from another that took its id (a database restored, or emptied and filled again)."""
    created = session.scalar(select(Campaign.created_at).where(Campaign.id == campaign.id))
    return {
        "format": FORMAT,
        "schema": _schema_revision(session),
        "campaign": campaign.id,
        "created": None if created is None else created.isoformat(),
        "kind": campaign.kind,
        "categories": list(campaign.categories or ()),
    }


def cache_key(session: Session, campaign: CampaignInfo) -> tuple[str, int]:
    url = session.get_bind().engine.url.render_as_string(hide_password=True)
    return hashlib.sha256(url.encode()).hexdigest()[:20], campaign.id


class ArrayCache:
    """Load a campaign's arrays, from memory or a snapshot in ``directory`` when they are
    still good, extended with what arrived. ``directory`` None: memory only; ``memory``
    False: the snapshot only (as a new process would)."""

    def __init__(self, directory: str | Path | None = None, *, memory: bool = True) -> None:
        self.directory = Path(directory) if directory else None
        self.memory = memory
        self._kept: OrderedDict[tuple[str, int], tuple[dict[str, Any], CampaignArrays]] = (
            OrderedDict()
        )
        self.source = ""
        """Where the last load started from: ``memory``, ``snapshot`` or ``database``."""

    def load(
        self,
        session: Session,
        campaign: CampaignInfo,
        watermark: int,
        *,
        full: bool = False,
        counted: CampaignCounts | None = None,
    ) -> CampaignArrays:
        """The arrays up to ``watermark``; ``counted``: the campaign's counts with ``watermark``
        their ``max_id``, read in the same snapshot (see :func:`extend_arrays`)."""
        key = cache_key(session, campaign)
        meta = cache_meta(session, campaign)
        arrays = None
        stale = True  # the file is worth writing again
        if not full and campaign.kind != Kind.PAIRWISE:
            for source, kept in (("memory", self._from_memory), ("snapshot", self._from_file)):
                base = kept(key, meta)
                if base is not None:
                    arrays = extend_arrays(session, campaign, base, watermark, counted)
                    if arrays is not None:
                        self.source = source
                        stale = arrays.n - base.n > REWRITE_SHARE * base.n
                        break
                    log.info("%s: kept arrays out of date, loading afresh", campaign.name)
                    break
        if arrays is None:
            arrays = load_arrays(session, campaign, watermark)
            self.source = "database"
        if campaign.kind != Kind.PAIRWISE:
            # A process that kept them in memory needs no file; others leave one for the next
            # (unless the one they started from is nearly as good).
            self._keep(key, meta, arrays, write=self.source != "memory" and stale)
        return arrays

    def _from_memory(self, key: tuple[str, int], meta: dict) -> CampaignArrays | None:
        if not self.memory or key not in self._kept:
            return None
        kept_meta, arrays = self._kept[key]
        return arrays if kept_meta == meta else None

    def _path(self, key: tuple[str, int]) -> Path | None:
        return None if self.directory is None else self.directory / f"{key[0]}-{key[1]}.npz"

    def _from_file(self, key: tuple[str, int], meta: dict) -> CampaignArrays | None:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                stored = json.loads(bytes(z["meta"]).decode())
                if stored.pop("meta") != meta:
                    return None
                fields: dict[str, Any] = {k: z[k] for k in _NUMERIC}
                fields.update({k: z[k] for k in _OPTIONAL if k in z.files})
                pairs = [z[k] for k in _PAIRS] if _PAIRS[0] in z.files else None
        except Exception as exc:  # noqa: BLE001 - a damaged snapshot is only a missed shortcut
            log.warning("ignoring array snapshot %s: %s", path, exc)
            return None
        worker_ids = np.empty(len(stored["worker_ids"]), dtype=object)
        worker_ids[:] = stored["worker_ids"]
        item_ids = np.empty(len(stored["item_ids"]), dtype=object)
        item_ids[:] = stored["item_ids"]
        arrays = CampaignArrays(
            kind=meta["kind"],
            order=np.empty(0, dtype=np.int64),  # recomputed when extended
            worker_ids=worker_ids,
            item_ids=item_ids,
            item_gold=np.empty(0, dtype=object),  # reloaded when extended
            categories=tuple(stored["categories"]),
            annotation_names=tuple(stored["annotation_names"]),
            **fields,
        )
        if pairs is not None:  # the order of the kept judgments among themselves is kept
            keep_pairs(arrays, *pairs)
        return arrays

    def _keep(self, key: tuple[str, int], meta: dict, arrays: CampaignArrays, write: bool) -> None:
        if self.memory:
            # Shared with the next run: a measure that wrote into them would change its input.
            for name in (*_NUMERIC, *_OPTIONAL, "order"):
                a = getattr(arrays, name)
                if a is not None:
                    a.flags.writeable = False
            self._kept[key] = (meta, arrays)
            self._kept.move_to_end(key)
            while len(self._kept) > MAX_IN_MEMORY:
                self._kept.popitem(last=False)
        path = self._path(key)
        if path is None or not write:
            return
        stored = {
            "meta": meta,
            "worker_ids": arrays.worker_ids.tolist(),
            "item_ids": arrays.item_ids.tolist(),
            "categories": list(arrays.categories),
            "annotation_names": list(arrays.annotation_names),
        }
        blobs = {k: getattr(arrays, k) for k in _NUMERIC}
        blobs.update({k: getattr(arrays, k) for k in _OPTIONAL if getattr(arrays, k) is not None})
        if arrays.kind in (Kind.RATING, Kind.LABEL):
            _ = arrays.latest  # every run of these campaigns asks for it; it keeps the pairs
            kept = kept_pairs(arrays)
            if kept is not None:
                blobs.update(zip(_PAIRS, kept, strict=True))
        blobs["meta"] = np.frombuffer(json.dumps(stored).encode(), dtype=np.uint8)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        except OSError as exc:  # a read-only or full disk: the next run loads afresh
            log.warning("could not write array snapshot %s: %s", path, exc)
            return
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **blobs)
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not write array snapshot %s: %s", path, exc)
            Path(tmp).unlink(missing_ok=True)
