"""Prolific: the workers' decisions pushed through its API, each action once by its ledger.

What a push sends (``monitor push prolific``), each action once whatever the number of pushes:

- the workers decided ``block`` (and those blocked by hand: the block list of ``monitor export
  blocklist``) appended to a participant group used as a block list, with
  ``POST /api/v1/participant-groups/{id}/participants/`` (never the PATCH of the group, which
  replaces its members);
- ``--exclude-group ID``: the workers the latest run decided ``stop`` (not blocked) appended
  the same way to the campaign's exclusion group, the participant group its studies exclude:
  they get no more of its tasks (``docs/live.md``);
- ``--reject``: their submissions awaiting review rejected
  (``POST /api/v1/submissions/{id}/transition/``, a rejection category and a message of at
  least 100 characters built from the decision's reason); ``--approve``: the other workers'
  submissions awaiting review approved;
- ``--bonus AMOUNT``: each worker not blocked who has a submission gets AMOUNT x their
  effective weight (``monitor export weights``), in two steps: a bulk bonus payment created
  (``POST /api/v1/submissions/bonus-payments/``), then paid
  (``POST /api/v1/bulk-bonus-payments/{id}/pay/``).

Every action has an idempotency key and is recorded in the ledger (:mod:`monitor.store.ledger`)
``pending`` before it is sent and ``done`` once Prolific answered. A push that finds an action
``pending`` (the last one stopped between the two) decides from Prolific's state or the
endpoint's own guarantee: appending a participant already in the group is ignored by Prolific,
so the append is sent again; a submission no longer awaiting review is marked done, else the
transition is sent again (Prolific ignores a repeated one); a bonus payment created and not
paid is paid, one whose creation was not confirmed is created again (creating pays nothing).
The pay step is **not** idempotent (paying twice pays twice): a pay ``pending`` is never sent
again; the push refuses and names the payment, to be checked in Prolific and settled with
``--settle-pay ID=paid`` or ``--settle-pay ID=unpaid``.

Without ``apply`` nothing is sent: the push says what it would do (submissions are read).
The token is read from ``MONITOR_PROLIFIC_TOKEN`` and sent as ``Authorization: Token <t>``;
no message, log or ledger row holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sqlalchemy import Engine

from monitor.connectors.prolific_api import (
    AWAITING_REVIEW,
    TOKEN_ENV,
    Client,
    Refused,
    Submission,
    submissions,
)
from monitor.core.errors import PlatformError, UsageError

PLATFORM = "prolific"
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
"""Prolific's rejection categories (``rejection_category`` of a REJECT transition)."""
MIN_MESSAGE = 100
"""The shortest rejection message Prolific accepts."""
BONUS_STATES = ("APPROVED", AWAITING_REVIEW)
"""The submissions whose participant may get a bonus."""


@dataclass(frozen=True)
class Worker:
    """What a push knows of one worker: blocked (decided block or blocked), the reason, the
    effective weight, and whether the latest run decided ``stop``."""

    id: str
    blocked: bool
    reason: str
    weight: float
    stopped: bool = False


def rejection_category(reason: str) -> str:
    """The rejection category that fits a block decision's reason: answers at chance on gold
    questions failed a check; the rest (the same answer to everything, answers no better than
    chance) is low effort."""
    return "FAILED_CHECK" if "gold" in reason else "LOW_EFFORT"


def rejection_message(reason: str) -> str:
    """The message sent with a rejection, from the decision's reason: at least
    :data:`MIN_MESSAGE` characters.

    >>> len(rejection_message("gave the same answer (3) to 98% of 40 questions")) >= 100
    True
    """
    reason = " ".join(reason.split()) or "your answers did not pass our quality checks"
    text = (
        f"Thank you for taking part. We could not accept this submission: {reason}. "
        "Our quality checks compare each answer with other participants' answers to the same "
        "questions and with known answers where there are some."
    )
    return text if len(text) >= MIN_MESSAGE else text + " " + "." * (MIN_MESSAGE - len(text))


def bonus_amount(amount: Decimal, weight: float) -> Decimal:
    """``amount`` x ``weight`` (clipped to [0, 1]) in cents, rounded half up."""
    w = Decimal(str(min(max(weight, 0.0), 1.0)))
    return (amount * w).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


