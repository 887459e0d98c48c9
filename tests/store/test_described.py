"""``described``: one line for a failed run (pipeline) and the scheduler's log lines."""

from __future__ import annotations

import sqlite3

from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError

from monitor.store.connect import described, error_line


def test_first_line_of_the_message() -> None:
    engine = create_engine("sqlite://")
    assert described(ValueError("bad value\nthe rest"), engine) == "ValueError: bad value"


def test_an_empty_message_is_the_type() -> None:
    engine = create_engine("sqlite://")
    assert described(KeyError(), engine) == "KeyError: KeyError"
    assert error_line(RuntimeError("  ")) == "RuntimeError"


def test_the_driver_message_under_the_wrapper() -> None:
    engine = create_engine("sqlite://")
    exc = OperationalError("SELECT 1", {}, sqlite3.OperationalError("no such table: x\nmore"))
    assert error_line(exc) == "no such table: x"
    assert described(exc, engine) == "OperationalError: no such table: x"
