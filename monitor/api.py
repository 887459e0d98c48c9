"""The Python API: :func:`analyze` for data in hand, :class:`Campaign` for a campaign in a
database. Each is a thin layer over the functions the commands use: ``monitor analyze`` is
:func:`analyze_file` and its printing, and a :class:`Campaign`'s methods are what ``monitor
ingest``, ``recompute``, ``report``, ``workers`` and ``export`` call.

pandas and polars are never imported here: a DataFrame is read through its own ``to_dicts``
(polars) or ``to_dict("records")`` (pandas), and :meth:`Table.to_pandas` imports pandas only
when it is called (the ``monitor[pandas]`` extra).
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson

from monitor.core.errors import InputError, MissingDependency, MonitorError, NotFound, UsageError

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from monitor.core.settings import Settings
    from monitor.ingest.api import IngestSummary
    from monitor.pipeline.run import RunOutcome
    from monitor.report.shape import Document
    from monitor.store.campaigns import CampaignSpec

__all__ = [
    "Analysis",
    "Campaign",
    "Row",
    "Table",
    "analyze",
    "analyze_file",
    "campaign_spec",
]

KINDS = ("rating", "label", "multilabel", "pairwise")


@dataclass(frozen=True)
class Table(Sequence[dict[str, Any]]):
    """Rows of the JSON document (workers, items, pairs, flags, agreement measures): a
    sequence of dicts, ``table["w1"]`` the row whose ``key`` column is ``"w1"``."""

    name: str
    key: str | None
    rows: tuple[dict[str, Any], ...]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, index: Any) -> Any:  # noqa: ANN401 - int, slice or a key
        if isinstance(index, str):
            for row in self.rows:
                if self.key is not None and row.get(self.key) == index:
                    return row
            raise KeyError(f"no {self.key} {index!r} in {self.name}")
        return self.rows[index]

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as a list of dicts (copies: changing them changes nothing here)."""
        return [orjson.loads(orjson.dumps(row)) for row in self.rows]

    def to_pandas(self) -> Any:  # noqa: ANN401 - pandas is optional
        """The rows as a pandas DataFrame, one column a key (pandas: ``monitor[pandas]``)."""
        pandas = _pandas()
        columns = list(dict.fromkeys(k for row in self.rows for k in row))
        return pandas.DataFrame.from_records(self.to_records(), columns=columns)


@dataclass(frozen=True)
class Row(Mapping[str, Any]):
    """One object of the JSON document (the verdict) as a read-only mapping."""

    name: str
    data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:  # noqa: ANN401
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def to_records(self) -> list[dict[str, Any]]:
        """``[the object]`` (a copy)."""
        return [orjson.loads(orjson.dumps(self.data))]

    def to_pandas(self) -> Any:  # noqa: ANN401 - pandas is optional
        """A one-row pandas DataFrame (pandas: ``monitor[pandas]``)."""
        return _pandas().DataFrame.from_records(self.to_records(), columns=list(self.data))


def _pandas() -> Any:  # noqa: ANN401
    try:
        import pandas  # type: ignore[import-untyped]
    except ModuleNotFoundError:
        raise MissingDependency(
            "to_pandas needs pandas, which is not installed", 'pip install "monitor[pandas]"'
        ) from None
    return pandas


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


