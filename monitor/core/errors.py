"""Typed errors. The library raises these; only the CLI turns them into messages and exit codes."""

from __future__ import annotations

from dataclasses import dataclass

#: The longest message or hint a Problem prints (a hostile value must not make a huge line).
MAX_TEXT = 400


def printable(text: str) -> str:
    """``text`` with what a terminal would act on or hide written as escapes, repr-like:
    control characters (``\\x1b`` of an ANSI escape, ``\\x00``, line breaks), format
    characters (bidi overrides), lone surrogates and unusual spaces; letters of any script stay."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
    return "".join(out)


def capped(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}... ({len(text) - limit + 40} more characters)"


class MonitorError(Exception):
    """Base of monitor's errors. ``exit_code`` follows the contract: 2 bad input, 1 the rest."""

    exit_code = 1
    hint: str | None = None


class UsageError(MonitorError):
    """A command was called with options that do not fit together."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class NotFound(UsageError):
    """A named campaign, worker or file does not exist."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one place of an input file: ``column`` names a field, ``char``
    the character of the line (from 1) where a JSON text goes wrong."""

    path: str
    line: int | None
    column: str | None
    message: str
    hint: str | None = None
    char: int | None = None

    def __str__(self) -> str:
        """``FILE:LINE: column 'NAME': message (hint)`` (``FILE:LINE:CHAR:`` for a place in a
        JSON text), one line whatever the file held: non-printable characters escaped
        (:func:`printable`), message and hint capped."""
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.line is not None and self.char is not None:
            where += f":{self.char}"
        col = f" column '{capped(self.column, 80)}':" if self.column else ""
        hint = f" ({capped(self.hint)})" if self.hint else ""
        return printable(f"{where}:{col} {capped(self.message)}{hint}")


class InputError(MonitorError):
    """Bad input: one or more problems, each naming file, line and column. ``problems`` may
    be the first of more: ``n_problems`` counts them all and ``n_rows`` the bad rows they
    are on (None: not counted)."""

    exit_code = 2

    def __init__(
        self,
        problems: list[Problem] | Problem,
        *,
        n_problems: int | None = None,
        n_rows: int | None = None,
    ) -> None:
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        self.n_problems = max(n_problems or 0, len(self.problems))
        self.n_rows = n_rows
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def at(
        cls,
        path: str,
        line: int | None,
        column: str | None,
        message: str,
        hint: str | None = None,
        char: int | None = None,
    ) -> InputError:
        return cls(Problem(str(path), line, column, message, hint, char))


class SchemaOutOfDate(MonitorError):
    """The database schema is behind the code; the message names the command to run."""

    def __init__(self, current: str | None, head: str, url_hint: str = "") -> None:
        super().__init__(
            f"the database schema is at {current or 'nothing (empty database)'}, the code needs {head}"
        )
        self.hint = f"run: monitor{url_hint} db upgrade"


class DatabaseUnavailable(MonitorError):
    """The database cannot be reached or opened: one line naming what is wrong (host, port,
    database, role or path; never a password) and a hint."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class OutputError(MonitorError):
    """A file could not be written (no space, no permission, ...)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class SchemaUnknown(MonitorError):
    """The database holds a schema monitor cannot use: a revision it does not know (a newer
    monitor wrote it), or tables of something else."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class ConfigError(MonitorError):
    """A setting is unknown or has a bad value."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class MissingDependency(MonitorError):
    """An optional dependency the command needs is not installed; the hint says how."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class Busy(MonitorError):
    """Another process holds the campaign's recompute lock."""


class LockLost(MonitorError):
    """A recompute's campaign lock ended during its run (its session was closed, or another
    process took the campaign over): the run saved nothing."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class DatabaseTimeout(MonitorError):
    """A statement waited longer than a setting allows (``lock_timeout`` for a lock another
    session holds, ``statement_timeout`` for the statement itself), or the server ended the
    session: one line naming the wait, the table or step, and the setting."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class PlatformError(MonitorError):
    """A platform's API could not be reached, failed or refused a request (a connection
    refused, a timeout, an answer of 5xx or not of the platform's shape, a token refused): one
    line naming the platform and what failed, never the token; exit 1."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint
