"""The campaign's agreement as the page shows it: the agreement table (each figure the scale
supports, with its count and what it means), alpha over runs, and the line under the verdict
that says what the reliability model, or a preference campaign's design, makes of it."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from monitor.core import catalog
from monitor.report import charts, scale
from monitor.report.runsettings import run_param
from monitor.report.titles import meaning

PHI_MAP_NOTE = (
    " The MAP {map} lies outside the interval: it is the joint mode of the precision and every "
    "item's mean, which overstates agreement when items have few ratings each "
    "(docs/measures.md, Phi). Read the mean and its interval."
)


def agreement_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The agreement table: what the scale supports (``monitor.report.scale``), each figure
    with its count, and a sentence on which of Phi and alpha to believe where they differ."""
    a = doc["agreement"]
    hidden = scale.hidden_for_scale(doc)
    rows = []
    for key, ci_key in (
        ("krippendorff_alpha", "krippendorff_alpha_ci"),
        ("percent_agreement", None),
        ("fleiss_kappa", "fleiss_kappa_ci"),
        ("cohen_kappa", "cohen_kappa_ci"),
        ("scott_pi", "scott_pi_ci"),
        ("transitivity_kappa", None),
    ):
        if key not in a:
            continue
        if key in ("cohen_kappa", "scott_pi") and a[key] is None:
            continue  # only defined for two-worker campaigns
        if hidden and key in scale.EQUALITY:
            continue
        name, what = meaning(key)
        reason = (a.get("measures", {}).get(key) or {}).get("reason") if a[key] is None else None
        if key == "krippendorff_alpha" and a.get("level") in ("masi", "jaccard"):
            what += f" Over the sets, at the {a['level'].upper()} distance (setting set_distance)."
        if key == "krippendorff_alpha" and hidden:
            what += " " + hidden
        rows.append(
            {
                "name": name,
                "value": a[key],
                "ci": a.get(ci_key) if ci_key else None,
                "n": scale.n_text(doc, key),
                "meaning": what + (f" Undefined here: {reason}." if reason else ""),
            }
        )
    phi = a.get("phi")
    if phi:
        name, what = meaning("phi")
        lo, hi = phi["hpd"] or (None, None)
        m = phi["map"]
        if m is not None and lo is not None and not lo <= m <= hi:
            extra = PHI_MAP_NOTE.format(map=f"{m:.3f}")
        else:
            extra = f" MAP {m:.3f}." if m is not None else ""
        method = f" Method: {phi['method']}." if phi.get("method") else ""
        which = scale.phi_alpha_sentence(
            phi["mean"], phi["hpd"], a.get("krippendorff_alpha"), a.get("krippendorff_alpha_ci"),
            run_param(doc, "phi_alpha_gap"),
        )  # fmt: skip
        rows.append(
            {
                "name": name,
                "value": phi["mean"],
                "ci": phi["hpd"],
                "n": scale.n_text(doc, "phi"),
                "meaning": what + extra + method + (f" {which}" if which else ""),
            }
        )
    return rows


def alpha_trend(doc: Mapping[str, Any]) -> Markup | None:
    """Krippendorff's alpha and its interval over the runs that defined it."""
    hist = [h for h in doc["history"] if h.get("krippendorff_alpha") is not None]
    if not hist:
        return None
    return charts.trend(
        [
            (
                f"#{h['number']}",
                h["krippendorff_alpha"],
                *(h.get("krippendorff_alpha_ci") or (None, None)),
            )
            for h in hist
        ],
        title="Krippendorff's alpha over runs",
    )


def model_line(doc: Mapping[str, Any], n_ambiguous: int) -> str | None:
    """The reliability model's own verdict in a line: the items it cannot settle and the
    workers' median quality (what to read where alpha is undefined, as for multi-label sets)."""
    model = doc.get("model") or {}
    if not model.get("name"):
        return None
    metric = "model_noise_sd" if model.get("measure") == "noise_sd" else "model_accuracy"
    m = catalog.measure("worker", metric)
    values = [w[m.key] for w in doc["workers"] if w.get(m.key) is not None]
    n_items = doc["campaign"].get("n_items") or 0
    line = f"The reliability model finds {n_ambiguous:,} of {n_items:,} items ambiguous"
    if values:
        median = statistics.median(values)
        line += f"; the workers' median {m.title.lower()} is {median:.2f}"
    if model.get("converged") is False:
        line += " (it did not converge: its flags are withheld)"
    check = model.get("check") or {}
    versus = ""
    if check.get("model_mse") is not None and check.get("plain_mse") is not None:
        se = check.get("diff_se")
        versus = (
            f" (mean squared error {check['model_mse']:.4g} against {check['plain_mse']:.4g}"
            + (f", give or take {se:.2g}" if se is not None else "")
            + ")"
        )
    if model.get("fallback"):
        line += (
            f". It predicts held-out judgments no better than the plain mean{versus}, so the "
            "exports give the plain mean"
        )
    elif versus:
        line += (
            f". Its item means predict held-out judgments better than the plain mean{versus}, "
            "so the exports give them"
        )
    return line + "."


def design_line(doc: Mapping[str, Any]) -> str | None:
    """For a preference campaign: which signals its design supports (closed triangles for
    transitivity, pairs judged again for agreement), as the run worked it out."""
    design = (doc["agreement"].get("measures") or {}).get("preference_design") or {}
    message = design.get("message")
    if not message:
        return None
    return f"What this design can measure: {message}."


__all__ = ["PHI_MAP_NOTE", "agreement_rows", "alpha_trend", "design_line", "model_line"]
