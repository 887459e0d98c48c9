"""What the measures of a run take: the campaign coded as arrays (:class:`Coded`) and the
options, in groups, with the warm start (:class:`Params`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.core.catalog import Kind
from monitor.core.sections import Section
from monitor.incremental.warm import WarmStart
from monitor.pipeline.collect import NameCache, Values
from monitor.store.arrays import CampaignArrays
from monitor.store.campaigns import CampaignInfo
from monitor.store.history import HistoryEntry
from monitor.store.live import Scores


@dataclass(frozen=True)
class LiveScores:
    """What the live path has kept of a campaign (:mod:`monitor.incremental.live`): its
    frozen ``scores`` (the workers as database ids) and every judgment given a row (``stored``,
    scored or never to be)."""

    scores: Scores
    stored: NDArray[np.int64]


@dataclass(frozen=True)
class Coded:
    """One campaign as the measures see it: its definition, its judgments as integer-coded
    arrays, and each worker's entries in the platform's other campaigns (``history``: the
    reliability models' starting point for workers with few judgments)."""

    info: CampaignInfo
    arrays: CampaignArrays
    history: Mapping[str, Sequence[HistoryEntry]] = field(default_factory=dict)
    live: LiveScores | None = None

    @property
    def kind(self) -> Kind:
        return Kind(self.info.kind)


@dataclass(frozen=True)
class BootstrapOptions(Section):
    """Intervals that resample items (0 samples: no intervals)."""

    bootstrap_samples: int = 1000
    seed: int = 0


@dataclass(frozen=True)
class AgreementOptions(Section):
    """The distance between two sets of a multi-label campaign's alpha (masi or jaccard), and
    the widest rating scale whose coefficients of equal answers the report shows."""

    set_distance: str = "masi"
    max_nominal_points: int = 11


@dataclass(frozen=True)
class CrowdTruthOptions(Section):
    """CrowdTruth's iteration, and the drift its local update may accumulate."""

    crowdtruth_max_iter: int = 100
    crowdtruth_tol: float = 0.001
    crowdtruth_drift: float = 0.01


@dataclass(frozen=True)
class ModelOptions(Section):
    """The reliability models' EM and where their flag floor lies."""

    model_max_iter: int = 500
    model_tol: float = 1e-6
    model_min_judgments: int = 20
    model_max_categories: int = 200
    export_gold_min_items: int = 30
    quality_margin: float = 0.2
    stop_alpha: float = 0.01
    stop_margin: float = 0.05
    stop_share: float = 0.75
    stop_side_margin: float = 0.1
    overlap_confidence: float = 0.99
    min_overlap: int = 3
    max_overlap: int = 10
    overlap_tolerance: float = 0.05


@dataclass(frozen=True)
class PhiOptions(Section):
    """Phi: its engine (off, map, full, nuts), mapping, prior and seed."""

    phi: str = "full"
    phi_mapping: str = "bin_centres"
    phi_prior: str = "phi"
    seed: int = 0


@dataclass(frozen=True)
class Params:
    """The options of a run's measures, the previous run to start from (None: the plain full
    path), and the scopes whose per-subject values are stored as columns."""

    bootstrap: BootstrapOptions = BootstrapOptions()
    crowdtruth: CrowdTruthOptions = CrowdTruthOptions()
    model: ModelOptions = ModelOptions()
    phi: PhiOptions = PhiOptions()
    warm: WarmStart | None = None
    columnar: frozenset[str] = frozenset({"item"})
    names: NameCache = field(default_factory=NameCache, compare=False, repr=False)
    agreement: AgreementOptions = AgreementOptions()

    @classmethod
    def of(
        cls,
        settings: Any,
        kind: str,
        *,
        warm: WarmStart | None = None,
        columnar: frozenset[str] | None = None,
    ) -> Params:
        """The options of ``settings`` for a campaign of ``kind``; ``columnar`` defaults to
        items, except in pairwise campaigns, whose pair and item values are fewer and stay
        single values."""
        if columnar is None:
            columnar = frozenset() if kind == Kind.PAIRWISE else frozenset({"item"})
        return cls(
            BootstrapOptions.of(settings),
            CrowdTruthOptions.of(settings),
            ModelOptions.of(settings),
            PhiOptions.of(settings),
            warm,
            columnar,
            agreement=AgreementOptions.of(settings),
        )

    def values(self, campaign: str) -> Values:
        """An empty set of values of ``campaign`` for one measure to fill and return."""
        return Values(campaign, self.columnar, names=self.names)
