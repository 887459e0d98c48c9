"""The schema's foundations: the declarative base with its naming convention, UTC times,
the allowed values of the CHECK constraints."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    TypeDecorator,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, MappedColumn, mapped_column

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    Info = TypeVar("Info", bound=DataclassInstance)

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
BigId = BigInteger().with_variant(Integer(), "sqlite")
Json = JSON().with_variant(JSONB(), "postgresql")


class _UtcTime(TypeDecorator[datetime]):
    """A moment in UTC, read back as an aware datetime on both backends.

    PostgreSQL keeps ``timestamptz``; SQLite keeps the wall time without its offset, so an
    aware value is stored in UTC and a naive one read back is UTC (never local time)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and dialect.name == "sqlite" and value.utcoffset():
            value = value.astimezone(UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    @property
    def python_type(self) -> type[datetime]:
        return datetime


UtcTime = _UtcTime()

KINDS = ("rating", "label", "multilabel", "pairwise")
LEVELS = ("nominal", "ordinal", "interval", "ratio")
WORKER_STATUSES = ("ok", "down_weighted", "blocked")
OUTCOMES = ("left", "right", "tie")
RUN_STATUSES = ("running", "ok", "failed")
SCOPES = ("campaign", "worker", "item", "pair", "annotation")
ACTIONS = ("block", "down_weight", "clear", "suggest")


def utcnow() -> datetime:
    return datetime.now(UTC)


def in_values(column: str, values: tuple[str, ...]) -> str:
    """A CHECK constraint's condition: ``column`` is one of ``values``."""
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def check_in(column: str, values: tuple[str, ...]) -> CheckConstraint:
    """The CHECK constraint named ``column`` that keeps ``column`` to one of ``values``."""
    return CheckConstraint(in_values(column, values), name=column)


def serial_id() -> MappedColumn[Any]:
    """A table's own ``id``: the auto-incremented primary key (:data:`BigId`)."""
    return mapped_column(BigId, primary_key=True)


def cascade_ref(table: str, **kwargs: Any) -> MappedColumn[Any]:  # noqa: ANN401
    """A foreign key to ``table.id`` whose row is deleted with the one it refers to
    (``kwargs``: ``index``, ``primary_key``, as for :func:`mapped_column`)."""
    return mapped_column(ForeignKey(f"{table}.id", ondelete="CASCADE"), **kwargs)


def campaign_ref(**kwargs: Any) -> MappedColumn[Any]:  # noqa: ANN401
    """The row's campaign (:func:`cascade_ref` to ``campaigns``)."""
    return cascade_ref("campaigns", **kwargs)


def run_ref(**kwargs: Any) -> MappedColumn[Any]:  # noqa: ANN401
    """The row's metric run (:func:`cascade_ref` to ``metric_runs``)."""
    return cascade_ref("metric_runs", **kwargs)


def inserted_at() -> MappedColumn[Any]:
    """A moment in UTC that defaults to when the row is inserted."""
    return mapped_column(UtcTime, default=utcnow)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def row_info(cls: type[Info], row: Base, **given: Any) -> Info:  # noqa: ANN401
    """The plain dataclass ``cls`` of an ORM row (what repositories return): each field the
    row's column of the same name, but those ``given`` (a JSON column copied, say)."""
    values = {f.name: getattr(row, f.name) for f in fields(cls) if f.name not in given}
    return cls(**values, **given)
