"""Notifications after a run: one message when worker decisions or campaign verdicts changed.

After ``monitor recompute`` and each run of ``monitor schedule``, every campaign that got a new
run is compared with its previous run: the workers whose decision changed (``ok`` to
``block``, ...) and the campaign's verdict (Krippendorff's alpha reliable, tentative,
unreliable or undetermined). When something changed, one message covers every campaign of the
run (never one per worker): a JSON body ``{"text": ...}`` POSTed to ``notify_webhook_url``
(what Slack, Mattermost, Rocket.Chat and Teams' incoming webhooks take), and/or an e-mail to
``notify_email_to`` over SMTP (``smtp_host``, ``smtp_port``, ``smtp_security``; the login from
``MONITOR_SMTP_USER`` and ``MONITOR_SMTP_PASSWORD`` when set). A notification that cannot be
sent is logged in one line; the run it reports on is kept.
"""

from __future__ import annotations

import logging
import os
import smtplib
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage

from sqlalchemy import Engine, select

from monitor.core.settings import Settings

log = logging.getLogger("monitor.notify")

SMTP_USER_ENV = "MONITOR_SMTP_USER"
SMTP_PASSWORD_ENV = "MONITOR_SMTP_PASSWORD"
MAX_WORKERS_NAMED = 10
"""Workers named per campaign in a message; the rest are counted."""
TIMEOUT = 20.0


@dataclass(frozen=True)
class CampaignChange:
    """What changed in a campaign from its previous run to this one."""

    campaign: str
    run: int
    before_run: int
    decisions: list[tuple[str, str, str]] = field(default_factory=list)
    """(worker, decision before, decision now), by worker."""
    verdict: tuple[str, str] | None = None
    """(verdict before, verdict now) when it changed."""

    def line(self) -> str:
        parts = []
        if self.verdict:
            parts.append(f"verdict {self.verdict[0]} → {self.verdict[1]}")
        if self.decisions:
            shown = [f"{w} {a} → {b}" for w, a, b in self.decisions[:MAX_WORKERS_NAMED]]
            more = len(self.decisions) - len(shown)
            n = len(self.decisions)
            parts.append(
                f"{n} worker decision{'s' if n > 1 else ''} changed: "
                + ", ".join(shown)
                + (f" and {more} more" if more > 0 else "")
            )
        return f"{self.campaign} (run {self.before_run} → {self.run}): " + "; ".join(parts)


def _verdict(alpha: float | None) -> str:
    from monitor.report.verdict import verdict

    return str(verdict(alpha, None)["level"])


def changes(engine: Engine, runs: Iterable[tuple[str, int]]) -> list[CampaignChange]:
    """The changes of each (campaign, run id) from the campaign's previous successful run;
    campaigns with no previous run or nothing changed are left out."""
    from monitor.store.engine import snapshot
    from monitor.store.models import MetricRun
    from monitor.store.runs import run_values

    out = []
    with snapshot(engine) as s:
        for name, run_id in runs:
            now = s.get(MetricRun, run_id)
            if now is None or now.status != "ok":
                continue
            before = s.scalars(
                select(MetricRun)
                .where(
                    MetricRun.campaign_id == now.campaign_id,
                    MetricRun.status == "ok",
                    MetricRun.id < run_id,
                )
                .order_by(MetricRun.id.desc())
                .limit(1)
            ).one_or_none()
            if before is None:
                continue

            def decisions(rid: int) -> dict[str, str]:
                return {
                    v.subject: str((v.detail or {}).get("decision") or "cannot_tell")
                    for v in run_values(s, rid, "worker", ["decision"])
                }

            def alpha(rid: int) -> float | None:
                vals = run_values(s, rid, "campaign", ["krippendorff_alpha"])
                return vals[0].value if vals else None

            d_now, d_before = decisions(now.id), decisions(before.id)
            moved = [
                (w, d_before.get(w, "none"), d)
                for w, d in sorted(d_now.items())
                if d_before.get(w, "cannot_tell") != d and not (w not in d_before and d == "ok")
            ]
            v_now, v_before = _verdict(alpha(now.id)), _verdict(alpha(before.id))
            verdict = (v_before, v_now) if v_now != v_before else None
            if moved or verdict:
                out.append(CampaignChange(name, now.number, before.number, moved, verdict))
    return out


def message(found: list[CampaignChange]) -> tuple[str, str]:
    """(subject, text) of the one message of a run."""
    n = len(found)
    subject = f"monitor: {n} campaign{'s' if n > 1 else ''} changed"
    if n == 1:
        subject += f" ({found[0].campaign})"
    return subject, "\n".join([subject, *(c.line() for c in found)])


@dataclass
class Sent:
    """Where the message went, and what failed (one line each)."""

    webhook: bool = False
    email: bool = False
    errors: list[str] = field(default_factory=list)


def send_webhook(url: str, text: str) -> None:
    """POST ``{"text": text}``; :class:`RuntimeError` (one line) on failure."""
    import httpx

    try:
        r = httpx.post(url, json={"text": text}, timeout=TIMEOUT)
    except httpx.HTTPError as exc:
        raise RuntimeError(f"webhook did not answer: {type(exc).__name__}") from None
    if r.status_code >= 300:
        raise RuntimeError(f"webhook answered {r.status_code}")


def send_email(
    settings: Settings, subject: str, text: str, env: Mapping[str, str] | None = None
) -> None:
    """One e-mail to ``notify_email_to`` through the SMTP server of the settings."""
    env = os.environ if env is None else env
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = settings.notify_email_from
    msg["To"] = ", ".join(a.strip() for a in settings.notify_email_to.split(","))
    msg.set_content(text)
    host, port = settings.smtp_host, settings.smtp_port
    smtp: smtplib.SMTP
    if settings.smtp_security == "ssl":
        smtp = smtplib.SMTP_SSL(host, port, timeout=TIMEOUT, context=ssl.create_default_context())
    else:
        smtp = smtplib.SMTP(host, port, timeout=TIMEOUT)
    with smtp:
        if settings.smtp_security == "starttls":
            smtp.starttls(context=ssl.create_default_context())
        user = env.get(SMTP_USER_ENV)
        if user:
            smtp.login(user, env.get(SMTP_PASSWORD_ENV, ""))
        smtp.send_message(msg)


def enabled(settings: Settings) -> bool:
    return bool(settings.notify_webhook_url or settings.notify_email_to)


def notify(engine: Engine, settings: Settings, runs: Iterable[tuple[str, int]]) -> Sent | None:
    """Send the one message of a run (None: nothing to send, or no notification set up).
    Failures are logged and returned, never raised."""
    runs = list(runs)
    if not enabled(settings) or not runs:
        return None
    found = changes(engine, runs)
    if not found:
        return None
    subject, text = message(found)
    sent = Sent()
    if settings.notify_webhook_url:
        try:
            send_webhook(settings.notify_webhook_url, text)
            sent.webhook = True
        except RuntimeError as exc:
            sent.errors.append(f"notification: {exc}")
    if settings.notify_email_to:
        try:
            send_email(settings, subject, text)
            sent.email = True
        except (OSError, smtplib.SMTPException) as exc:
            sent.errors.append(f"notification e-mail failed: {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''}")  # fmt: skip
    for e in sent.errors:
        log.warning("%s", e)
    return sent
