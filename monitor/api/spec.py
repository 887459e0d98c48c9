"""The campaign a kind and its options describe, as ``monitor campaign create`` and ``monitor
analyze`` read them (CONTRACT.md section 1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, Unpack

from monitor.core.errors import UsageError

if TYPE_CHECKING:
    from monitor.store.campaigns import CampaignSpec

__all__ = ["KINDS", "CampaignOptions", "campaign_spec"]

KINDS = ("rating", "label", "multilabel", "pairwise")


def _names(value: str | Sequence[str] | None, option: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    parts = tuple(p.strip() for p in value.split(",")) if isinstance(value, str) else tuple(value)
    if not all(isinstance(p, str) and p for p in parts):
        raise UsageError(f"{option}: an empty name in '{value}'", hint=f"write {option} a,b,c")
    return parts


class CampaignOptions(TypedDict, total=False):
    """The options of a campaign's kind, as :func:`campaign_spec` and :func:`~monitor.analyze`
    take them: ``scale_min`` and ``scale_max`` (``--min``, ``--max``), ``level``,
    ``categories`` and ``options`` (a list or ``"a,b,c"``), ``open`` and ``strict`` (each
    False unless given); every other one None unless given."""

    scale_min: float | None
    scale_max: float | None
    level: str | None
    categories: str | Sequence[str] | None
    options: str | Sequence[str] | None
    open: bool
    strict: bool


def campaign_spec(
    name: str, kind: str, *, platform: str | None = None, **scale: Unpack[CampaignOptions]
) -> CampaignSpec:
    """The campaign a kind and its scale options describe (CONTRACT.md section 1): UsageError
    for an option of another kind (the messages name the command's options)."""
    from monitor.store.campaigns import CampaignSpec

    scale_min, scale_max = scale.get("scale_min"), scale.get("scale_max")
    categories, options = scale.get("categories"), scale.get("options")
    is_open, strict = scale.get("open", False), scale.get("strict", False)
    if kind != "rating" and (scale_min is not None or scale_max is not None):
        raise UsageError("--min and --max are for rating campaigns")
    if categories is not None and kind != "label":
        hint = "a multilabel campaign takes --options" if kind == "multilabel" else None
        raise UsageError("--categories is for label campaigns", hint=hint)
    if (options is not None or is_open) and kind != "multilabel":
        raise UsageError("--options and --open are for multilabel campaigns")
    if strict and kind != "pairwise":
        raise UsageError("--strict is for pairwise campaigns")
    return CampaignSpec(
        name=name,
        kind=kind,  # type: ignore[arg-type]  # checked by CampaignSpec.validated
        level=scale.get("level"),
        scale_min=scale_min,
        scale_max=scale_max,
        categories=_names(categories, "--categories") or _names(options, "--options"),
        open=is_open,
        strict=strict,
        platform=platform,
    )
