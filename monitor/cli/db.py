"""``monitor db upgrade`` and ``monitor db current``."""

from __future__ import annotations

import argparse

from monitor.cli.context import Context


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    db = sub.add_parser("db", parents=[common], help="create, migrate or inspect the schema")
    db_sub = db.add_subparsers(dest="db_command", metavar="SUBCOMMAND", required=True)
    up = db_sub.add_parser("upgrade", parents=[common], help="create or migrate the schema to head")
    up.add_argument("--revision", default="head", help="target revision (default: head)")
    up.set_defaults(func=run_upgrade)
    cur = db_sub.add_parser("current", parents=[common], help="print the schema revision")
    cur.set_defaults(func=run_current)


def run_upgrade(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.engine import redact
    from monitor.store.migrate import current_revision, upgrade

    engine = ctx.engine(check_schema=False)
    upgrade(engine, args.revision)
    print(f"{redact(engine.url)}: schema at {current_revision(engine)}")
    return 0


def run_current(_args: argparse.Namespace, ctx: Context) -> int:
    from monitor.store.migrate import current_revision, head_revision

    engine = ctx.engine(check_schema=False)
    current = current_revision(engine)
    head = head_revision()
    state = "head" if current == head else f"behind head {head}"
    print(f"{current or 'empty'} ({state})")
    return 0
