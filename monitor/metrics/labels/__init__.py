"""Nominal labels and label sets: Dawid-Skene confusion matrices, the one-coin model for
campaigns of many categories, one binary Dawid-Skene per option of a multi-label set, and each
worker's accuracy on gold items."""

from monitor.metrics.labels.gold import gold_accuracy, wilson_interval
from monitor.metrics.labels.label_model import dawid_skene
from monitor.metrics.labels.multilabel_model import multilabel_model
from monitor.metrics.labels.one_coin import one_coin_dawid_skene

__all__ = [
    "dawid_skene",
    "gold_accuracy",
    "multilabel_model",
    "one_coin_dawid_skene",
    "wilson_interval",
]
