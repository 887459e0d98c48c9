"""Connectors: monitor inside the annotation tools' loop (pulls from them, pushes to them,
notifications after a run)."""
