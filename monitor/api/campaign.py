"""A campaign in a database: :class:`Campaign`, whose methods are what ``monitor ingest``,
``recompute``, ``report``, ``workers`` and ``export`` call."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from monitor.api.spec import campaign_spec
from monitor.core.errors import MonitorError, UsageError

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from monitor.core.settings import Settings
    from monitor.ingest.api import IngestSummary
    from monitor.pipeline.run import RunOutcome
    from monitor.report.shape import Document

__all__ = ["Campaign"]


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
        from monitor.report.document import build_worker_rows
        from monitor.store.engine import transaction

        with transaction(self.engine) as session:
            workers = build_worker_rows(session, self.name)
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
