"""``monitor schedule``: not available yet."""

from __future__ import annotations

import argparse

from monitor.cli._stub import not_yet


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("schedule", parents=[common], help="(not available yet)")
    p.set_defaults(func=not_yet("schedule"))
