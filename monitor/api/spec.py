"""The campaign a kind and its options describe, as ``monitor campaign create`` and ``monitor
analyze`` read them (CONTRACT.md section 1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from monitor.core.errors import UsageError

if TYPE_CHECKING:
    from monitor.store.campaigns import CampaignSpec

__all__ = ["KINDS", "campaign_spec"]

KINDS = ("rating", "label", "multilabel", "pairwise")


def _names(value: str | Sequence[str] | None, option: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    parts = tuple(p.strip() for p in value.split(",")) if isinstance(value, str) else tuple(value)
    if not all(isinstance(p, str) and p for p in parts):
        raise UsageError(f"{option}: an empty name in '{value}'", hint=f"write {option} a,b,c")
    return parts


# The scale options repeat analyze()'s on purpose: both are public, and each signature lists
# them so that help() and the docs show every option with its default.
def campaign_spec(
    name: str,
    kind: str,
    *,
    scale_min: float | None = None,
    scale_max: float | None = None,
    level: str | None = None,
    categories: str | Sequence[str] | None = None,
    options: str | Sequence[str] | None = None,
    open: bool = False,  # noqa: A002 - the option's name
    strict: bool = False,
    platform: str | None = None,
) -> CampaignSpec:
    """The campaign a kind and its scale options describe (CONTRACT.md section 1): UsageError
    for an option of another kind (the messages name the command's options)."""
    from monitor.store.campaigns import CampaignSpec

    if kind != "rating" and (scale_min is not None or scale_max is not None):
        raise UsageError("--min and --max are for rating campaigns")
    if categories is not None and kind != "label":
        hint = "a multilabel campaign takes --options" if kind == "multilabel" else None
        raise UsageError("--categories is for label campaigns", hint=hint)
    if (options is not None or open) and kind != "multilabel":
        raise UsageError("--options and --open are for multilabel campaigns")
    if strict and kind != "pairwise":
        raise UsageError("--strict is for pairwise campaigns")
    return CampaignSpec(
        name=name,
        kind=kind,  # type: ignore[arg-type]  # checked by CampaignSpec.validated
        level=level,
        scale_min=scale_min,
        scale_max=scale_max,
        categories=_names(categories, "--categories") or _names(options, "--options"),
        open=open,
        strict=strict,
        platform=platform,
    )
