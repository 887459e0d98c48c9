"""What the agreement table shows for the campaign's scale (docs/measures.md, "What the scale
supports"): the coefficients of exactly equal answers are left out on wide rating scales, every
figure carries its count, and where Phi and alpha disagree a sentence says which to believe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitor.core import catalog
from monitor.core.catalog import Kind

EQUALITY = ("percent_agreement", "fleiss_kappa", "cohen_kappa", "scott_pi")
"""The coefficients that count only exactly equal answers (nominal)."""


def hidden_for_scale(doc: Mapping[str, Any]) -> str | None:
    """Why the coefficients of :data:`EQUALITY` are not shown, or None when they are: a
    rating campaign whose run coded more scale points than ``max_nominal_points``, or a
    multi-label campaign (the coefficients are not defined for sets)."""
    kind = doc["campaign"].get("kind")
    if kind == Kind.MULTILABEL:
        return (
            "Percent agreement and the kappas are not shown: they count only identical answers, "
            "so two sets that share all options but one differ as much as two that share none; "
            "alpha over the sets weighs their overlap."
        )
    if kind != Kind.RATING:
        return None
    params = (doc.get("run") or {}).get("parameters") or {}
    points, most = params.get("scale_points"), params.get("max_nominal_points")
    if not isinstance(points, int) or not isinstance(most, int) or points <= most:
        return None
    return (
        f"Percent agreement, Fleiss' kappa, Cohen's kappa and Scott's pi are not shown: on a "
        f"scale of {points:,} points they count only exactly equal ratings, so 57 against 58 "
        f"is as much a disagreement as 1 against 100. Alpha at the "
        f"{doc['agreement'].get('level') or 'interval'} level weighs how far apart the "
        f"ratings are (setting max_nominal_points = {most})."
    )


def n_text(doc: Mapping[str, Any], metric: str) -> str:
    """The count behind a campaign figure and what it counts ("1,234 pairable values"), or
    '' where the run stored none."""
    measures = doc["agreement"].get("measures") or {}
    n = (measures.get(metric) or {}).get("n")
    if n is None:
        return ""
    try:
        what = catalog.measure("campaign", metric).n
    except KeyError:
        what = ""
    if doc["campaign"].get("kind") == Kind.PAIRWISE and what == "items":
        what = "pairs"  # a preference campaign's units are its pairs
    text = f"{int(n):,} {what}".strip()
    if metric == "transitivity_kappa":
        design = measures.get("preference_design") or {}
        annotators = design.get("annotators_with_triplets")
        if isinstance(annotators, int):
            text += f" from {annotators:,} annotator{'s' if annotators != 1 else ''}"
    return text


def phi_alpha_sentence(
    phi: float | None, phi_hpd: Any, alpha: float | None, alpha_ci: Any, gap: float
) -> str | None:
    """Which of Phi and alpha to believe, and why, when they differ by at least ``gap`` (the
    ``phi_alpha_gap`` setting); None when they agree. Alpha compares the spread of ratings
    within items with their spread over all items; Phi judges the spread within items against
    the whole scale (Checco et al. 2017)."""
    if phi is None or alpha is None or abs(phi - alpha) < gap:
        return None
    head = f"Phi ({phi:.2f}) and alpha ({alpha:.2f}) disagree. "
    apart = alpha_ci is not None and alpha_ci[0] is not None and alpha_ci[0] > 0
    if phi < 0 <= alpha:
        if apart:
            tail = "its interval lies above 0"
        else:
            tail = "though its interval reaches 0, so even that is uncertain"
        strength = "clearly" if alpha >= 0.667 else "but weakly (alpha below 0.667)"
        return head + (
            "Phi below 0 says that, under its Beta model, the ratings of one item spread more "
            "widely than uniformly random ratings would: they pile up toward the ends of the "
            "scale. Alpha compares that spread with the spread over all items, which is larger "
            "because the items' means differ. Believe alpha on whether the ratings tell the "
            f"items apart (their order and the exported means): they do, {strength}; {tail}. "
            "Believe Phi for any single rating: one rater's answer says little about the item."
        )
    if phi > alpha:
        return head + (
            "The ratings of an item lie close together on the scale, but the items differ "
            "little from each other, so alpha, which compares the spread within items with the "
            "spread between them, is low. Believe Phi for how close raters come to each other "
            "on the scale; believe alpha for whether the ratings tell the items apart: here "
            "they do not, reliably."
        )
    return head + (
        "The items differ widely, so the spread within each is small next to the spread "
        "between them (alpha), while Phi, which judges the spread within an item against the "
        "whole scale, finds it wide. Believe alpha for telling the items apart and ranking "
        "them; believe Phi for how precise one item's rating is."
    )


__all__ = ["EQUALITY", "hidden_for_scale", "n_text", "phi_alpha_sentence"]
