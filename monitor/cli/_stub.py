"""Placeholder for commands whose implementation has not landed yet."""

from __future__ import annotations

import argparse

from monitor.cli.context import Context
from monitor.errors import MonitorError


class NotYetAvailable(MonitorError):
    exit_code = 1


def not_yet(name: str):
    def run(_args: argparse.Namespace, _ctx: Context) -> int:
        raise NotYetAvailable(f"'monitor {name}' is not available in this version yet")

    return run
