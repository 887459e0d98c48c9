"""Sections of the settings: the part of :class:`monitor.settings.Settings` one layer reads
(the rules' thresholds, the measures' options), as a frozen dataclass of its own whose fields
are settings of the same name (``tests/test_settings.py`` checks the names and defaults)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Self


class Section:
    """A frozen dataclass whose fields are settings: :meth:`of` takes them from the settings."""

    @classmethod
    def of(cls, settings: Any) -> Self:
        """This section of ``settings`` (any object with these attributes)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})  # type: ignore[arg-type]
