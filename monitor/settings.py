"""Settings: defaults < ``monitor.toml`` < ``MONITOR_*`` environment < command-line flags.

Every key is a field of :class:`Settings` with its documented default. A file or variable that
names an unknown key, or gives a value of the wrong type, raises :class:`ConfigError` naming
the key and the closest known one.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, get_type_hints

from monitor.errors import ConfigError
from monitor.store.engine import DEFAULT_URL

CONFIG_FILE = "monitor.toml"
ENV_PREFIX = "MONITOR_"
CHOICES: dict[str, tuple[str, ...]] = {
    "phi": ("off", "map", "full", "nuts"),
    "phi_mapping": ("bin_centres", "authors"),
    "phi_prior": ("phi", "precision", "gamma"),
    "policy": ("suggest", "block", "down_weight"),
}


@dataclass(frozen=True)
class Settings:
    """Everything that can be configured, with its default."""

    database_url: str = DEFAULT_URL
    """SQLAlchemy URL; PostgreSQL as ``postgresql+psycopg://user@host/db``."""
    report_dir: str = "reports"
    """Where ``monitor schedule`` and ``monitor demo`` write reports."""
    recompute_every_minutes: int = 5
    """Interval of the scheduler's incremental recompute."""
    nightly_at: str = "02:00"
    """Local time (HH:MM) of the scheduler's nightly full recompute and reports."""
    seed: int = 0
    """Seed of every random draw (bootstrap, NUTS)."""
    bootstrap_samples: int = 1000
    """Resamples of items behind each bootstrap interval (0 turns intervals off)."""
    cache_dir: str = ".monitor-cache"
    """Where a recompute keeps each campaign's coded judgments and its last run's item columns
    for the next run ('' = none)."""
    flag_tolerance: float = 0.001
    """An incremental run stores an item or pair flag again only when its value, threshold or
    a number of its evidence moved by more than this (or it is new or gone); -1 = store all."""
    value_tolerance: float = 0.001
    """An incremental run stores a per-item value again only when it (its interval, count or
    detail) moved by more than this, or the item is new; -1 = store every value."""
    keep_item_runs: int = 20
    """Runs per campaign that keep their per-item values and flags; older runs keep the rest."""
    phi: str = "full"
    """Phi for rating campaigns: off, map, full (exact posterior) or nuts (PyMC)."""
    phi_mapping: str = "bin_centres"
    """Ratings into (0, 1): bin centres of the scale points, or the authors' mapping."""
    phi_prior: str = "phi"
    """Prior of Phi: flat on Phi (phi), flat on the precision (precision, the authors' code)
    or gamma."""
    crowdtruth_max_iter: int = 100
    """Most CrowdTruth iterations per run."""
    crowdtruth_tol: float = 0.001
    """CrowdTruth stops when no UQS, WQS or AQS changes by more than this (the package's 0.001)."""
    crowdtruth_drift: float = 0.01
    """An incremental run updates CrowdTruth on the items with new judgments only, until the
    workers' WQS moved by this much in all (the sum of each run's largest move) since a run
    over every item; 0 = every run over every item."""
    min_judgments: int = 10
    """A worker is judged (flagged) only with at least this many judgments."""
    low_wqs_ratio: float = 0.7
    """Pairwise campaigns only (no reliability model there): flag low_quality when WQS < ratio
    x the campaign's median WQS."""
    low_agreement_ratio: float = 0.7
    """Flag low_agreement when leave-one-out agreement < ratio x the campaign median."""
    min_triplets: int = 5
    """An annotator's transitivity is judged only with at least this many full triplets."""
    low_transitivity_kappa: float = 0.5
    """Flag intransitive when the intraobserver kappa is below this."""
    position_bias_p: float = 0.001
    """Flag position_bias when the binomial test's p-value is below this."""
    position_bias_share: float = 0.75
    """... and the share of 'left' among strict answers is beyond this (or 1 - it)."""
    ambiguous_uqs: float = 0.4
    """Pairwise campaigns only: flag a pair ambiguous when its UQS is below this."""
    model_max_iter: int = 100
    """Most EM iterations of the reliability model (Dawid-Skene, rating model) per run."""
    model_tol: float = 1e-6
    """The reliability model stops when no parameter changes by more than this."""
    model_min_judgments: int = 20
    """Below this many judgments a worker gets Dawid-Skene's one-coin model (one accuracy)."""
    quality_margin: float = 0.2
    """Worker floor: chance + margin x (1 - chance) accuracy (labels), or (1 - margin) x the
    noise sd of a random answerer (ratings); low_quality when the interval lies beyond it."""
    skewed_prior: float = 0.7
    """Labels: when the commonest class's prior is above this, a worker's floor is built on
    their own chance (the accuracy of their answers shuffled across items), not the campaign's."""
    max_bias: float = 0.15
    """Ratings: flag biased when the interval on a rater's bias lies beyond +- this share of
    the scale's width."""
    gold_floor: float = 0.0
    """Flag gold_accuracy when the gold interval's upper end is below this (0: automatic,
    the gold chance level + quality_margin x (1 - chance))."""
    min_gold_judgments: int = 5
    """A worker's gold accuracy is judged (flagged) only with at least this many gold answers."""
    ambiguous_posterior: float = 0.8
    """Labels: ambiguous when the posterior max < 1/K + this x (1 - 1/K) (K categories)."""
    ambiguous_p: float = 0.01
    """Ratings: ambiguous when a chi-square test says the item's spread exceeds what its
    workers' noise explains at this level."""
    min_item_judgments: int = 3
    """An item is judged (flagged) only with at least this many judgments."""
    speeder_ratio: float = 0.25
    """Flag speeder when a worker's mean seconds per judgment < ratio x the campaign median."""
    phi_alpha_gap: float = 0.4
    """Warn when Phi and alpha differ by at least this."""
    paradox_agreement: float = 0.8
    """Kappa paradox warning: percent agreement at least this ..."""
    paradox_alpha: float = 0.2
    """... while alpha is below this."""
    policy: str = "suggest"
    """What a worker flag does at the end of a run: suggest, block or down_weight."""
    down_weight: float = 0.5
    """The weight given by the down_weight policy."""

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


