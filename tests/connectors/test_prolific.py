"""monitor push prolific against a real local HTTP server shaped as Prolific's API: a dry run
sends nothing, --apply sends each action once however often it is pushed, the pay step is
never repeated, the token never shows; and the webhook signature as Prolific documents it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest
from sqlalchemy import Engine, select

from monitor.cli import main
from monitor.connectors.prolific import MIN_MESSAGE, rejection_message
from monitor.connectors.prolific_webhook import event_id, verify_signature
from monitor.store.engine import transaction
from monitor.store.models import ConnectorAction
from tests.connectors.conftest import GROUP, STUDY, TOKEN, FakeProlific


def _push(db_url: str, prolific: FakeProlific, *extra: str) -> int:
    return main(["--db", db_url, "push", "prolific", "--campaign", "crowd",
                 "--api-url", prolific.server.url_for("/").rstrip("/"), *extra])  # fmt: skip


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONITOR_PROLIFIC_TOKEN", TOKEN)


ALL = ("--group", GROUP, "--study", STUDY, "--approve", "--reject", "--bonus", "1.00")


def test_dry_run_reads_and_sends_nothing(
    db_url: str, engine: Engine, campaign: int, prolific: FakeProlific,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert _push(db_url, prolific, *ALL) == 0
    out = capsys.readouterr().out
    assert prolific.sent("POST") == []
    assert prolific.sent("PATCH") == []
    assert len(prolific.sent("GET")) == 2  # the submissions, two pages
    assert "dry run" in out
    assert f"would append to participant group {GROUP}: 2 participants (P1, P2)" in out
    assert "would reject submission sub00P1 of P1 (FAILED_CHECK" in out
    assert "would reject submission sub01P2 of P2 (LOW_EFFORT" in out
    assert "would approve submission sub02P3 of P3" in out
    assert "P5" not in out.split("would approve")[-1].split("\n")[0]
    # P3 0.80, P4 0.50, P5 1.00 (approved before): 2.30 in all; the blocked get none
    assert "would create a bonus payment in study" in out
    assert "3 participants, 2.30" in out
    assert "1 participants of study" in out  # PX is no worker of the campaign
    with transaction(engine) as s:
        assert s.scalars(select(ConnectorAction)).all() == []
    assert TOKEN not in out


def test_apply_twice_sends_each_action_once(
    db_url: str, engine: Engine, campaign: int, prolific: FakeProlific,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert _push(db_url, prolific, *ALL, "--apply") == 0
    first = [(m, p) for m, p, _ in prolific.sent("POST")]
    assert first == [
        ("POST", f"/api/v1/participant-groups/{GROUP}/participants/"),
        ("POST", "/api/v1/submissions/sub00P1/transition/"),
        ("POST", "/api/v1/submissions/sub01P2/transition/"),
        ("POST", "/api/v1/submissions/sub02P3/transition/"),
        ("POST", "/api/v1/submissions/sub03P4/transition/"),
        ("POST", "/api/v1/submissions/bonus-payments/"),
        ("POST", "/api/v1/bulk-bonus-payments/bulk1/pay/"),
    ]
    assert prolific.group == ["P1", "P2"]
    status = {s["participant_id"]: s["status"] for s in prolific.submissions.values()}
    assert status == {"P1": "REJECTED", "P2": "REJECTED", "P3": "APPROVED", "P4": "APPROVED",
                      "P5": "APPROVED", "PX": "AWAITING REVIEW"}  # fmt: skip
    reject = prolific.sent("POST")[1][2]
    assert reject["rejection_category"] == "FAILED_CHECK"
    assert len(reject["message"]) >= MIN_MESSAGE
    assert "12 gold questions" in reject["message"]
    assert prolific.bulks["bulk1"]["lines"] == [["P3", "0.80"], ["P4", "0.50"], ["P5", "1.00"]]
    assert dict(prolific.paid) == {"bulk1": 1}

    # a repeated push (and a third) sends nothing more
    assert _push(db_url, prolific, *ALL, "--apply") == 0
    assert _push(db_url, prolific, *ALL, "--apply") == 0
    assert [(m, p) for m, p, _ in prolific.sent("POST")] == first
    assert dict(prolific.paid) == {"bulk1": 1}
    out = capsys.readouterr().out
    assert "sent 0 requests" in out
    assert TOKEN not in out
    assert prolific.sent("PATCH") == []
    with transaction(engine) as s:
        rows = s.scalars(select(ConnectorAction)).all()
        assert {r.status for r in rows} == {"done"}
        assert len(rows) == 2 + 4 + 3 + 1  # group, transitions, bonuses, pay
        assert all(TOKEN not in json.dumps(r.payload) for r in rows)


def test_an_unconfirmed_pay_is_never_sent_again(
    db_url: str, engine: Engine, campaign: int, prolific: FakeProlific,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    bonus = ("--study", STUDY, "--bonus", "0.50", "--apply")
    prolific.fail_pay = 1  # the pay request reaches Prolific, its answer is a 502
    assert _push(db_url, prolific, *bonus) == 1
    assert dict(prolific.paid) == {"bulk1": 1}
    capsys.readouterr()
    assert _push(db_url, prolific, *bonus) == 1
    out, err = capsys.readouterr()
    assert "refused: bonus payment bulk1" in err
    assert "--settle-pay bulk1=paid" in err
    assert "settle them" in err
    assert "refused" not in out
    assert dict(prolific.paid) == {"bulk1": 1}
    assert len(prolific.bulks) == 1
    # checked in Prolific: it was not paid; pay it now, once
    assert _push(db_url, prolific, *bonus, "--settle-pay", "bulk1=unpaid") == 0
    assert dict(prolific.paid) == {"bulk1": 2}
    assert len(prolific.bulks) == 1
    assert _push(db_url, prolific, *bonus) == 0
    assert dict(prolific.paid) == {"bulk1": 2}
    assert len(prolific.bulks) == 1


def test_a_settled_paid_payment_is_recorded_not_paid(
    db_url: str, campaign: int, prolific: FakeProlific
) -> None:
    bonus = ("--study", STUDY, "--bonus", "0.50", "--apply")
    prolific.fail_pay = 1
    assert _push(db_url, prolific, *bonus) == 1
    assert _push(db_url, prolific, *bonus, "--settle-pay", "bulk1=paid") == 0
    assert _push(db_url, prolific, *bonus) == 0
    assert dict(prolific.paid) == {"bulk1": 1}
    assert len(prolific.bulks) == 1


def test_an_append_whose_answer_was_lost_is_sent_again(
    db_url: str, engine: Engine, campaign: int, prolific: FakeProlific
) -> None:
    prolific.fail_group = 1
    assert _push(db_url, prolific, "--group", GROUP, "--apply") == 1
    with transaction(engine) as s:
        assert {r.status for r in s.scalars(select(ConnectorAction))} == {"pending"}
    # Prolific ignores participants already in the group: the append is sent again
    assert _push(db_url, prolific, "--group", GROUP, "--apply") == 0
    assert _push(db_url, prolific, "--group", GROUP, "--apply") == 0
    assert len(prolific.sent("POST")) == 2
    assert prolific.group == ["P1", "P2"]


def test_a_refused_action_is_marked_failed_and_tried_again(
    db_url: str, engine: Engine, campaign: int, prolific: FakeProlific,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    prolific.refuse.add("sub02P3")
    args = ("--study", STUDY, "--approve", "--apply")
    assert _push(db_url, prolific, *args) == 1
    err = capsys.readouterr().err
    assert "failed: approved submission sub02P3 of P3: Prolific refused it (400): " \
           "Submission is not awaiting review." in err  # fmt: skip
    with transaction(engine) as s:
        row = s.scalars(select(ConnectorAction).where(ConnectorAction.target == "sub02P3")).one()
        assert row.status == "failed"
        assert "400" in (row.error or "")
    assert prolific.submissions["sub03P4"]["status"] == "APPROVED"  # the others went on
    assert _push(db_url, prolific, *args) == 0
    assert prolific.submissions["sub02P3"]["status"] == "APPROVED"
    transitions = [p for _, p, _ in prolific.sent("POST") if "sub02P3" in p]
    assert len(transitions) == 2


def test_a_wrong_token_is_one_line_exit_1_and_never_shown(
    db_url: str, engine: Engine, campaign: int, prolific: FakeProlific,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("MONITOR_PROLIFIC_TOKEN", "wrong-token-xyz")
    assert _push(db_url, prolific, *ALL, "--apply") == 1
    out, err = capsys.readouterr()
    assert "refused the token (401)" in err
    assert "MONITOR_PROLIFIC_TOKEN" in err
    assert "wrong-token-xyz" not in out + err
    assert prolific.group == []


def test_usage_errors_exit_2(
    db_url: str, campaign: int, prolific: FakeProlific, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert _push(db_url, prolific) == 2  # nothing to push
    assert _push(db_url, prolific, "--approve", "--group", GROUP) == 2  # no --study
    assert _push(db_url, prolific, "--study", STUDY, "--bonus", "-1") == 2
    monkeypatch.delenv("MONITOR_PROLIFIC_TOKEN")
    assert _push(db_url, prolific, "--group", GROUP, "--apply") == 2
    err = capsys.readouterr().err
    assert "set MONITOR_PROLIFIC_TOKEN" in err
    assert prolific.requests == []


def test_unreachable_api_is_exit_1(
    db_url: str, campaign: int, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.connectors.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"
    code = main(["--db", db_url, "push", "prolific", "--campaign", "crowd", "--api-url", url,
                 "--group", GROUP, "--apply"])  # fmt: skip
    assert code == 1
    assert "did not answer" in capsys.readouterr().err


# --- the webhook signature --------------------------------------------------------------------


def documented_signature(secret: str, timestamp: str, body: dict) -> bytes:
    """Prolific's example, as its documentation writes it."""
    encoded_secret = secret.encode()
    text = json.dumps(body)
    return base64.b64encode(
        hmac.new(encoded_secret, str.encode(timestamp + text), hashlib.sha256).digest()
    )


