"""Reliability models: worker quality and item truth estimated together (issue 15).

- labels: Dawid & Skene (1979) EM with full confusion matrices (``dawid_skene``);
- ordinal / interval ratings: per-worker bias and noise, Raykar et al. (2010, JMLR 11) without
  features, cf. CATD (Li et al. 2014, PVLDB 8(4)) (``rating_model``);
- multi-label sets: one binary Dawid-Skene per option (``multilabel_model``).
"""

from __future__ import annotations

from monitor.metrics.labels.label_model import LabelModel, dawid_skene
from monitor.metrics.labels.multilabel_model import MultilabelModel, multilabel_model
from monitor.metrics.ratings.model import RatingModel, rating_model

__all__ = [
    "LabelModel",
    "MultilabelModel",
    "RatingModel",
    "dawid_skene",
    "multilabel_model",
    "rating_model",
]
