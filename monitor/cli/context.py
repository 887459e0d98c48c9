"""The composition root: settings and the engine, built once per command."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from monitor.settings import Settings, load_settings


@dataclass
class Context:
    """What a command needs from the outside world; built by the CLI only."""

    settings: Settings
    _engine: Engine | None = field(default=None, repr=False)

    @classmethod
    def from_args(cls, args: argparse.Namespace, **overrides: Any) -> Context:
        config = getattr(args, "config", None)
        overrides.setdefault("database_url", getattr(args, "db", None))
        settings = load_settings(Path(config) if config else None, overrides=overrides)
        return cls(settings)

    def engine(self, *, check_schema: bool = True) -> Engine:
        """The engine, created on first use; the schema is checked (SQLite: upgraded)."""
        if self._engine is None:
            from sqlalchemy.exc import DBAPIError

            from monitor.store.connect import check_connection, database_error
            from monitor.store.engine import make_engine
            from monitor.store.migrate import ensure_schema

            engine = make_engine(
                self.settings.database_url,
                lock_timeout=self.settings.lock_timeout,
                statement_timeout=self.settings.statement_timeout,
            )
            try:
                check_connection(engine)
                if check_schema and ensure_schema(engine) and engine.dialect.name != "sqlite":
                    from monitor.cli.show import echo
                    from monitor.store.engine import redact
                    from monitor.store.migrate import head_revision

                    echo(
                        f"{redact(engine.url)}: a new database: schema created "
                        f"(revision {head_revision()})",
                        err=True,
                    )
            except DBAPIError as exc:
                engine.dispose()
                raise database_error(exc, engine.url) from None
            except BaseException:
                engine.dispose()
                raise
            self._engine = engine
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
