"""The package's version (kept apart so that importing it loads nothing else)."""

__version__ = "0.1.0"
