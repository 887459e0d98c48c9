"""Alembic environment: reuses the engine handed over in ``config.attributes``."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import pool

from monitor.store.engine import DEFAULT_URL, make_engine
from monitor.store.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    engine = config.attributes.get("engine")
    if engine is not None:
        return engine.url
    return (
        config.get_main_option("sqlalchemy.url")
        or os.environ.get("MONITOR_DATABASE_URL")
        or DEFAULT_URL
    )


def run_offline() -> None:
    context.configure(
        url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = config.attributes.get("engine") or make_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)


def _run(connection) -> None:  # noqa: ANN001
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
