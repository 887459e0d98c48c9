"""How clear are the pairs a preference campaign flags ``ambiguous``?

Runs monitor as a user does (``campaign create``, ``ingest``, ``recompute``, in-process, on a
throwaway SQLite database) on a real preference set (default ``../shared/real-preferences/
passages``: 11,763 strict comparisons of reading passages) and prints, for the pairs the run
flags ambiguous, how their strict answers split: how many were flagged, and how many of those
rest on 20 or more strict answers yet split beyond 70/30 (a pair the workers do not really
divide on: its majority is clear). An ambiguous pair should be one the workers divide on.

    python bench/ambiguous_pairs.py [--data DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/real-preferences/passages")
    args = ap.parse_args()
    from monitor.cli import main as monitor
    from monitor.store.campaigns import get_campaign
    from monitor.store.engine import make_engine, session_factory
    from monitor.store.runs import latest_run, run_flags

    meta = json.loads((args.data / "meta.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        db = ["--db", url]
        assert monitor([*db, "db", "upgrade"]) == 0
        assert monitor([*db, "campaign", "create", "bench", *meta["args"]]) == 0
        assert (
            monitor([*db, "ingest", str(args.data / "preferences.csv"), "--campaign", "bench"]) == 0
        )
        assert monitor([*db, "recompute", "--campaign", "bench"]) == 0
        counts: dict[frozenset[str], Counter[str]] = {}
        with (args.data / "preferences.csv").open(encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if r["preference"] not in ("left", "right"):
                    continue
                key = frozenset((r["left"], r["right"]))
                won = r["left"] if r["preference"] == "left" else r["right"]
                counts.setdefault(key, Counter())[won] += 1
        engine = make_engine(url)
        with session_factory(engine)() as s:
            run = latest_run(s, get_campaign(s, "bench").id)
            assert run is not None
            flags = [f for f in run_flags(s, run.id, "pair") if f.rule == "ambiguous"]
        engine.dispose()
    clear = []
    for f in flags:
        c = counts.get(frozenset(f.subject.split("\t")), Counter())
        n = sum(c.values())
        top = max(c.values(), default=0)
        if n >= 20 and top / n > 0.7:
            clear.append((n, top))
    print(f"{args.data.name}: {len(flags)} pairs flagged ambiguous; {len(clear)} of them with 20+ "
          f"strict answers split beyond 70/30", end="")  # fmt: skip
    worst = max(clear, key=lambda nt: nt[1] / nt[0], default=None)
    print(f" (the clearest: {worst[1]} of {worst[0]})" if worst else "")


if __name__ == "__main__":
    main()
