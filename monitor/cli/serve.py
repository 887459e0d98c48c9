"""``monitor serve``: the webhooks (Label Studio, Prolific) and the reports, read-only."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from monitor.cli.context import Context
from monitor.core.errors import MissingDependency, UsageError


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "serve",
        parents=[common],
        help="serve the webhooks that trigger pulls, and the reports read-only behind a token",
        description="An HTTP server until SIGTERM or Ctrl-C. POST /hooks/labelstudio/CAMPAIGN: "
        "Label Studio's annotation events trigger a pull of the campaign (header "
        "X-Monitor-Secret = $MONITOR_HOOK_SECRET, else 401). POST /hooks/prolific: Prolific's "
        "events, checked against their HMAC signature ($MONITOR_PROLIFIC_WEBHOOK_SECRET) and "
        "deduplicated by event id. GET /reports/: the report folder (--report-dir, setting "
        "report_dir) behind the token $MONITOR_SERVE_TOKEN (Bearer, or Basic as password). A "
        "part whose secret is not set is not served. See docs/operations.md.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: "
                   "127.0.0.1)")  # fmt: skip
    p.add_argument("--port", type=int, default=8080, help="port (default: 8080)")
    p.add_argument("--report-dir", metavar="DIR", help="the reports served (setting report_dir)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}: not a port", hint="e.g. --port 8080")
    try:
        import uvicorn

        from monitor.runtime.server import Secrets, build_app
    except ModuleNotFoundError as exc:
        if exc.name not in ("starlette", "uvicorn"):
            raise
        raise MissingDependency(
            f"monitor serve needs {exc.name}, which is not installed",
            'pip install "monitor[serve]"',
        ) from None
    secrets = Secrets.from_env()
    if not secrets.parts():
        raise UsageError(
            "nothing to serve: no secret is set",
            hint="set MONITOR_HOOK_SECRET (Label Studio webhooks), MONITOR_SERVE_TOKEN (reports) "
            "and/or MONITOR_PROLIFIC_WEBHOOK_SECRET (Prolific webhooks)",
        )
    settings = ctx.settings.replace(report_dir=args.report_dir)
    from monitor.cli.show import PrintableFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(asctime)s %(name)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    app = build_app(ctx.engine(), settings, secrets, report_dir=Path(settings.report_dir))
    logging.getLogger("monitor.serve").info(
        "serving %s on http://%s:%d", ", ".join(secrets.parts()), args.host, args.port
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", access_log=True)
    return 0