def _names(value: str | Sequence[str] | None, option: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    parts = tuple(p.strip() for p in value.split(",")) if isinstance(value, str) else tuple(value)
    if not all(isinstance(p, str) and p for p in parts):
        raise UsageError(f"{option}: an empty name in '{value}'", hint=f"write {option} a,b,c")
    return parts


def campaign_spec(
    name: str,
    kind: str,
    *,
    scale_min: float | None = None,
    scale_max: float | None = None,
    level: str | None = None,
    categories: str | Sequence[str] | None = None,
    options: str | Sequence[str] | None = None,
    open: bool = False,  # noqa: A002 - the option's name
    strict: bool = False,
    platform: str | None = None,
) -> CampaignSpec:
    """The campaign a kind and its scale options describe (CONTRACT.md section 1): UsageError
    for an option of another kind (the messages name the command's options)."""
    from monitor.store.campaigns import CampaignSpec

    if kind != "rating" and (scale_min is not None or scale_max is not None):
        raise UsageError("--min and --max are for rating campaigns")
    if categories is not None and kind != "label":
        hint = "a multilabel campaign takes --options" if kind == "multilabel" else None
        raise UsageError("--categories is for label campaigns", hint=hint)
    if (options is not None or open) and kind != "multilabel":
        raise UsageError("--options and --open are for multilabel campaigns")
    if strict and kind != "pairwise":
        raise UsageError("--strict is for pairwise campaigns")
    return CampaignSpec(
        name=name,
        kind=kind,  # type: ignore[arg-type]  # checked by CampaignSpec.validated
        level=level,
        scale_min=scale_min,
        scale_max=scale_max,
        categories=_names(categories, "--categories") or _names(options, "--options"),
        open=open,
        strict=strict,
        platform=platform,
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
    source = _source(data, kind)
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
        _write_jsonl(records, path)
        try:
            result, _ = analyze_file(path, spec, settings, format="jsonl", **common)
        except InputError as exc:
            problems = [
                dataclasses.replace(p, path=label) if p.path == str(path) else p
                for p in exc.problems
            ]
            raise InputError(problems, n_problems=exc.n_problems, n_rows=exc.n_rows) from None
    return result


def _source(data: Any, kind: str) -> Path | tuple[str, list[Any]]:  # noqa: ANN401
    """A path, or (how to name it in a message, its records)."""
    if isinstance(data, str | os.PathLike):
        return Path(data)
    if hasattr(data, "to_dicts"):  # polars
        return "DataFrame", list(data.to_dicts())
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # pandas
        return "DataFrame", list(data.to_dict("records"))
    if isinstance(data, Mapping):
        return "arrays", _from_columns(dict(data))
    if isinstance(data, tuple) and data and all(_is_column(c) for c in data):
        names = (
            ("worker", "left", "right", "preference")
            if kind == "pairwise"
            else ("worker", "item", "value")
        )
        if len(data) != len(names):
            raise UsageError(
                f"arrays for a {kind} campaign are {len(names)}: {', '.join(names)}",
                hint="or give a mapping of column names to arrays",
            )
        return "arrays", _from_columns(dict(zip(names, data, strict=True)))
    if isinstance(data, list | tuple) and all(isinstance(r, Mapping) for r in data):
        return "records", [dict(r) for r in data]
    raise UsageError(
        f"cannot analyze a {type(data).__name__}",
        hint="give a DataFrame, a list of records (dicts), arrays or a path",
    )


def _is_column(value: Any) -> bool:  # noqa: ANN401
    return hasattr(value, "__len__") and not isinstance(value, str | bytes | Mapping)


def _from_columns(columns: dict[str, Any]) -> list[dict[str, Any]]:
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise UsageError(
            "the arrays differ in length: "
            + ", ".join(f"{k} {len(v)}" for k, v in columns.items()),
            hint="give one value a judgment in each",
        )
    values = [list(_as_us(v).tolist() if hasattr(v, "tolist") else v) for v in columns.values()]
    return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]


def _as_us(value: Any) -> Any:  # noqa: ANN401
    """NumPy times in microseconds, whose ``tolist`` gives datetimes (nanoseconds give ints)."""
    dtype = getattr(value, "dtype", None)
    return value.astype("datetime64[us]") if getattr(dtype, "kind", None) == "M" else value


def _plain(value: Any) -> Any:  # noqa: ANN401
    """A value JSON can hold: NumPy scalars and arrays as Python's, times in ISO 8601, a
    missing value (NaN, NaT, None) as null."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = _as_us(value).tolist()  # NumPy scalar or array
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if type(value).__name__ in ("NaTType", "NAType"):
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _write_jsonl(records: list[Any], path: Path) -> None:
    with path.open("wb") as f:
        for record in records:
            row = {str(k): _plain(v) for k, v in record.items()}
            f.write(orjson.dumps({k: v for k, v in row.items() if v is not None}) + b"\n")


class Campaign:
    """A campaign in a database (``db_url``: a SQLAlchemy URL; None: the settings'
    ``database_url``). Each method is what the command of the same name does."""

    def __init__(self, db_url: str | None, name: str, *, settings: Settings | None = None) -> None:
        from monitor.core.settings import load_settings

        self.name = name
        self.settings = load_settings(overrides={"database_url": db_url})
        if settings is not None:
            self.settings = settings.replace(database_url=db_url)
        self._engine: Engine | None = None

    def __repr__(self) -> str:
        from monitor.store.engine import redact

        return f"Campaign({redact(self.settings.database_url)!r}, {self.name!r})"

    @property
    def engine(self) -> Engine:
        """The engine, made on first use; the schema checked (a new database: created)."""
        if self._engine is None:
            from monitor.store.connect import open_database

            self._engine = open_database(
                self.settings.database_url,
                lock_timeout=self.settings.lock_timeout,
                statement_timeout=self.settings.statement_timeout,
            )
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> Campaign:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def create(self, kind: str, **scale: Any) -> Campaign:  # noqa: ANN401
        """``monitor campaign create``: define this campaign (``scale``: the options of
        :func:`campaign_spec`); returns itself."""
        from monitor.ingest.api import create_campaign

        create_campaign(self.engine, campaign_spec(self.name, kind, **scale))
        return self

    def ingest(
        self,
        path: str | os.PathLike[str],
        *,
        items: str | os.PathLike[str] | None = None,
        format: str | None = None,  # noqa: A002 - the option's name
        skip_invalid: bool = False,
        mapping: Mapping[str, str] | None = None,
        options: Mapping[str, str] | None = None,
        delimiter: str | None = None,
    ) -> IngestSummary:
        """``monitor ingest``: one file of judgments (and its items file) in one transaction."""
        from monitor.ingest.api import ingest_file

        return ingest_file(
            self.engine,
            Path(path),
            self.name,
            items=Path(items) if items is not None else None,
            format=format,
            skip_invalid=skip_invalid,
            mapping=dict(mapping) if mapping else None,
            options=dict(options) if options else None,
            delimiter=delimiter,
        )

    def recompute(self, full: bool = False) -> RunOutcome:
        """``monitor recompute --campaign``: bring the measures up to date; MonitorError when
        the run failed."""
        from monitor.pipeline.run import recompute

        [outcome] = recompute(self.engine, self.settings, campaign=self.name, full=full)
        if outcome.status == "failed":
            raise MonitorError(f"{self.name}: {outcome.message or 'the run failed'}")
        return outcome

    def document(self) -> Document:
        """The JSON document of the latest run (``monitor report --json``)."""
        from monitor.report.document import build_document
        from monitor.store.engine import transaction

        with transaction(self.engine) as session:
            return build_document(session, self.name)

    def report(
        self, path: str | os.PathLike[str] | None = None, format: Literal["html", "json"] = "html"
    ) -> Any:  # noqa: ANN401 - a Path or the document
        """``monitor report``: write the report to ``path`` (HTML: default
        ``<report_dir>/<campaign>.html``) and return its path; JSON without a path: the
        document."""
        from monitor.report.render import report_filename, write_report

        if format not in ("html", "json"):
            raise UsageError(f"unknown report format {format!r}", hint="html or json")
        if path is None and format == "json":
            return self.document()
        out = (
            Path(path)
            if path is not None
            else Path(self.settings.report_dir) / report_filename(self.name, format)
        )
        return write_report(self.engine, self.name, out, format, follow=path is not None)

    def decisions(self) -> list[dict[str, Any]]:
        """The workers' decisions of the latest run (``monitor workers``): worker, decision,
        its reason and weight, the flags."""
        from monitor.report.document import build_document
        from monitor.store.engine import transaction

        with transaction(self.engine) as session:
            workers = build_document(session, self.name, items=False)["workers"]
        keys = ("worker", "decision", "decision_reason", "decision_weight", "flags")
        return [{k: w.get(k) for k in keys} for w in workers]

    def export(
        self,
        what: Literal["blocklist", "weights", "labels"],
        path: str | os.PathLike[str] | None = None,
        *,
        platform: Literal["mturk", "prolific", "toloka", "csv", "json"] = "csv",
        include_flagged: bool = False,
        project: str | None = None,
        pool: str | None = None,
    ) -> Any:  # noqa: ANN401 - a Path or the text
        """``monitor export``: write what the command writes to ``path`` and return the path;
        without a path, return the text."""
        from monitor.actions.export import export
        from monitor.core.output import check_target, write_output
        from monitor.store.engine import session_factory

        if path is not None:
            check_target(Path(path), "export", f"{what}.{platform}")
        with session_factory(self.engine)() as session:
            text = export(
                session, what, self.name, platform, include_flagged=include_flagged,
                project=project, pool=pool,
            )  # fmt: skip
        if path is None:
            return text
        return write_output(Path(path), text, "export", newline="")
