"""Ratings on an ordinal or interval scale: Phi (Checco et al. 2017), the distance-aware
reliability model of worker bias and noise, its local update and its held-out check.

The NUTS engine of Phi (``phi_nuts``) is imported only when asked for: it needs PyMC."""

from monitor.metrics.ratings.model import rating_model
from monitor.metrics.ratings.model_check import holdout_check
from monitor.metrics.ratings.phi_measure import phi
from monitor.metrics.ratings.update import rating_model_update

__all__ = ["holdout_check", "phi", "rating_model", "rating_model_update"]
