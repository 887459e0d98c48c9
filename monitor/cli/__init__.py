"""The command line: parsing, wiring, and typed errors turned into one line and an exit code.

Exit status (CONTRACT.md): 0 success, 2 bad input or usage, 1 anything else. Each command group
lives in its own module with a ``register(subparsers, common)`` function.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from monitor.cli import (
    analyze,
    cache,
    campaign,
    db,
    demo,
    export,
    ingest,
    pairs,
    pull,
    push,
    recompute,
    report,
    schedule,
    serve,
    workers,
)
from monitor.cli.context import Context
from monitor.cli.parsing import Parser
from monitor.cli.show import echo
from monitor.core.errors import InputError, MonitorError
from monitor.core.version import __version__

MODULES = (
    db,
    campaign,
    ingest,
    recompute,
    report,
    schedule,
    analyze,
    demo,
    workers,
    export,
    pairs,
    pull,
    push,
    serve,
    cache,
)
MAX_PROBLEMS = 50


def common_options() -> argparse.ArgumentParser:
    """Options accepted before or after any command."""
    common = Parser(add_help=False)
    common.add_argument(
        "--db",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="database URL (default: $MONITOR_DATABASE_URL, else sqlite:///monitor.db)",
    )
    common.add_argument(
        "--config",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="settings file (default: ./monitor.toml if present)",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = Parser(
        prog="monitor",
        description="Quality monitor for annotation campaigns: agreement, worker quality, "
        "ambiguous items and self-contradicting preference annotators.",
        parents=[common],
        epilog="Exit status: 0 success, 2 bad input or usage, 1 anything else.",
    )
    parser.top = True
    parser.add_argument("--version", action="version", version=f"monitor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in MODULES:
        module.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    ctx: Context | None = None
    try:
        ctx = Context.from_args(args)
        return int(args.func(args, ctx) or 0)
    except InputError as exc:
        for problem in exc.problems[:MAX_PROBLEMS]:
            echo(problem, err=True)
        if exc.n_problems > MAX_PROBLEMS:
            rows = f": {exc.n_rows:,} bad rows in all" if exc.n_rows else ""
            echo(f"... and {exc.n_problems - MAX_PROBLEMS:,} more problems{rows}", err=True)
        echo("nothing was written", err=True)
        return exc.exit_code
    except MonitorError as exc:
        _fail(exc)
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (``monitor ... | head``): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        echo("monitor: interrupted; nothing half-written was kept", err=True)
        return 1
    except Exception as exc:
        unavailable = _database_error(exc, ctx)
        if unavailable is None:
            raise
        _fail(unavailable)
        return unavailable.exit_code
    finally:
        if ctx is not None:
            ctx.close()


def _fail(exc: MonitorError) -> None:
    """``monitor: error: ...`` and its hint, each one line whatever they quote (a file name
    with a line break, an ANSI escape or a bidi override is written as escapes)."""
    echo(f"monitor: error: {exc}", err=True)
    if exc.hint:
        echo(f"hint: {exc.hint}", err=True)


def _database_error(exc: Exception, ctx: Context | None) -> MonitorError | None:
    """A database error met after start-up (a lock or statement timeout, a lost or refused
    connection, a statement the server refused), as one line (never a traceback that could
    quote the URL); None for anything else."""
    if "sqlalchemy" not in sys.modules or ctx is None:
        return None
    from sqlalchemy.exc import InterfaceError, OperationalError

    from monitor.store.connect import (
        database_error,
        first_line,
        is_driver_error,
        statement_error,
    )
    from monitor.store.engine import session_timeouts

    if not is_driver_error(exc):
        return None
    settings = ctx.settings
    timed_out = statement_error(
        exc,
        *session_timeouts(settings.database_url, settings.lock_timeout, settings.statement_timeout),
    )
    if timed_out is not None:
        return timed_out
    orig = getattr(exc, "orig", None) or exc
    if isinstance(exc, OperationalError | InterfaceError) or type(orig).__name__ in (
        "OperationalError",
        "InterfaceError",
    ):
        return database_error(exc, settings.database_url)
    where = getattr(exc, "monitor_step", None) or getattr(orig, "monitor_step", None)
    return MonitorError(
        f"the database refused a statement{f' while {where}' if where else ''}: "
        f"{first_line(exc, settings.database_url)}"
    )
