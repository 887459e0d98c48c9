"""The settings a run used, as the report reads them from the JSON document's ``run``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitor.core.settings import Settings, differences


def run_param(doc: Mapping[str, Any], key: str) -> float:
    """The setting ``key`` as the document's run used it (its parameters, or the settings it
    recorded), else its default."""
    params = (doc.get("run") or {}).get("parameters") or {}
    value = params.get(
        key,
        params.get("settings", {}).get(key) if isinstance(params.get("settings"), dict) else None,
    )
    try:
        return float(value) if value is not None else float(getattr(Settings(), key))
    except (TypeError, ValueError):
        return float(getattr(Settings(), key))


def settings_changed(doc: Mapping[str, Any]) -> list[str]:
    """``min_judgments 20 (default 10, this campaign's own)``: each setting the run used that
    differs from its default, and whether the campaign has it of its own."""
    params = (doc.get("run") or {}).get("parameters") or {}
    used, own = params.get("settings"), set(params.get("own_settings") or ())
    if not isinstance(used, dict):
        return []
    return [
        f"{key} {value!r} (default {default!r}" + (", this campaign's own)" if key in own else ")")
        for key, value, default in differences(used)
    ]


__all__ = ["run_param", "settings_changed"]
