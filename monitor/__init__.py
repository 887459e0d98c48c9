"""monitor: a quality monitor for annotation campaigns."""

__version__ = "0.1.0"