def test_signature_is_the_documented_algorithm() -> None:
    body = {"event_type": "submission.status.change", "resource_id": "sub00P1",
            "status": "APPROVED"}  # fmt: skip
    raw = json.dumps(body).encode()
    sig = documented_signature("whsec", "1764288000", body).decode()
    assert verify_signature("whsec", "1764288000", raw, sig)
    # the same body written compactly (as a server may send it) still verifies
    compact = json.dumps(body, separators=(",", ":")).encode()
    assert verify_signature("whsec", "1764288000", compact, sig)
    assert not verify_signature("other", "1764288000", raw, sig)
    assert not verify_signature("whsec", "1764288001", raw, sig)
    assert not verify_signature("whsec", "1764288000", raw.replace(b"APPROVED", b"REJECTED"), sig)
    assert not verify_signature("whsec", None, raw, sig)
    assert not verify_signature("whsec", "1764288000", raw, None)
    assert not verify_signature("", "1764288000", raw, sig)


def test_event_id_and_rejection_message() -> None:
    assert event_id({"event_id": "e1"}, "1", b"{}") == "e1"
    assert event_id({}, "1", b"{}") == event_id({}, "1", b"{}") != event_id({}, "2", b"{}")
    assert len(rejection_message("")) >= MIN_MESSAGE
    assert len(rejection_message("x")) >= MIN_MESSAGE


