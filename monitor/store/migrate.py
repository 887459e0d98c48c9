"""Alembic, driven from code: works from a checkout and after a non-editable install."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from sqlalchemy import Engine

from monitor.core.errors import SchemaOutOfDate, SchemaUnknown, UsageError
from monitor.store.engine import redact


def migrations_dir() -> Path:
    """The Alembic script directory: ``migrations/`` of the checkout, installed as
    ``monitor._migrations``. Code run from a checkout takes that checkout's own: an editable
    install of another checkout maps ``monitor._migrations`` to the other's, whose schema this
    code may not know."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "migrations" / "env.py").is_file():
        return checkout / "migrations"
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
    """Migrate to ``revision``; an unknown or unreachable revision is a :class:`UsageError`,
    a database at a revision this code does not know or holding other tables a
    :class:`SchemaUnknown`."""
    from alembic import command
    from alembic.util import CommandError
    from sqlalchemy.exc import DBAPIError

    check_known(engine)
    try:
        command.upgrade(alembic_config(engine), revision)
    except CommandError as exc:
        raise UsageError(
            f"cannot upgrade to revision {revision!r}: {exc}",
            f"'head' is the newest; the known revisions are {', '.join(revisions())}",
        ) from None
    except DBAPIError as exc:
        detail = str(getattr(exc, "orig", exc)).strip().splitlines()
        if detail and "already exists" in detail[0]:
            raise SchemaUnknown(
                f"{redact(engine.url)} holds tables monitor did not create ({detail[0]})",
                "give monitor a database of its own (a new SQLite file, an empty PostgreSQL "
                "database)",
            ) from None
        raise


def check_known(engine: Engine) -> None:
    """Refuse a database whose schema revision this code does not know."""
    current = current_revision(engine)
    if current is not None and current not in revisions():
        raise SchemaUnknown(
            f"{redact(engine.url)} has schema revision {current}, which this monitor does not "
            f"know (it knows {', '.join(revisions())}): a newer monitor upgraded it",
            "run that newer monitor, or point --db at another database",
        )


def revisions() -> list[str]:
    """Every revision of the migrations, oldest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return [r.revision for r in reversed(list(script.walk_revisions()))]


#: The second key of the advisory lock under which a new PostgreSQL database gets its schema
#: (campaign locks use the campaign ids, from 1).
SCHEMA_LOCK = 0


def ensure_schema(engine: Engine, *, auto_upgrade: bool | None = None) -> bool:
    """Make sure the schema is at head before use; True when this call created it.

    SQLite (the embedded default) is upgraded automatically. A PostgreSQL database with no
    tables at all gets the schema on first use, as SQLite does: there is nothing to migrate and
    nothing to lose (two processes starting at once create it once, under an advisory lock).
    A PostgreSQL schema that is behind is refused with the command to run, unless
    ``auto_upgrade`` says otherwise: a migration of production data is for ``monitor db
    upgrade``, run on purpose (after a backup).
    """
    if auto_upgrade is None:
        auto_upgrade = engine.dialect.name == "sqlite"
    head = head_revision()
    current = current_revision(engine)
    if current == head:
        return False
    check_known(engine)
    if auto_upgrade:
        upgrade(engine)
        return current is None
    if current is None and engine.dialect.name == "postgresql" and _no_tables(engine):
        return _create_postgres_schema(engine)
    raise SchemaOutOfDate(current, head, " --db URL" if engine.dialect.name != "sqlite" else "")


def _no_tables(engine: Engine) -> bool:
    from sqlalchemy import inspect

    return not inspect(engine).get_table_names()


def _create_postgres_schema(engine: Engine) -> bool:
    """Create the schema of an empty PostgreSQL database under an advisory lock; False when
    another process created it meanwhile."""
    from sqlalchemy import text

    from monitor.store.locks import LOCK_CLASS

    with engine.connect() as conn:
        key = {"k1": LOCK_CLASS, "k2": SCHEMA_LOCK}
        conn.execute(text("SELECT pg_advisory_lock(:k1, :k2)"), key)
        conn.commit()
        try:
            if current_revision(engine) is not None or not _no_tables(engine):
                ensure_schema(engine)  # created by the other process (or refused as it should)
                return False
            upgrade(engine)
            return True
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k1, :k2)"), key)
            conn.commit()
