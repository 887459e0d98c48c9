"""A small campaign written straight into the store, with runs that follow docs/store-values.md."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import combinations

from sqlalchemy import Engine

from monitor.store.campaigns import CampaignInfo, CampaignSpec, create_campaign
from monitor.store.engine import transaction
from monitor.store.models import Item, Judgment, Preference, Worker
from monitor.store.runs import FlagRecord, RunInfo, Value
from monitor.store.save import insert_run

XSS = "<script>alert(1)</script>"
XSS_ATTR = '"><img src=x onerror=alert(1)>'
XSS_URL = "javascript:alert(1)"
LONG_ID = "worker-" + "0123456789abcdef" * 8
"""An id far longer than a column: it must wrap, never widen the page."""

# worker -> value given to every item (w6 answers at random-ish, the spammer)
ANSWERS = {
    "w1": [4, 4, 2, 5, 1, 3, 4, 2],
    "w2": [4, 4, 3, 5, 1, 3, 4, 2],
    "w3": [4, 5, 1, 5, 1, 3, 4, 2],
    "w4": [4, 4, 5, 5, 2, 3, 4, 2],
    "w5": [5, 4, 2, 5, 1, 3, 5, 2],
    "w6": [1, 1, 1, 1, 1, 1, 1, 1],
}


def _run(session, campaign: CampaignInfo, values, flags, watermark: int) -> RunInfo:
    return insert_run(
        session,
        campaign_id=campaign.id,
        watermark=watermark,
        full=True,
        started_at=datetime.now(UTC),
        parameters={"low_agreement_ratio": 0.6},
        code_version="test",
        n_judgments=watermark,
        n_new=watermark,
        seconds=0.5,
        values=values,
        flags=flags,
    )


def rating_campaign(engine: Engine, name: str = "quality", *, evil: bool = False) -> CampaignInfo:
    """Six workers rate eight items on 1..5; w6 is a spammer, i3 ambiguous; two runs.

    With ``evil``, a worker, an item text and an annotation carry HTML/JS payloads, and the
    ambiguous item and a worker have ids far longer than a column (:data:`LONG_ID`).
    """
    answers = dict(ANSWERS)
    if evil:
        answers[XSS] = answers.pop("w6")
        answers[LONG_ID] = answers.pop("w1")

    def iid(k: int) -> str:
        return LONG_ID.replace("worker", "item") if evil and k == 3 else f"i{k}"

    texts = [f"Text of item {k}" for k in range(1, 9)]
    if evil:
        texts[2] = f"{XSS} {XSS_ATTR} {XSS_URL}"
    with transaction(engine) as s:
        c = create_campaign(s, CampaignSpec(name, "rating", scale_min=1, scale_max=5))
        workers = {w: Worker(campaign_id=c.id, external_id=w) for w in answers}
        items = [Item(campaign_id=c.id, external_id=iid(k), text=texts[k - 1]) for k in range(1, 9)]
        s.add_all([*workers.values(), *items])
        s.flush()
        for w, vals in answers.items():
            for item, v in zip(items, vals, strict=True):
                s.add(
                    Judgment(
                        campaign_id=c.id,
                        worker_id=workers[w].id,
                        item_id=item.id,
                        value_num=float(v),
                        dedup_key=f"{w}:{item.external_id}",
                        duration_s=12.0,
                    )
                )
        s.flush()
        spammer = XSS if evil else "w6"
        n = len(answers) * 8

        def campaign_values(alpha: float, lo: float, hi: float) -> list[Value]:
            return [
                Value("campaign", name, "n_workers", 6.0),
                Value("campaign", name, "n_items", 8.0),
                Value("campaign", name, "n_judgments", float(n)),
                Value("campaign", name, "percent_agreement", 0.55, n=8, detail={"pooled": 0.5}),
                Value(
                    "campaign", name, "krippendorff_alpha", alpha, lo, hi, n, {"level": "interval"}
                ),
                Value("campaign", name, "fleiss_kappa", 0.31, 0.2, 0.4, 8),
                Value(
                    "campaign",
                    name,
                    "cohen_kappa",
                    None,
                    detail={"reason": "more than two workers"},
                ),
                Value(
                    "campaign", name, "scott_pi", None, detail={"reason": "more than two workers"}
                ),
                Value("campaign", name, "phi", 0.52, 0.44, 0.6, 8, {"map": 0.53, "method": "full"}),
            ]

        _run(s, c, campaign_values(0.58, 0.50, 0.66), [], n - 8)
        values = campaign_values(0.62, 0.55, 0.70)
        first = LONG_ID if evil else "w1"
        wqs = {first: 0.81, "w2": 0.78, "w3": 0.7, "w4": 0.66, "w5": 0.74, spammer: 0.12}
        for w in answers:
            values += [
                Value("worker", w, "n_judgments", 8.0),
                Value("worker", w, "wqs", wqs[w], n=8),
                Value("worker", w, "wwa", wqs[w] + 0.05, n=8),
                Value("worker", w, "wua", wqs[w] + 0.1, n=8),
                Value("worker", w, "agreement_loo", wqs[w] - 0.05, n=8, detail={"method": "mean"}),
            ]
        for k in range(1, 9):
            counts: dict[str, int] = {}
            for vals in answers.values():
                counts[str(vals[k - 1])] = counts.get(str(vals[k - 1]), 0) + 1
            values += [
                Value("item", iid(k), "n_judgments", 6.0, detail={"answers": counts}),
                Value("item", iid(k), "uqs", 0.3 if k == 3 else 0.8),
                Value(
                    "item",
                    iid(k),
                    "uas",
                    None,
                    detail={"scores": {a: c / 6 for a, c in counts.items()}},
                ),
                Value("item", iid(k), "phi_mu", 3.0 + k / 10, 2.5, 3.5),
            ]
        annotations = ["1", "2", "3", "4", XSS if evil else "5"]
        values += [Value("annotation", a, "aqs", 0.7) for a in annotations]
        flags = [
            FlagRecord(
                "worker",
                spammer,
                "low_quality",
                0.12,
                0.44,
                {
                    "message": "WQS 0.12 is below 0.6 x the campaign median 0.74",
                    "n": 8,
                    "campaign_median": 0.74,
                    "interval": [0.05, 0.2],
                },
            ),
            FlagRecord(
                "item",
                iid(3),
                "ambiguous",
                0.3,
                0.5,
                {"message": "UQS 0.30 below 0.5", "n": 6},
            ),
            FlagRecord(
                "campaign",
                name,
                "phi_alpha_disagree",
                0.52,
                None,
                {"message": "Phi 0.52 and alpha 0.62 disagree", "n": 8},
            ),
        ]
        _run(s, c, values, flags, n)
    return c


def pairwise_campaign(engine: Engine, name: str = "prefs") -> CampaignInfo:
    """Three annotators compare four things; p3 contradicts itself."""
    things = ["a", "b", "c", "d"]
    outcomes = {
        "p1": "left",
        "p2": "left",
        "p3": None,  # cycles
    }
    with transaction(engine) as s:
        c = create_campaign(s, CampaignSpec(name, "pairwise"))
        workers = {w: Worker(campaign_id=c.id, external_id=w) for w in outcomes}
        items = {t: Item(campaign_id=c.id, external_id=t, text=f"Thing {t}") for t in things}
        s.add_all([*workers.values(), *items.values()])
        s.flush()
        n = 0
        for w, out in outcomes.items():
            for k, (lt, r) in enumerate(combinations(things, 2)):
                s.add(
                    Preference(
                        campaign_id=c.id,
                        worker_id=workers[w].id,
                        left_item_id=items[lt].id,
                        right_item_id=items[r].id,
                        outcome=out or ("left" if k % 2 else "right"),
                        dedup_key=f"{w}:{lt}:{r}",
                    )
                )
                n += 1
        s.flush()
        values = [
            Value("campaign", name, "n_workers", 3.0),
            Value("campaign", name, "n_items", 4.0),
            Value("campaign", name, "n_judgments", float(n)),
            Value("campaign", name, "percent_agreement", 0.6, n=6),
            Value("campaign", name, "krippendorff_alpha", 0.35, 0.1, 0.6, n, {"level": "nominal"}),
            Value("campaign", name, "transitivity_kappa", 0.6, n=12, detail={"p_e": 13 / 27}),
            Value(
                "campaign",
                name,
                "preference_design",
                3.0,
                n=3,
                detail={
                    "message": "reliability: agreement with the consensus order; "
                    "transitivity: 3 of 3 annotators closed a triangle"
                },
            ),
        ]
        for w, kappa in (("p1", 1.0), ("p2", 1.0), ("p3", -0.2)):
            cycles = (
                [
                    {
                        "items": ["a", "b", "c"],
                        "relations": [-1, -1, 1],
                        "judgments": [7, 9, 8],
                        "text": "a < b, b < c, a > c",
                    }
                ]
                if w == "p3"
                else []
            )
            values += [
                Value("worker", w, "n_judgments", 6.0),
                Value("worker", w, "wqs", 0.9 if kappa > 0 else 0.3, n=6),
                Value(
                    "worker",
                    w,
                    "transitivity_kappa",
                    kappa,
                    n=4,
                    detail={
                        "p_a": 1.0 if kappa > 0 else 0.25,
                        "p_e": 13 / 27,
                        "triplets": 4,
                        "transitive": 4 if kappa > 0 else 1,
                        "cycles": cycles,
                    },
                ),
                Value("worker", w, "tie_rate", 0.0, n=6),
                Value(
                    "worker",
                    w,
                    "position_bias",
                    1.0 if w != "p3" else 0.5,
                    n=6,
                    detail={"p_value": 0.03 if w != "p3" else 1.0},
                ),
            ]
        for k, t in enumerate(things):
            values.append(
                Value("item", t, "score", 1.5 - k, 1.0 - k, 2.0 - k, 9, {"count_score": 3.0 - k})
            )
        for lt, r in combinations(things, 2):
            subject = f"{lt}\t{r}"
            values += [
                Value("pair", subject, "n_judgments", 3.0, detail={"left": lt, "right": r}),
                Value("pair", subject, "uqs", 0.6),
                Value(
                    "pair", subject, "uas", None, detail={"scores": {"left": 0.67, "right": 0.33}}
                ),
            ]
        flags = [
            FlagRecord(
                "worker",
                "p3",
                "intransitive",
                -0.2,
                0.5,
                {"message": "kappa -0.20 below 0.5 over 4 triplets", "n": 4},
            ),
        ]
        _run(s, c, values, flags, n)
    return c
