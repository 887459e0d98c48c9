"""``monitor recompute [--campaign NAME] [--full]``."""

from __future__ import annotations

import argparse
import logging
from types import ModuleType
from typing import TYPE_CHECKING

from monitor.cli.context import Context
from monitor.cli.show import echo
from monitor.core.errors import MissingDependency

if TYPE_CHECKING:
    from distributed import Client

    from monitor.core.settings import Settings


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "recompute",
        parents=[common],
        help="bring the metrics up to date (incremental unless --full)",
        description="Recompute every measure of the campaigns with new judgments since their "
        "last run, warm-starting the iterative ones; save the run, its values and its flags "
        "in one transaction. A campaign with nothing new is left alone and said so.",
    )
    p.add_argument("--campaign", metavar="NAME", help="only this campaign (default: all)")
    p.add_argument(
        "--full", action="store_true", help="recompute from scratch, even if nothing is new"
    )
    cluster_option(p, "run each campaign's recompute as a job on", "; each line names the worker")
    p.set_defaults(func=run)


def cluster_option(p: argparse.ArgumentParser, what: str, then: str) -> None:
    """``--cluster ADDRESS``, its help ``what`` is sent to the cluster and ``then`` what is
    said of each job (also used by schedule)."""
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help=f"{what} the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786){then}",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.cluster:
        return _on_cluster(args, ctx)
    from monitor.pipeline import recompute

    logging.getLogger("monitor.pipeline").setLevel(logging.WARNING)
    outcomes = recompute(
        ctx.engine(), ctx.settings, campaign=args.campaign, full=args.full, progress=True
    )
    if not outcomes:
        echo("no campaigns yet: create one with 'monitor campaign create'")
    for outcome in outcomes:
        echo(outcome.line())
    _notify(ctx, [(o.campaign, o.run_id) for o in outcomes if o.status == "ok" and o.run_id])
    return _summary([o.campaign for o in outcomes if o.status == "failed"], len(outcomes))


def _notify(ctx: Context, runs: list[tuple[str, int]]) -> None:
    """The one notification of the run (settings notify_*), when something changed."""
    from monitor.connectors.notify import enabled, notify

    if not runs or not enabled(ctx.settings):
        return
    sent = notify(ctx.engine(), ctx.settings, runs)
    for error in sent.errors if sent else []:
        echo(f"monitor: warning: {error}", err=True)


def cluster_module() -> ModuleType:
    """:mod:`monitor.runtime.cluster`, or :class:`MissingDependency` when Dask is not installed."""
    try:
        import monitor.runtime.cluster
    except ModuleNotFoundError as exc:
        if exc.name not in ("distributed", "dask"):
            raise
        raise MissingDependency(
            "--cluster needs Dask distributed, which is not installed",
            'pip install "monitor[cluster]"',
        ) from None
    return monitor.runtime.cluster


def connect_cluster(settings: Settings, address: str) -> tuple[ModuleType, Client]:
    """:mod:`monitor.runtime.cluster` and a client of the cluster at ``address`` (also used by
    schedule), connected before anything is done: an unreachable cluster leaves everything as
    it was."""
    module = cluster_module()
    module.check_database(settings.database_url)
    module.keep_library_logs(settings.cluster_log)
    return module, module.connect(address)


def _on_cluster(args: argparse.Namespace, ctx: Context) -> int:
    """The due campaigns as jobs on the cluster."""
    cluster, client = connect_cluster(ctx.settings, args.cluster)
    with client:
        engine = ctx.engine()
        due = cluster.due_campaigns(engine, args.campaign, full=args.full)
        if not due:
            where = args.campaign or "any campaign"
            echo(f"nothing new in {where}: nothing to do")
            return 0
        results = cluster.recompute_on(
            client, ctx.settings, due, full=args.full, on_result=lambda r: echo(r.line())
        )
    _notify(ctx, [(r.campaign, r.outcome.run_id) for r in results
                  if r.outcome and r.outcome.status == "ok" and r.outcome.run_id])  # fmt: skip
    unrecorded = sum(1 for r in results if r.status in ("refused", "lost"))
    return _summary([r.campaign for r in results if r.failed], len(results), unrecorded)


def _summary(failed: list[str], n: int, unrecorded: int = 0) -> int:
    if failed:
        echo(
            f"monitor: error: {len(failed)} of {n} campaigns failed: "
            f"{', '.join(failed)} (the other campaigns were recomputed)",
            err=True,
        )
        where = (
            "a run that failed is recorded on its campaign; a job refused or lost is only in "
            "the lines above"
            if unrecorded
            else "each failure is recorded on the campaign's run"
        )
        echo(f"hint: {where}; fix the cause and run monitor recompute again", err=True)
        return 1
    return 0
