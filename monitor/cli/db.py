"""``monitor db upgrade`` and ``monitor db current``."""

from __future__ import annotations

import argparse

from monitor.cli.context import Context
from monitor.cli.show import echo


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    db = sub.add_parser(
        "db",
        parents=[common],
        help="create, migrate or inspect the schema",
        description="The database schema: 'db upgrade' creates or migrates it, 'db current' "
        "says where it is. A new database (SQLite or PostgreSQL) gets its schema on first use; "
        "an existing PostgreSQL database is migrated only by 'monitor db upgrade'.",
    )
    db_sub = db.add_subparsers(dest="db_command", metavar="SUBCOMMAND", required=True)
    up = db_sub.add_parser(
        "upgrade",
        parents=[common],
        help="create or migrate the schema to head",
        description="Create the schema in an empty database, or migrate an existing one to "
        "the newest revision (or to --revision). Run it after installing a new version of "
        "monitor on a PostgreSQL database: monitor refuses an out-of-date schema there, while "
        "SQLite is upgraded on first use. Prints the database URL (password hidden) and the "
        "revision reached.",
    )
    up.add_argument("--revision", default="head", help="target revision (default: head)")
    up.set_defaults(func=run_upgrade)
    cur = db_sub.add_parser(
        "current",
        parents=[common],
        help="print the schema revision",
        description="Print the database's schema revision ('empty' for none) and whether it "
        "is the newest this monitor knows (head). Changes nothing.",
    )
    cur.set_defaults(func=run_current)


def run_upgrade(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.engine import redact
    from monitor.store.migrate import current_revision, upgrade

    engine = ctx.engine(check_schema=False)
    upgrade(engine, args.revision)
    echo(f"{redact(engine.url)}: schema at {current_revision(engine)}")
    return 0


def run_current(_args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.migrate import current_revision, head_revision

    engine = ctx.engine(check_schema=False)
    current = current_revision(engine)
    head = head_revision()
    state = "head" if current == head else f"behind head {head}"
    echo(f"{current or 'empty'} ({state})")
    return 0
