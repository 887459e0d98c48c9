"""Benchmark: ``monitor push prolific --apply`` against a local HTTP server shaped as
Prolific's API, for a study of N participants (10% decided block).

    .venv/bin/python bench/push_prolific.py            # 200, 2000 participants
    .venv/bin/python bench/push_prolific.py --quick    # 200

Times the first push (the group append, a transition per submission, one bonus payment created
and paid: every action recorded pending, then done, in the ledger) and the second (nothing left
to send: the submissions read, the ledger read), with the number of requests each sent. SQLite
in a temporary folder; the server answers at once, so the time is monitor's own.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_httpserver import HTTPServer  # noqa: E402
from werkzeug import Request, Response  # noqa: E402

from monitor.connectors import prolific, prolific_api  # noqa: E402
from monitor.store.campaigns import CampaignSpec, create_campaign  # noqa: E402
from monitor.store.engine import make_engine, transaction  # noqa: E402
from monitor.store.migrate import upgrade  # noqa: E402
from monitor.store.models import Item, Judgment, Worker  # noqa: E402
from monitor.store.runs import Value  # noqa: E402
from monitor.store.save import insert_run  # noqa: E402

STUDY, GROUP, TOKEN, PAGE = "study1", "group1", "bench-token", 200


def serve(n: int) -> tuple[HTTPServer, dict[str, int]]:
    subs = [{"id": f"s{k}", "participant_id": f"p{k}", "status": "AWAITING REVIEW"}
            for k in range(n)]  # fmt: skip
    counts = {"POST": 0, "GET": 0}

    def handler(request: Request) -> Response:
        counts[request.method] = counts.get(request.method, 0) + 1
        if request.method == "GET":
            page = int(request.args.get("page", "1"))
            nxt = server.url_for(request.path) + f"?page={page + 1}" if page * PAGE < n else None
            body = {"results": subs[(page - 1) * PAGE : page * PAGE],
                    "_links": {"next": {"href": nxt} if nxt else None}}  # fmt: skip
            return Response(json.dumps(body), content_type="application/json")
        if request.path.endswith("/bonus-payments/"):
            return Response(json.dumps({"id": "bulk1"}), status=201,
                            content_type="application/json")  # fmt: skip
        if re.search(r"/transition/$", request.path):
            return Response(json.dumps({"status": "APPROVED"}), content_type="application/json")
        return Response("{}", content_type="application/json")

    server = HTTPServer(host="127.0.0.1", port=0)
    server.expect_request(re.compile("^/api/v1/.*")).respond_with_handler(handler)
    server.start()
    return server, counts


def database(folder: str, n: int) -> str:
    url = f"sqlite:///{folder}/bench.db"
    engine = make_engine(url)
    upgrade(engine)
    with transaction(engine) as s:
        c = create_campaign(s, CampaignSpec("bench", "label", categories=("a", "b")))
        workers = [Worker(campaign_id=c.id, external_id=f"p{k}") for k in range(n)]
        item = Item(campaign_id=c.id, external_id="i")
        s.add_all([*workers, item])
        s.flush()
        s.add_all(Judgment(campaign_id=c.id, worker_id=w.id, item_id=item.id, value_label="a",
                           dedup_key=w.external_id) for w in workers)  # fmt: skip
        values = []
        for k in range(n):
            d = "block" if k % 10 == 0 else "ok"
            values.append(Value("worker", f"p{k}", "decision", 0.0,
                                detail={"decision": d, "reason": "answers no better than chance"}))  # fmt: skip
            values.append(Value("worker", f"p{k}", "model_weight", 0.5 + (k % 5) / 10))
        insert_run(s, campaign_id=c.id, watermark=10**9, full=True, started_at=datetime.now(UTC),
                   parameters={}, code_version="bench", n_judgments=n, n_new=n, seconds=0.0,
                   values=values, flags=[])  # fmt: skip
    engine.dispose()
    return url


def run(n: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = database(folder, n)
        server, counts = serve(n)
        engine = make_engine(url)
        options = prolific.Options(group=GROUP, study=STUDY, approve=True, reject=True,
                                   bonus=Decimal("1.00"), apply=True)  # fmt: skip
        try:
            for label in ("first push", "second push"):
                before = dict(counts)
                client = prolific_api.Client(server.url_for("/").rstrip("/"), TOKEN)
                t0 = time.perf_counter()
                out = prolific.push(engine, "bench", options, client)
                dt = time.perf_counter() - t0
                client.close()
                posts = counts["POST"] - before.get("POST", 0)
                gets = counts["GET"] - before.get("GET", 0)
                print(f"{n:>6} participants  {label:<11}  {dt:7.2f} s  {posts:>5} POST  "
                      f"{gets:>3} GET  sent {out.sent}, already done {out.already}")  # fmt: skip
        finally:
            engine.dispose()
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    os.environ.pop("MONITOR_PROLIFIC_TOKEN", None)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    for n in (200,) if args.quick else (200, 2000):
        run(n)


if __name__ == "__main__":
    main()