def test_the_workers_decided_stop_join_the_exclusion_group_once(
    db_url: str, engine: Engine, campaign: int, prolific: FakeProlific,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from tests.connectors.conftest import DECISIONS, add_run, decision_values

    stops = {**DECISIONS, "P4": ("stop", "right less than 80% of the time", 0.4)}
    add_run(engine, campaign, decision_values(stops))
    assert _push(db_url, prolific, "--exclude-group", GROUP) == 0
    assert f"would append to participant group {GROUP}: 1 participants (P4)" in (
        capsys.readouterr().out
    )
    assert prolific.sent("POST") == []
    assert _push(db_url, prolific, "--exclude-group", GROUP, "--apply") == 0
    assert _push(db_url, prolific, "--exclude-group", GROUP, "--apply") == 0
    posts = prolific.sent("POST")
    assert [(m, p) for m, p, _ in posts] == [
        ("POST", f"/api/v1/participant-groups/{GROUP}/participants/")
    ]
    assert posts[0][2] == {"participant_ids": ["P4"]}  # the blocked P1 and P2 are not in it
    assert prolific.group == ["P4"]
    assert "already in participant group" in capsys.readouterr().out
    with transaction(engine) as s:
        keys = [r.key for r in s.scalars(select(ConnectorAction)).all()]
    assert keys == [f"prolific:exclude:{GROUP}:P4"]
