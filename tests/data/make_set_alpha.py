"""Writes ``tests/data/set_alpha.json``: a multi-label case and its Krippendorff's alpha at
the MASI and Jaccard distances, computed by an independent implementation, NLTK's
``AnnotationTask(distance=...).alpha()`` (``nltk`` is in the ``test`` extra).

Run from the repository root: ``python tests/data/make_set_alpha.py``. The case is drawn
from a seeded generator (standard library only): 60 items, 8 workers, 6 options; each item
has a true set, each worker answers a subset of the items with the true set, the true set
with one option added or dropped, or a random non-empty set; items judged by one worker only
and items where some workers gave identical sets are included. NLTK cannot compare two empty
sets (it divides by a zero union), so no answer is empty.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import nltk
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import jaccard_distance, masi_distance

OPTIONS = ["a", "b", "c", "d", "e", "f"]
OUT = Path(__file__).with_name("set_alpha.json")


def case(seed: int = 39) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(60):
        truth = set(rng.sample(OPTIONS, rng.randint(1, 3)))
        judged_by = rng.sample(range(8), 1 if i % 15 == 0 else rng.randint(2, 6))
        for w in judged_by:
            r = rng.random()
            if r < 0.5:
                answer = set(truth)
            elif r < 0.8:
                answer = set(truth) ^ {rng.choice(OPTIONS)}
                answer = answer or set(truth)
            else:
                answer = set(rng.sample(OPTIONS, rng.randint(1, 4)))
            rows.append({"worker": f"w{w}", "item": f"i{i:02d}", "value": sorted(answer)})
    return rows


def main() -> None:
    rows = case()
    data = [(r["worker"], r["item"], frozenset(r["value"])) for r in rows]
    expected = {
        "krippendorff_alpha_masi": AnnotationTask(data, distance=masi_distance).alpha(),
        "krippendorff_alpha_jaccard": AnnotationTask(data, distance=jaccard_distance).alpha(),
    }
    doc = {
        "note": (
            "Krippendorff's alpha over set-valued answers, computed by NLTK "
            f"{nltk.__version__} (nltk.metrics.agreement.AnnotationTask with masi_distance and "
            "jaccard_distance) by tests/data/make_set_alpha.py; regenerate with "
            "`python tests/data/make_set_alpha.py`."
        ),
        "kind": "multilabel",
        "scale": {"closed": True, "options": OPTIONS},
        "judgments": rows,
        "expected": expected,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(OUT, expected)


if __name__ == "__main__":
    main()
