"""The composition root: settings and the engine, built once per command."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from monitor.core.settings import Settings, load_settings


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
            from monitor.store.connect import open_database

            self._engine = open_database(
                self.settings.database_url,
                lock_timeout=self.settings.lock_timeout,
                statement_timeout=self.settings.statement_timeout,
                check_schema=check_schema,
                on_created=_say_created,
            )
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def _say_created(engine: Engine) -> None:
    """A new PostgreSQL database got the schema: say so (SQLite's upgrade is silent)."""
    if engine.dialect.name == "sqlite":
        return
    from monitor.cli.show import echo
    from monitor.store.engine import redact
    from monitor.store.migrate import head_revision

    echo(
        f"{redact(engine.url)}: a new database: schema created (revision {head_revision()})",
        err=True,
    )