@dataclass
class Options:
    """What to push: the participant group (block list), the study of the submissions, the
    transitions, the bonus at full weight (None: none) and whether to send."""

    group: str | None = None
    exclude: str | None = None
    study: str | None = None
    approve: bool = False
    reject: bool = False
    bonus: Decimal | None = None
    apply: bool = False
    settle_pay: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    """What a push did (or would do), in lines, and how many actions were sent, already done,
    refused or left unconfirmed."""

    lines: list[str] = field(default_factory=list)
    sent: int = 0
    already: int = 0
    failed: int = 0
    refused: list[str] = field(default_factory=list)


def campaign_workers(engine: Engine, campaign_name: str) -> tuple[int, list[Worker]]:
    """The campaign's id and its workers: blocked (the block list) or not, the reason of the
    block, the effective weight."""
    from monitor.actions.worker_lists import blocklist_entries, worker_decisions, worker_weights
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import snapshot

    with snapshot(engine) as s:
        campaign = get_campaign(s, campaign_name)
        blocked = {e.worker: e.reason for e in blocklist_entries(s, campaign)}
        weights = {w.worker: w.effective for w in worker_weights(s, campaign)}
        stopped = {
            w for w, d in worker_decisions(s, campaign).items() if d.get("decision") == "stop"
        }
    workers = [
        Worker(w, w in blocked, blocked.get(w, ""), weights.get(w, 0.0), w in stopped)
        for w in sorted(set(weights) | set(blocked))
    ]
    return campaign.id, workers


def push(
    engine: Engine,
    campaign_name: str,
    options: Options,
    client: Client | None,
    say: Callable[[str], None] = lambda _line: None,
) -> Outcome:
    """Push a campaign's decisions to Prolific (see the module's documentation); ``client``
    None only for a dry run that reads nothing (a group alone). Each line is also given to
    ``say`` as it happens."""
    from monitor.store.ledger import ledger

    acts = options.approve or options.reject or options.bonus is not None
    if not options.group and not options.exclude and not (options.study and acts):
        raise UsageError(
            "nothing to push: give --group ID, --exclude-group ID and/or --study ID with "
            "--approve, --reject or --bonus"
        )
    if (options.approve or options.reject or options.bonus is not None) and not options.study:
        raise UsageError(
            "--approve, --reject and --bonus act on a study's submissions: give --study ID"
        )
    if options.settle_pay and options.bonus is None:
        raise UsageError("--settle-pay settles a bonus payment: give it with --study and --bonus")
    if options.apply and client is None:
        raise UsageError(f"--apply sends to Prolific: set {TOKEN_ENV}")
    campaign_id, workers = campaign_workers(engine, campaign_name)
    out = Outcome()

    def line(text: str) -> None:
        out.lines.append(text)
        say(text)

    if not options.apply:
        line("dry run: nothing is sent (add --apply to send)")
    done = ledger(engine, campaign_id, PLATFORM)
    pusher = _Pusher(engine, campaign_id, client, options, done, out, line)
    if options.group:
        pusher.group([w for w in workers if w.blocked], options.group)
    if options.exclude:
        stopped = [w for w in workers if w.stopped and not w.blocked]
        pusher.group(stopped, options.exclude, kind="exclude", who="decided stop")
    if options.study and (options.approve or options.reject or options.bonus is not None):
        if client is None:
            raise UsageError(f"reading the study's submissions needs the token: set {TOKEN_ENV}")
        subs = submissions(client, options.study)
        known = {w.id: w for w in workers}
        outside = sorted(p for p in subs if p not in known)
        if outside:
            line(f"{len(outside)} participants of study {options.study} are no workers of "
                 f"campaign {campaign_name}: left alone")  # fmt: skip
        if options.approve or options.reject:
            pusher.transitions(workers, subs)
        if options.bonus is not None:
            pusher.bonuses(workers, subs, options.study, options.bonus)
    return out