def _keys() -> dict[str, type]:
    hints = get_type_hints(Settings)
    return {f.name: hints[f.name] for f in fields(Settings)}


def _closest(key: str) -> str | None:
    match = difflib.get_close_matches(key, list(_keys()), n=1)
    return f"did you mean '{match[0]}'?" if match else f"known keys: {', '.join(_keys())}"


def _coerce(key: str, raw: Any, where: str) -> Any:
    kind = _keys()[key]
    try:
        if kind is bool:
            if isinstance(raw, str):
                if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise ValueError(raw)
                value: Any = raw.lower() in ("1", "true", "yes")
            else:
                value = bool(raw)
        elif kind is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError(raw)
            value = int(raw)
        elif kind is float:
            if isinstance(raw, bool):
                raise ValueError(raw)
            value = float(raw)
        else:
            if not isinstance(raw, str):
                raise ValueError(raw)
            value = raw
    except (TypeError, ValueError):
        raise ConfigError(
            f"{where}: setting '{key}' expects {kind.__name__}, got {raw!r}",
            hint=f"for example {key} = {getattr(Settings(), key)!r}",
        ) from None
    if key in CHOICES and value not in CHOICES[key]:
        raise ConfigError(
            f"{where}: setting '{key}' must be one of {', '.join(CHOICES[key])}, got {value!r}"
        )
    return value


def load_settings(
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge the layers. ``config`` defaults to ``monitor.toml`` in the working directory if it
    exists; ``env`` to ``os.environ``; ``overrides`` are command-line values (None = not given).
    """
    values: dict[str, Any] = {}
    path = config if config is not None else Path(CONFIG_FILE)
    if config is not None and not path.is_file():
        raise ConfigError(f"{path}: no such configuration file")
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        data = data.get("monitor", data)
        for key, raw in data.items():
            if key not in _keys():
                raise ConfigError(f"{path}: unknown setting '{key}'", hint=_closest(key))
            values[key] = _coerce(key, raw, str(path))
    env = os.environ if env is None else env
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        key = name[len(ENV_PREFIX) :].lower()
        if key in _keys():
            values[key] = _coerce(key, raw, f"environment variable {name}")
    for key, raw in (overrides or {}).items():
        if raw is None:
            continue
        if key not in _keys():
            raise ConfigError(f"unknown setting '{key}'", hint=_closest(key))
        values[key] = _coerce(key, raw, "command line")
    return Settings(**values)


def describe() -> list[tuple[str, Any, str]]:
    """(key, default, documentation) for every setting, for the README and ``--help``."""
    import ast
    import inspect

    source = inspect.getsource(Settings)
    docs: dict[str, str] = {}
    tree = ast.parse(source).body[0]
    body = tree.body if isinstance(tree, ast.ClassDef) else []
    for node, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
        ):
            docs[node.target.id] = str(nxt.value.value)
    defaults = Settings()
    return [(k, getattr(defaults, k), docs.get(k, "")) for k in _keys()]
