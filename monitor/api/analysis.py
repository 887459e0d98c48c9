"""Data in hand analysed: :func:`analyze` and :func:`analyze_file` run what ``monitor analyze``
runs (a throwaway database, ingest, recompute, the document) and give an :class:`Analysis`."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from monitor.api.records import data_source, write_jsonl
from monitor.api.spec import KINDS, campaign_spec
from monitor.api.tables import Row, Table
from monitor.core.errors import InputError, NotFound, UsageError

if TYPE_CHECKING:
    from monitor.core.settings import Settings
    from monitor.ingest.api import IngestSummary
    from monitor.pipeline.run import RunOutcome
    from monitor.report.shape import Document
    from monitor.store.campaigns import CampaignSpec

__all__ = ["Analysis", "analyze", "analyze_file"]


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyze` found: the JSON document of ``monitor analyze --json``
    (``document``) and its parts as tables. ``agreement`` holds one row a measure (``measure``,
    ``value``, ``interval``, ``n`` and the measure's own keys), ``flags`` the campaign's flags,
    ``pairs`` the pairs of a pairwise campaign (empty otherwise); the worker rows carry their
    ``decision`` and ``decision_reason``."""

    document: Document
    agreement: Table
    workers: Table
    items: Table
    pairs: Table
    flags: Table
    verdict: Row
    ingest: IngestSummary

    @classmethod
    def of(cls, document: Document, ingest: IngestSummary) -> Analysis:
        doc: Mapping[str, Any] = document  # its rows as the tables' plain dicts
        measures = doc.get("agreement", {}).get("measures", {})
        return cls(
            document=document,
            agreement=Table(
                "agreement",
                "measure",
                tuple({"measure": name, **value} for name, value in measures.items()),
            ),
            workers=Table("workers", "worker", tuple(doc.get("workers", ()))),
            items=Table("items", "item", tuple(doc.get("items", ()))),
            pairs=Table("pairs", "pair", tuple(doc.get("pairs", ()))),
            flags=Table("flags", None, tuple(doc.get("flags", ()))),
            verdict=Row("verdict", dict(doc.get("verdict") or {})),
            ingest=ingest,
        )


def analyze_file(
    path: Path,
    spec: CampaignSpec,
    settings: Settings,
    *,
    items: Path | None = None,
    format: str | None = None,  # noqa: A002 - the option's name
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
    delimiter: str | None = None,
    progress: bool = False,
    keep_db: Path | None = None,
) -> tuple[Analysis, RunOutcome]:
    """``monitor analyze``: ingest ``path`` into a throwaway SQLite database (or ``keep_db``),
    recompute every measure, and read the JSON document back. Nothing else is written."""
    from monitor.ingest.api import create_campaign, ingest_file
    from monitor.pipeline.run import recompute
    from monitor.report.document import build_document
    from monitor.store.engine import make_engine, transaction
    from monitor.store.migrate import upgrade

    path = Path(path)
    if not path.is_file():
        raise NotFound(f"{path}: no such file")
    settings = settings.replace(cache_dir="")  # a throwaway database: nothing to keep
    with tempfile.TemporaryDirectory(prefix="monitor-analyze-") as tmp:
        db = Path(keep_db) if keep_db else Path(tmp) / "analyze.db"
        if keep_db and db.exists():
            db.unlink()
        engine = make_engine(f"sqlite:///{db}")
        try:
            upgrade(engine)
            create_campaign(engine, spec)
            # the reading options by name, as ``monitor ingest`` passes them (a pull's
            # connect_source call has this shape too: it records a source, nothing in common)
            summary = ingest_file(
                engine,
                path,
                spec.name,
                items=items,
                format=format,
                mapping=mapping,
                options=options,
                progress=progress,
                delimiter=delimiter,
            )
            [outcome] = recompute(engine, settings, campaign=spec.name, full=True)
            with transaction(engine) as s:
                document = build_document(s, spec.name)
        finally:
            engine.dispose()
    return Analysis.of(document, summary), outcome


def analyze(
    data: Any,  # noqa: ANN401 - a DataFrame, records, arrays or a path
    kind: str,
    *,
    name: str | None = None,
    scale_min: float | None = None,
    scale_max: float | None = None,
    level: str | None = None,
    categories: str | Sequence[str] | None = None,
    options: str | Sequence[str] | None = None,
    open: bool = False,  # noqa: A002 - the option's name
    strict: bool = False,
    items: str | os.PathLike[str] | None = None,
    format: str | None = None,  # noqa: A002 - the option's name
    delimiter: str | None = None,
    mapping: Mapping[str, str] | None = None,
    reader_options: Mapping[str, str] | None = None,
    phi: Literal["off", "map", "full", "nuts"] | None = None,
    phi_mapping: Literal["bin_centres", "authors"] | None = None,
    phi_prior: Literal["phi", "precision", "gamma"] | None = None,
    seed: int | None = None,
    bootstrap: int | None = None,
    keep_db: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
) -> Analysis:
    """Run what ``monitor analyze`` runs on ``data`` and return its :class:`Analysis`.

    ``data``: a path (CSV, JSON Lines or a platform's export, as the command reads), a pandas
    or polars DataFrame, a list of records (dicts), a mapping of columns, or a tuple of arrays
    (``worker, item, value``; pairwise ``worker, left, right, preference``). Column names
    are the file's (CONTRACT.md section 2); ``mapping`` renames them as ``--map`` does. The
    options are the command's (``scale_min`` is ``--min``, ``reader_options`` ``--option``,
    ``bootstrap`` the number of resamples); ``settings`` default to ``monitor.toml`` and the
    environment, as for the command. Raises the command's errors (UsageError, InputError,
    NotFound), with its messages; a row of records, a DataFrame or arrays is named
    ``records:N``, ``DataFrame:N`` or ``arrays:N``.
    """
    from monitor.core.settings import load_settings

    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}", hint="rating, label, multilabel or pairwise")
    if settings is None:
        settings = load_settings()
    settings = settings.replace(
        phi=phi,
        seed=seed,
        bootstrap_samples=bootstrap,
        phi_mapping=phi_mapping,
        phi_prior=phi_prior,
    )
    source = data_source(data, kind)
    label = None if isinstance(source, Path) else source[0]
    if name is None:
        name = (source.stem if isinstance(source, Path) else "") or "analysis"
    spec = campaign_spec(
        name,
        kind,
        scale_min=scale_min,
        scale_max=scale_max,
        level=level,
        categories=categories,
        options=options,
        open=open,
        strict=strict,
    )
    if label is not None and (format is not None or delimiter is not None or reader_options):
        raise UsageError(
            "format, delimiter and reader_options are for a file",
            hint=f"give {label} without them",
        )
    common: dict[str, Any] = {
        "items": Path(items) if items is not None else None,
        "mapping": dict(mapping) if mapping else None,
        "keep_db": Path(keep_db) if keep_db is not None else None,
    }
    if isinstance(source, Path):
        result, _ = analyze_file(
            source,
            spec,
            settings,
            format=format,
            delimiter=delimiter,
            options=dict(reader_options) if reader_options else None,
            **common,
        )
        return result
    label, records = source
    with tempfile.TemporaryDirectory(prefix="monitor-data-") as tmp:
        path = Path(tmp) / f"{name}.jsonl"
        write_jsonl(records, path)
        try:
            result, _ = analyze_file(path, spec, settings, format="jsonl", **common)
        except InputError as exc:
            problems = [
                dataclasses.replace(p, path=label) if p.path == str(path) else p
                for p in exc.problems
            ]
            raise InputError(problems, n_problems=exc.n_problems, n_rows=exc.n_rows) from None
    return result
