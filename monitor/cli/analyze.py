"""``monitor analyze FILE --kind KIND``: one file, a throwaway database, the numbers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monitor.cli.context import Context
from monitor.cli.show import echo, json_text
from monitor.core.errors import NotFound


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from monitor.cli.campaign import add_scale_options
    from monitor.cli.ingest import FORMATS, key_values

    p = sub.add_parser(
        "analyze",
        parents=[common],
        help="one-shot: ingest one file into a throwaway database, recompute, print the numbers",
        description="Run the whole path (ingest, every measure, flags) on one file in a "
        "throwaway database and print a summary, or with --json the JSON document of the "
        "contract. Nothing is written to your database.",
    )
    p.add_argument("file", metavar="FILE", type=Path)
    add_scale_options(p)
    p.add_argument("--items", type=Path, metavar="FILE", help="items file: item, gold, text")
    p.add_argument("--format", choices=FORMATS, help="default: by extension or detected")
    p.add_argument(
        "--delimiter", metavar="CHAR", help="a CSV file's delimiter (default: its header's)"
    )
    key_values(p, "--map", "platform field mapping (repeatable), see monitor ingest --help")
    key_values(p, "--option", "platform reader option (repeatable)")
    p.add_argument(
        "--phi",
        choices=("off", "map", "full", "nuts"),
        help="Phi for ratings: off, map, full (exact posterior, default) or nuts",
    )
    p.add_argument(
        "--phi-mapping",
        choices=("bin_centres", "authors"),
        help="ratings into (0, 1): bin centres of the scale points (default) or the "
        "mapping of Checco et al.'s code",
    )
    p.add_argument(
        "--phi-prior",
        choices=("phi", "precision", "gamma"),
        help="prior: flat on Phi (default), flat on the precision, or gamma",
    )
    p.add_argument("--seed", type=int, help="seed of the bootstrap and of NUTS (default 0)")
    p.add_argument(
        "--bootstrap",
        type=int,
        metavar="N",
        help="bootstrap resamples behind the intervals (default 1000; 0: none)",
    )
    p.add_argument("--json", action="store_true", help="print the JSON document")
    p.add_argument(
        "--keep-db",
        type=Path,
        metavar="PATH",
        help="keep the SQLite database there instead of throwing it away",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from monitor.api.analysis import analyze_file
    from monitor.cli.campaign import spec_from_args
    from monitor.cli.ingest import pairs

    if not args.file.is_file():
        raise NotFound(f"{args.file}: no such file")
    settings = ctx.settings.replace(
        phi=args.phi,
        seed=args.seed,
        bootstrap_samples=args.bootstrap,
        phi_mapping=args.phi_mapping,
        phi_prior=args.phi_prior,
    )
    spec = spec_from_args(args, args.file.stem or "analysis")
    result, outcome = analyze_file(
        args.file,
        spec,
        settings,
        items=args.items,
        format=args.format,
        mapping=pairs(args.map, "--map") or None,
        options=pairs(args.option, "--option") or None,
        progress=sys.stderr.isatty() and not args.json,
        delimiter=args.delimiter,
        keep_db=args.keep_db,
    )
    if args.json:
        sys.stdout.write(json_text(result.document) + "\n")
        return 0
    _summary(result.document, result.ingest, outcome)
    return 0


def _fmt(x: Any) -> str:
    if x is None:
        return "undefined"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)


def _summary(doc: Mapping[str, Any], ingest: Any, outcome: Any) -> None:
    c, a = doc["campaign"], doc["agreement"]
    dup = f" ({ingest.n_duplicate} duplicates skipped)" if ingest.n_duplicate else ""
    echo(
        f"{c['name']}: {c['kind']} ({c['level']}), {c['n_judgments']} judgments by "
        f"{c['n_workers']} workers on {c['n_items']} items{dup}"
    )
    ci = a.get("krippendorff_alpha_ci")
    alpha = _fmt(a.get("krippendorff_alpha")) + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    echo(f"  Krippendorff's alpha  {alpha}")
    echo(f"  percent agreement     {_fmt(a.get('percent_agreement'))}")
    for key, label in (
        ("fleiss_kappa", "Fleiss' kappa"),
        ("cohen_kappa", "Cohen's kappa"),
        ("scott_pi", "Scott's pi"),
    ):
        if a.get(key) is not None:
            echo(f"  {label:21} {_fmt(a[key])}")
    phi = a.get("phi")
    if phi:
        hpd = phi.get("hpd")
        echo(
            f"  Phi                   {_fmt(phi.get('mean'))}"
            + (f" [{hpd[0]:.3f}, {hpd[1]:.3f}]" if hpd else "")
        )
    flagged = [w for w in doc["workers"] if w["flags"]]
    echo(f"  flagged workers       {len(flagged)} of {len(doc['workers'])}")
    for w in flagged[:10]:
        echo(f"    {w['worker']}: {', '.join(w['flags'])}")
    items = [i for i in doc["items"] if "ambiguous" in i["flags"]]
    pairs_ = [p for p in doc.get("pairs", []) if "ambiguous" in p.get("flags", [])]
    echo(f"  ambiguous items       {len(items) + len(pairs_)}")
    for w in doc.get("warnings", []):
        echo(f"  warning: {w.get('message', w)}")
    echo("  (--json for the whole document)")
