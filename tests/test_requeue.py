"""``monitor export requeue``: the items or pairs the latest run flags ambiguous, with their
text, in each platform's task format; gold items never; bad input."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine

from monitor.actions.requeue import requeue
from monitor.core.errors import UsageError
from monitor.core.results import FlagRecord
from monitor.store.campaigns import CampaignSpec, create_campaign
from monitor.store.engine import session_factory, transaction
from monitor.store.models import Item
from monitor.store.save import insert_run


def _campaign(
    engine: Engine,
    spec: CampaignSpec,
    items: dict[str, tuple[str | None, str | None]],
    flags: list[FlagRecord],
    run: bool = True,
) -> None:
    """items: id -> (text, gold); one run with ``flags`` (none when ``run`` is False)."""
    with transaction(engine) as s:
        c = create_campaign(s, spec)
        s.add_all(
            Item(campaign_id=c.id, external_id=i, text=t, gold=g) for i, (t, g) in items.items()
        )
        s.flush()
        if run:
            insert_run(
                s, campaign_id=c.id, watermark=10**6, full=True, started_at=datetime.now(UTC),
                parameters={}, code_version="test", n_judgments=0, n_new=0, seconds=0.1,
                values=[], flags=flags,
            )  # fmt: skip


def _flag(subject: str, value: float, scope: str = "item", rule: str = "ambiguous") -> FlagRecord:
    return FlagRecord(scope, subject, rule, value, 0.5, {"message": f"split {subject}"})


def _requeue(engine: Engine, name: str, platform: str = "csv"):  # noqa: ANN202
    with session_factory(engine)() as s:
        return requeue(s, name, platform)


@pytest.fixture
def labels(engine: Engine) -> None:
    items = {
        "i1": ("first text", None),
        "i2": ("=HYPERLINK(1)", None),
        "i3": (None, None),
        "g1": ("known", "a"),  # gold: never sent back
        "i4": ("settled", None),
    }
    flags = [
        _flag("i1", 0.6),
        _flag("i2", 0.4),
        _flag("i3", 0.5),
        _flag("g1", 0.3),
        _flag("i4", 0.2, rule="low_uqs"),  # another rule: not sent back
    ]
    _campaign(engine, CampaignSpec("lab", "label", categories=("a", "b")), items, flags)


def test_items_sent_back_least_settled_first_with_their_text(engine: Engine, labels) -> None:  # noqa: ANN001
    done = _requeue(engine, "lab")
    rows = list(csv.reader(io.StringIO(done.text)))
    assert rows[0] == ["item", "text"]
    # by the flag's value; an item without a text shows its id; the gold item is left out
    assert rows[1:] == [["i2", "'=HYPERLINK(1)"], ["i3", "i3"], ["i1", "first text"]]
    assert done.n == 3
    assert done.note is None


def test_each_platform_takes_its_format(engine: Engine, labels) -> None:  # noqa: ANN001
    toloka = _requeue(engine, "lab", "toloka").text.split("\r\n")
    assert toloka[0] == "INPUT:item\tINPUT:text"
    assert toloka[1] == "i2\t'=HYPERLINK(1)"
    studio = json.loads(_requeue(engine, "lab", "labelstudio").text)
    assert studio[0] == {"data": {"item": "i2", "text": "=HYPERLINK(1)"}}
    assert len(studio) == 3
    assert _requeue(engine, "lab", "prolific").text == _requeue(engine, "lab", "csv").text


def test_pairs_sent_back_in_the_plan_layout(engine: Engine) -> None:
    items = {"a": ("text a", None), "b": (None, None), "g1": (None, "1"), "g2": (None, "2")}
    flags = [
        _flag("a\tb", 0.01, "pair"),
        _flag("g1\tg2", 0.001, "pair"),
        _flag("a\tg1", 0.02, "pair"),
    ]
    _campaign(engine, CampaignSpec("pw", "pairwise"), items, flags)
    done = _requeue(engine, "pw")
    rows = list(csv.DictReader(io.StringIO(done.text)))
    assert [(r["left"], r["right"], r["left_text"], r["right_text"]) for r in rows] == [
        ("a", "b", "text a", "b"),
        ("a", "g1", "text a", "g1"),  # one gold item: the pair's order is still unknown
    ]
    assert all(r["pair_id"].startswith("p-") for r in rows)
    assert len({r["pair_id"] for r in rows}) == 2


def test_nothing_to_send_back_writes_the_header_and_says_so(engine: Engine) -> None:
    _campaign(engine, CampaignSpec("quiet", "rating", scale_min=1, scale_max=5), {}, [])
    done = _requeue(engine, "quiet")
    assert done.text == "item,text\r\n"
    assert done.n == 0
    assert done.note is not None
    assert "flags no items ambiguous" in done.note
    _campaign(engine, CampaignSpec("new", "rating", scale_min=1, scale_max=5), {}, [], run=False)
    note = _requeue(engine, "new").note
    assert note is not None
    assert "no run yet" in note


def test_unknown_platform_is_refused(engine: Engine, labels) -> None:  # noqa: ANN001
    with pytest.raises(UsageError, match="unknown platform 'mturk'"):
        _requeue(engine, "lab", "mturk")


def test_cli(engine: Engine, db_url: str, labels, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from monitor.cli import main

    out = tmp_path / "requeue.tsv"
    args = ["export", "requeue", "--db", db_url, "--campaign", "lab"]
    assert main([*args, "--platform", "toloka", "--out", str(out)]) == 0
    assert out.read_text().startswith("INPUT:item\tINPUT:text")
    capsys.readouterr()
    assert main([*args, "--platform", "json"]) == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert len(err.err.strip().splitlines()) == 1
    assert "unknown platform 'json'" in err.err
    _campaign(engine, CampaignSpec("quiet", "label", categories=("a", "b")), {}, [])
    assert main(["export", "requeue", "--db", db_url, "--campaign", "quiet"]) == 0
    err = capsys.readouterr()
    assert err.out == "item,text\r\n"
    assert "nothing to send back" in err.err


def test_a_gold_item_is_never_flagged_ambiguous(db_url: str, tmp_path: Path) -> None:
    """End to end: items the workers split on are flagged ambiguous until their gold value is
    given; then the run flags them no more, and the requeue file leaves them out."""
    from monitor.cli import main
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import make_engine
    from monitor.store.runs import latest_run, run_flags

    rng = np.random.default_rng(3)
    truth = {f"i{k:02d}": "ab"[k % 2] for k in range(40)}
    split = [f"s{k}" for k in range(6)]
    path = tmp_path / "j.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["worker", "item", "value"])
        for k in range(4):
            for item, t in truth.items():
                w.writerow([f"w{k}", item, t if rng.random() < 0.9 else "ab"[t == "a"]])
            for item in split:  # two say a, two say b
                w.writerow([f"w{k}", item, "ab"[k % 2]])
    gold = tmp_path / "gold.csv"
    gold.write_text("item,gold\ns0,a\ns1,b\n")
    db = ["--db", db_url]
    assert main([*db, "campaign", "create", "g", "--kind", "label"]) == 0
    assert main([*db, "ingest", str(path), "--campaign", "g"]) == 0

    def flagged() -> set[str]:
        assert main([*db, "recompute", "--campaign", "g"]) == 0
        engine = make_engine(db_url)
        try:
            with session_factory(engine)() as s:
                run = latest_run(s, get_campaign(s, "g").id)
                assert run is not None
                return {f.subject for f in run_flags(s, run.id, "item") if f.rule == "ambiguous"}
        finally:
            engine.dispose()

    assert {"s0", "s1", "s2"} <= flagged()
    assert main([*db, "ingest", "--items", str(gold), "--campaign", "g"]) == 0
    after = flagged()
    assert "s2" in after
    assert not {"s0", "s1"} & after
    out = tmp_path / "again.csv"
    assert main([*db, "export", "requeue", "--campaign", "g", "--out", str(out)]) == 0
    sent = {r["item"] for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert "s2" in sent
    assert not {"s0", "s1"} & sent


def test_without_gold_keeps_a_pair_with_one_unknown_item() -> None:
    from monitor.rules.item import without_gold

    flags = [
        _flag("g1", 0.1),
        _flag("i1", 0.1),
        _flag("g1\tg2", 0.1, "pair"),
        _flag("g1\ti1", 0.1, "pair"),
        _flag("g1", 0.1, "worker", "low_quality"),  # a worker of that name is no item
    ]
    kept = without_gold(flags, {"g1", "g2"})
    assert [(f.scope, f.subject) for f in kept] == [
        ("item", "i1"),
        ("pair", "g1\ti1"),
        ("worker", "g1"),
    ]


@pytest.mark.parametrize(
    ("interval", "flagged"),
    [([0.40, 0.62], True), ([0.78, 0.86], False), ([0.10, 0.45], False), (None, True)],
)
def test_an_ambiguous_pair_is_one_the_workers_divide_on(interval, flagged: bool) -> None:  # noqa: ANN001
    """The split test alone flags a pair of 354 answers split 82/18 (more against its order
    than the annotators' reliability expects); a pair is ambiguous only when the interval of
    its first-item share holds one half (a run stored without that interval: the test alone)."""
    from monitor.core.results import Value
    from monitor.rules import RunValues, Thresholds
    from monitor.rules.item import ambiguous_pair

    detail = {"q_value": 1e-6, "against": 64, "expected_against": 30.0, "ties": 0}
    if interval is not None:
        detail["first_interval"] = interval
    run = RunValues(
        "pairwise",
        [
            Value("campaign", "c", "model_iterations", 10.0, detail={"converged": True}),
            Value("pair", "a\tb", "model_split_p", 1e-8, n=354, detail={**detail, "left": "a"}),
        ],
    )
    flags = ambiguous_pair(run, Thresholds())
    assert [f.subject for f in flags] == (["a\tb"] if flagged else [])
    if flagged and interval is not None:
        assert "no clear majority" in flags[0].evidence["message"]
