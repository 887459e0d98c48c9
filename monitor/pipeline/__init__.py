"""Where metrics meet the store: find what changed, load arrays, run the measures, save a run
with its values and flags in one transaction (DESIGN.md section 2)."""

from monitor.pipeline.run import RunOutcome, recompute

__all__ = ["RunOutcome", "recompute"]
