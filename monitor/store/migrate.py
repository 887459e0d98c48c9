"""Alembic, driven from code: works from a checkout and after a non-editable install."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from sqlalchemy import Engine

from monitor.errors import SchemaOutOfDate, UsageError


def migrations_dir() -> Path:
    """The Alembic script directory: ``migrations/`` of the checkout, installed as
    ``monitor._migrations``."""
    try:
        path = Path(str(resources.files("monitor._migrations")))
        if (path / "env.py").is_file():
            return path
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(engine: Engine | None = None):  # -> alembic.config.Config
    """A Config whose script location is found at run time, reusing ``engine`` if given."""
    from alembic.config import Config

    # Config's stdout default is bound when alembic is first imported; pass the current one.
    config = Config(stdout=sys.stdout)
    # ConfigParser interpolates '%': a path (or URL) holding one must be escaped.
    config.set_main_option("script_location", str(migrations_dir()).replace("%", "%%"))
    if engine is not None:
        # The engine travels in ``attributes``, never as an option: an option would have to
        # hold the password, and a '%' in it (p%40ss, ?host=%2Fvar...) breaks ConfigParser.
        config.attributes["engine"] = engine
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"the migrations have {len(heads)} heads, expected exactly one")
    return heads[0]


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate to ``revision``; an unknown or unreachable revision is a :class:`UsageError`."""
    from alembic import command
    from alembic.util import CommandError

    try:
        command.upgrade(alembic_config(engine), revision)
    except CommandError as exc:
        raise UsageError(
            f"cannot upgrade to revision {revision!r}: {exc}",
            f"'head' is the newest; the known revisions are {', '.join(revisions())}",
        ) from None


def revisions() -> list[str]:
    """Every revision of the migrations, oldest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def ensure_schema(engine: Engine, *, auto_upgrade: bool | None = None) -> None:
    """Make sure the schema is at head before use.

    SQLite (the embedded default) is upgraded automatically; PostgreSQL is refused with the
    command to run, unless ``auto_upgrade`` says otherwise.
    """
    if auto_upgrade is None:
        auto_upgrade = engine.dialect.name == "sqlite"
    head = head_revision()
    current = current_revision(engine)
    if current == head:
        return
    if auto_upgrade:
        upgrade(engine)
        return
    raise SchemaOutOfDate(current, head, " --db URL" if engine.dialect.name != "sqlite" else "")