@dataclass
class _Pusher:
    engine: Engine
    campaign_id: int
    client: Client | None
    options: Options
    done: dict[str, Any]
    out: Outcome
    line: Callable[[str], None]

    def _status(self, key: str) -> str | None:
        r = self.done.get(key)
        return None if r is None else str(r.status)

    def _send(
        self,
        keys: list[tuple[str, str, str]],
        path: str,
        body: Mapping[str, Any],
        what: str,
    ) -> Any:  # noqa: ANN401
        """Record the actions (key, action, target) pending, send one request, mark them done
        (or failed when Prolific refused it). None when the request was refused."""
        from monitor.store.ledger import mark, record_intent

        assert self.client is not None
        record_intent(self.engine, self.campaign_id, PLATFORM, keys, dict(body))
        names = [k for k, _, _ in keys]
        try:
            answer = self.client.request("POST", path, body)
        except Refused as exc:
            mark(self.engine, names, "failed", error=str(exc))
            self.out.failed += 1
            self.line(f"failed: {what}: {exc}")
            return None
        mark(self.engine, names, "done")
        self.out.sent += 1
        self.line(what)
        return answer

    def group(
        self,
        members: list[Worker],
        group: str,
        kind: str = "group",
        who: str = "blocked or decided block",
    ) -> None:
        """Append ``members`` to participant group ``group``, each once (ledger keys
        ``prolific:KIND:GROUP:WORKER``)."""
        todo, already = [], 0
        for w in members:
            status = self._status(f"prolific:{kind}:{group}:{w.id}")
            if status == "done":
                already += 1
            else:
                todo.append(w.id)
        self.out.already += already
        if already:
            self.line(f"already in participant group {group}: {already} participants")
        if not todo:
            if not already:
                self.line(f"nobody is {who}: nothing to add to participant group {group}")
            return
        names = ", ".join(todo[:5]) + (f" and {len(todo) - 5} more" if len(todo) > 5 else "")
        what = f"participant group {group}: {len(todo)} participants appended ({names})"
        if not self.options.apply:
            self.line(f"would append to {what.split(': ', 1)[0]}: {len(todo)} participants "
                      f"({names})")  # fmt: skip
            return
        self._send(
            [(f"prolific:{kind}:{group}:{p}", "group_add", p) for p in todo],
            f"/api/v1/participant-groups/{group}/participants/",
            {"participant_ids": todo},
            what,
        )

    def transitions(self, workers: list[Worker], subs: Mapping[str, Submission]) -> None:
        for w in workers:
            sub = subs.get(w.id)
            if sub is None:
                continue
            act = "reject" if w.blocked else "approve"
            if (act == "reject" and not self.options.reject) or (
                act == "approve" and not self.options.approve
            ):
                continue
            key = f"prolific:submission:{sub.id}:transition"
            status = self._status(key)
            if status == "done":
                self.out.already += 1
                continue
            if sub.status != AWAITING_REVIEW:
                if status == "pending":  # sent before, confirmed by Prolific's state now
                    from monitor.store.ledger import mark

                    mark(self.engine, [key], "done")
                    self.line(f"submission {sub.id} ({w.id}) is {sub.status}: marked done")
                continue
            body: dict[str, Any] = {"action": act.upper()}
            if act == "reject":
                body["rejection_category"] = rejection_category(w.reason)
                body["message"] = rejection_message(w.reason)
            done = "rejected" if act == "reject" else "approved"
            what = f"{done} submission {sub.id} of {w.id}" + (
                f" ({body['rejection_category']}: {w.reason})" if act == "reject" else ""
            )
            if not self.options.apply:
                self.line("would " + what.replace(done, act, 1))
                continue
            self._send([(key, act, sub.id)], f"/api/v1/submissions/{sub.id}/transition/",
                       body, what)  # fmt: skip

    def bonuses(
        self, workers: list[Worker], subs: Mapping[str, Submission], study: str, amount: Decimal
    ) -> None:
        from monitor.store.ledger import mark

        if self.options.settle_pay:
            self._settle(study)
        rows = [r for k, r in self.done.items() if k.startswith(f"prolific:study:{study}:bonus:")]
        pays = {
            k.split(":")[2]: r for k, r in self.done.items() if k.startswith("prolific:bulk-bonus:")
        }
        unconfirmed = sorted(b for b, r in pays.items() if r.status == "pending")
        if unconfirmed:
            for b in unconfirmed:
                self.out.refused.append(b)
                self.line(
                    f"refused: bonus payment {b}: its pay request was sent and never confirmed; "
                    "paying is not idempotent, so it is not sent again. Check the study's bonus "
                    f"payments in Prolific, then push with --settle-pay {b}=paid (it was paid) "
                    f"or --settle-pay {b}=unpaid (pay it)"
                )
            return
        # a payment created and not paid (the last push stopped before paying): pay it
        created = sorted(
            {r.remote_id for r in rows if r.status == "pending" and r.remote_id}
            - {b for b, r in pays.items() if r.status == "done"}
        )
        for bulk in created:
            keys = [r.key for r in rows if r.remote_id == bulk]
            self._pay(bulk, keys, f"{len(keys)} participants, created before")
        settled = {r.target for r in rows if r.status == "done" or r.remote_id in created}
        todo: list[tuple[str, Decimal]] = []
        for w in workers:
            sub = subs.get(w.id)
            if w.blocked or sub is None or sub.status not in BONUS_STATES:
                continue
            money = bonus_amount(amount, w.weight)
            if money <= 0:
                continue
            if w.id in settled:
                self.out.already += 1
                continue
            todo.append((w.id, money))
        if not todo:
            if not created:
                self.line(f"bonuses of study {study}: nothing to pay")
            return
        total = sum((m for _, m in todo), Decimal(0))
        desc = f"{len(todo)} participants, {total} in all"
        if not self.options.apply:
            self.line(f"would create a bonus payment in study {study} ({desc}), then pay it")
            return
        keys = [(f"prolific:study:{study}:bonus:{p}", "bonus", p) for p, _ in todo]
        body = {"study_id": study, "csv_bonuses": "".join(f"{p},{m}\n" for p, m in todo)}
        answer = self._send(keys, "/api/v1/submissions/bonus-payments/", body,
                            f"created a bonus payment in study {study} ({desc})")  # fmt: skip
        if answer is None:
            return
        bulk = str((answer or {}).get("id") or "")
        if not bulk:
            raise PlatformError("Prolific created a bonus payment without an id: not paid")
        # the rows stay pending with the payment's id until it is paid
        mark(self.engine, [k for k, _, _ in keys], "pending", remote_id=bulk)
        self._pay(bulk, [k for k, _, _ in keys], desc)

    def _settle(self, study: str) -> None:
        """Settle the pays left unconfirmed as the user checked them in Prolific: ``paid`` is
        recorded done, ``unpaid`` failed (the payment is paid by this push)."""
        from monitor.store.ledger import ledger, mark

        for bulk, verdict in self.options.settle_pay.items():
            pay = self.done.get(f"prolific:bulk-bonus:{bulk}:pay")
            if pay is None or pay.status != "pending":
                raise UsageError(f"--settle-pay {bulk}: no unconfirmed pay of that payment")
            paid = verdict == "paid"
            mark(self.engine, [pay.key], "done" if paid else "failed",
                 error=None if paid else "settled unpaid")  # fmt: skip
            rows = [
                k
                for k, r in self.done.items()
                if k.startswith(f"prolific:study:{study}:bonus:") and r.remote_id == bulk
            ]
            mark(self.engine, rows, "done" if paid else "pending")
            self.line(f"bonus payment {bulk}: settled {verdict}")
        self.done = ledger(self.engine, self.campaign_id, PLATFORM)

    def _pay(self, bulk: str, keys: Iterable[str], desc: str) -> None:
        from monitor.store.ledger import mark, record_intent

        if not self.options.apply:
            self.line(f"would pay bonus payment {bulk} ({desc})")
            return
        assert self.client is not None
        pay_key = f"prolific:bulk-bonus:{bulk}:pay"
        record_intent(self.engine, self.campaign_id, PLATFORM, [(pay_key, "bonus_pay", bulk)],
                      None)  # fmt: skip
        try:
            self.client.request("POST", f"/api/v1/bulk-bonus-payments/{bulk}/pay/")
        except Refused as exc:  # Prolific did nothing: it may be paid on the next push
            mark(self.engine, [pay_key], "failed", error=str(exc))
            self.out.failed += 1
            self.line(f"failed: pay bonus payment {bulk}: {exc}")
            return
        mark(self.engine, [pay_key], "done")
        mark(self.engine, list(keys), "done")
        self.out.sent += 1
        self.line(f"paid bonus payment {bulk} ({desc})")
