"""Settings: defaults < ``monitor.toml`` < ``MONITOR_*`` environment < command-line flags.

Every key is a field of :class:`Settings` declared once with :func:`setting`: its default, the
values it accepts (a :class:`Range`, a list of choices or a described text) and its
documentation; ``docs/settings.md`` is generated from these declarations
(``python -m monitor.core.settings docs/settings.md``). A file or variable that names an unknown
key, gives a value of the wrong type or one outside the key's range raises
:class:`ConfigError` naming the layer, the key, the value and the range, in one line.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, get_type_hints

from monitor.core.errors import ConfigError
from monitor.core.sections import Accepts, Choices, Range, Text, at_least, setting
from monitor.core.thresholds import DecisionOptions, PolicyOptions, Thresholds
from monitor.store.engine import (
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_STATEMENT_TIMEOUT,
    DEFAULT_URL,
    MAX_TIMEOUT,
)

CONFIG_FILE = "monitor.toml"
ENV_PREFIX = "MONITOR_"


def _check_url(url: str) -> None:
    from monitor.store.url import check_url

    check_url(url)


def user_cache_dir() -> str:
    """``$XDG_CACHE_HOME/monitor``, else ``~/.cache/monitor`` (read when settings are made)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "monitor")


@dataclass(frozen=True)
class General:
    """The settings of the process, the store and the measures. The rules' thresholds and the
    decisions' and policy's options are declared in the sections that read them
    (:mod:`monitor.core.thresholds`): :class:`Settings` takes them from there."""

    database_url: str = setting(
        DEFAULT_URL,
        Text("a sqlite:/// or postgresql+psycopg:// URL", check=_check_url),
        "SQLAlchemy URL; PostgreSQL as ``postgresql+psycopg://user@host/db``.",
    )
    lock_timeout: float = setting(
        DEFAULT_LOCK_TIMEOUT,
        Range(0, MAX_TIMEOUT),
        "Seconds a statement waits for a lock another session holds (a table, a row, an "
        "ingest's campaign lock) before it fails naming what it waited on; SQLite: how long to "
        "wait for another writer. 0 = no limit. A lock_timeout in the PostgreSQL URL's "
        "options wins.",
    )
    statement_timeout: float = setting(
        DEFAULT_STATEMENT_TIMEOUT,
        Range(0, MAX_TIMEOUT),
        "Seconds one PostgreSQL statement may take before the server cancels it and the run or "
        "ingest fails, naming the step. 0 = no limit. A statement_timeout in the URL's options "
        "wins.",
    )
    report_dir: str = setting(
        "reports",
        Text("a folder"),
        "Where ``monitor schedule`` and ``monitor demo`` write reports.",
    )
    recompute_every_minutes: int = setting(
        5,
        at_least(1),
        "Interval of the scheduler's incremental recompute.",
    )
    # One declaration a setting (here as in core/thresholds.py), each its own key, default,
    # range and text: what they share is sections.setting() and the checks of Settings.
    nightly_at: str = setting(
        "02:00",
        Text("a time HH:MM, 00:00 to 23:59", r"([01]?[0-9]|2[0-3]):[0-5][0-9]"),
        "Local time (HH:MM) of the scheduler's nightly full recompute and reports.",
    )
    seed: int = setting(
        0,
        Range(0, 2**32 - 1),
        "Seed of every random draw (bootstrap, NUTS).",
    )
    bootstrap_samples: int = setting(
        1000,
        Range(0, 100_000),
        "Resamples of items behind each bootstrap interval (0 turns intervals off).",
    )
    cache_dir: str = setting(
        None,
        Text("a folder, or '' for none"),
        "Where a recompute keeps each campaign's coded judgments and its last run's item columns "
        "for the next run ('' = none; see operations.md).",
        factory=user_cache_dir,
        shown="$XDG_CACHE_HOME/monitor, else ~/.cache/monitor",
    )
    flag_tolerance: float = setting(
        0.001,
        Range(0, also=(-1,)),
        "An incremental run stores an item or pair flag again only when its value, threshold or a "
        "number of its evidence moved by more than this (or it is new or gone); -1 = store all.",
    )
    value_tolerance: float = setting(
        0.001,
        Range(0, also=(-1,)),
        "An incremental run stores a per-item value again only when it (its interval, count or "
        "detail) moved by more than this, or the item is new; -1 = store every value.",
    )
    keep_item_runs: int = setting(
        20,
        at_least(1),
        "Runs per campaign that keep their per-item values and flags; older runs keep the rest.",
    )
    cluster_no_worker_seconds: float = setting(
        60.0,
        Range(0, low_open=True),
        "With --cluster: seconds the cluster may have no worker while jobs wait before the "
        "dispatcher gives up (one line, exit 1; a nanny restarts a killed worker well within it).",
    )
    cluster_log: str = setting(
        "monitor-cluster.log",
        Text("a file, or '' for none"),
        "With --cluster: the file Dask's own log messages and tracebacks go to (appended), "
        "kept out of the terminal ('' = dropped).",
    )
    set_distance: str = setting(
        "masi",
        Choices(("masi", "jaccard")),
        "Distance between two answers of a multi-label campaign in its Krippendorff's alpha: "
        "masi (Passonneau 2006) or jaccard.",
    )
    max_nominal_points: int = setting(
        11,
        at_least(2),
        "Rating campaigns on a scale of more points than this (or continuous) do not show "
        "percent agreement, Fleiss' kappa, unweighted Cohen's kappa or Scott's pi: these count "
        "only exactly equal ratings.",
    )
    phi: str = setting(
        "full",
        Choices(("off", "map", "full", "nuts")),
        "Phi for rating campaigns: off, map, full (exact posterior) or nuts (PyMC).",
    )
    phi_mapping: str = setting(
        "bin_centres",
        Choices(("bin_centres", "authors")),
        "Ratings into (0, 1): bin centres of the scale points, or the authors' mapping.",
    )
    phi_prior: str = setting(
        "phi",
        Choices(("phi", "precision", "gamma")),
        "Prior of Phi: flat on Phi (phi), flat on the precision (precision, the authors' code) or "
        "gamma.",
    )
    crowdtruth_max_iter: int = setting(
        100,
        at_least(1),
        "Most CrowdTruth iterations per run.",
    )
    crowdtruth_tol: float = setting(
        0.001,
        Range(0, low_open=True),
        "CrowdTruth stops when no UQS, WQS or AQS changes by more than this (the package's 0.001).",
    )
    crowdtruth_drift: float = setting(
        0.01,
        at_least(0),
        "An incremental run updates CrowdTruth on the items with new judgments only, until the "
        "workers' WQS moved by this much in all (the sum of each run's largest move) since a run "
        "over every item; 0 = every run over every item.",
    )
    model_tol: float = setting(
        1e-06,
        Range(0, low_open=True),
        "The reliability model stops when no parameter changes by more than this.",
    )
    model_min_judgments: int = setting(
        20,
        at_least(0),
        "Below this many judgments a worker gets Dawid-Skene's one-coin model (one accuracy).",
    )
    model_max_categories: int = setting(
        200,
        at_least(2),
        "A label campaign with more categories gets the one-coin Dawid-Skene model (one "
        "accuracy per worker, memory linear in the judgments) instead of full confusion "
        "matrices (K x K per worker); the run's model says so.",
    )
    export_gold_min_items: int = setting(
        30,
        at_least(1),
        "With gold on at least this many items, the verdict's export figure is measured on the "
        "gold (each gold item answered with its own gold withheld) instead of the crowd-only "
        "expectation, which stays beside it.",
    )
    stop_alpha: float = setting(
        0.01,
        Range(0.0001, 0.5),
        "A worker at or above the stop line is decided stop with at most this probability over "
        "the whole campaign (an anytime-valid test by betting, however often it is run).",
    )
    stop_margin: float = setting(
        0.05,
        Range(0, 1),
        "The stop line lies at least this far below the crowd's typical worker's accuracy "
        "(ratings: its root mean square error at least 1 + this times the typical rater's).",
    )
    stop_share: float = setting(
        0.75,
        Range(0, 1),
        "Stop a worker whose answers carry less than this share of the information of the "
        "typical worker's (bits an answer carries about the class; ratings: the inverse of the "
        "mean squared error, bias^2 + noise^2; capped by stop_margin).",
    )
    stop_side_margin: float = setting(
        0.1,
        Range(0, 1),
        "Preferences: also stop an annotator who picks one side of the screen more than this "
        "share more often than the other annotators did on the same pairs (an anytime test, "
        "beside the one on accuracy; each at half of stop_alpha).",
    )
    overlap_confidence: float = setting(
        0.99,
        Range(0.5, 0.9999),
        "An item (a pair) wants no more judgments (need 0) once the posterior of its exported "
        "answer (order; ratings: that the truth lies within overlap_tolerance of it) reaches "
        "this, without the stopped workers' answers (docs/live.md).",
    )
    min_overlap: int = setting(
        3,
        at_least(1),
        "Every item (judged pair) wants at least this many judgments (gold ones: only these).",
    )
    max_overlap: int = setting(
        10, at_least(1), "No item (judged pair) wants more than this many judgments in all."
    )
    overlap_tolerance: float = setting(
        0.05,
        Range(0, 1, low_open=True),
        "Ratings: how close to its exported answer (the model's mean) an item's truth must "
        "surely lie for the item to want no more ratings, as a share of the scale's width "
        "(0.05: within 5 points on 0..100).",
    )


@dataclass(frozen=True)
class Settings(PolicyOptions, DecisionOptions, Thresholds, General):
    """Everything that can be configured, with its default and range; every value is checked
    when the settings are made (:class:`ConfigError`). Its fields are :class:`General`'s, then
    those of the rules' sections (``Thresholds``, ``DecisionOptions``, ``PolicyOptions``), each
    declared once, where it is read."""

    prolific_api_url: str = setting(
        "https://api.prolific.com",
        Text("an http:// or https:// URL", r"https?://\S+"),
        "Base URL of Prolific's API (``monitor push prolific``; the token is read from "
        "MONITOR_PROLIFIC_TOKEN).",
    )
    notify_webhook_url: str = setting(
        "",
        Text("an http:// or https:// URL, or '' for none", r"(https?://\S+)?"),
        "After a run whose worker decisions or campaign verdicts changed, POST one JSON "
        "message ``{\"text\": ...}`` (what chat tools accept) to this URL ('' = none).",
    )
    notify_email_to: str = setting(
        "",
        Text(
            "e-mail addresses separated by commas, or '' for none",
            r"[^\s,@]+@[^\s,@]+(,\s*[^\s,@]+@[^\s,@]+)*|",
        ),
        "After a run whose worker decisions or campaign verdicts changed, e-mail one message "
        "to these addresses over SMTP ('' = none; login from MONITOR_SMTP_USER and "
        "MONITOR_SMTP_PASSWORD).",
    )
    notify_email_from: str = setting(
        "monitor@localhost",
        Text("an e-mail address", r"[^\s,@]+@[^\s,@]+"),
        "The sender of the notification e-mails.",
    )
    smtp_host: str = setting(
        "localhost",
        Text("a host name"),
        "The SMTP server of the notification e-mails.",
    )
    smtp_port: int = setting(
        25,
        Range(1, 65535),
        "Its port (587 with starttls, 465 with ssl, usually).",
    )
    smtp_security: str = setting(
        "none",
        Choices(("none", "starttls", "ssl")),
        "How the SMTP connection is secured: none, starttls or ssl (TLS from the start).",
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            _check(f.name, getattr(self, f.name), "")

    def for_campaign(self, own: Mapping[str, Any]) -> Settings:
        """These settings with a campaign's own (``monitor campaign set``) over them; keys that
        are no campaign setting (any more) are left out."""
        given = {k: v for k, v in own.items() if k in campaign_keys()}
        for key, value in given.items():
            _check(key, value, "campaign setting")
        return dataclasses.replace(self, **given)

    def replace(self, **changes: Any) -> Settings:
        """A copy with the changes that are not None (command-line values), each checked."""
        given = {k: v for k, v in changes.items() if v is not None}
        for key, value in given.items():
            if key in _keys():
                _check(key, value, "command line")
        return dataclasses.replace(self, **given)


def _keys() -> dict[str, type]:
    hints = get_type_hints(Settings)
    return {f.name: hints[f.name] for f in fields(Settings)}


PROCESS_KEYS = frozenset(
    {
        "database_url",
        "report_dir",
        "recompute_every_minutes",
        "nightly_at",
        "cache_dir",
        "prolific_api_url",
        "notify_webhook_url",
        "notify_email_to",
        "notify_email_from",
        "smtp_host",
        "smtp_port",
        "smtp_security",
    }
)
"""Settings of a process, not of a campaign: ``monitor campaign set`` refuses them."""


def campaign_keys() -> list[str]:
    """The settings a campaign can have of its own (``monitor campaign set``)."""
    return [k for k in _keys() if k not in PROCESS_KEYS]


def campaign_value(key: str, raw: str | None) -> Any:  # noqa: ANN401
    """The value of a campaign's own setting ``key=raw``, checked as the file's are
    (:class:`ConfigError` for an unknown key, a process setting or a value out of range);
    ``raw`` None: only the key is checked (None comes back)."""
    _known(key)
    if key in PROCESS_KEYS:
        raise ConfigError(
            f"setting '{key}' holds for the whole process, not for one campaign",
            hint=f"set it in monitor.toml or {ENV_PREFIX}{key.upper()}",
        )
    return None if raw is None else _coerce(key, raw, "campaign setting")


def run_settings(settings: Settings) -> dict[str, Any]:
    """The settings a campaign's run uses (every campaign setting), as a run records them."""
    return {k: getattr(settings, k) for k in campaign_keys()}


def differences(used: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, value, default) of each recorded setting that differs from its default."""
    defaults = Settings()
    return [
        (k, v, getattr(defaults, k))
        for k, v in used.items()
        if k in campaign_keys() and v != getattr(defaults, k)
    ]


def _accepts() -> dict[str, Accepts]:
    return {f.name: f.metadata["accepts"] for f in fields(Settings)}


def _known(key: str, where: str = "") -> None:
    """Raise :class:`ConfigError` when ``key`` is no setting: one line naming where it came
    from (a file; nothing for a campaign's or the command line's), the hint the closest key."""
    if key in _keys():
        return
    prefix = f"{where}: " if where else ""
    match = difflib.get_close_matches(key, list(_keys()), n=1)
    hint = f"did you mean '{match[0]}'?" if match else f"known keys: {', '.join(_keys())}"
    raise ConfigError(f"{prefix}unknown setting '{key}'", hint=hint)


def _check(key: str, value: Any, where: str) -> None:  # noqa: ANN401
    """Raise :class:`ConfigError` when ``value`` lies outside the key's range: one line naming
    where it came from, the key, the range and the value."""
    accepts = _accepts()[key]
    prefix = f"{where}: " if where else ""
    if not accepts.holds(value):
        raise ConfigError(
            f"{prefix}setting '{key}' must be {accepts.text(_keys()[key])}, got {value!r}"
        )
    if isinstance(accepts, Text) and accepts.check is not None:
        try:
            accepts.check(value)
        except ConfigError as exc:
            raise ConfigError(f"{prefix}{exc}", hint=exc.hint) from None


def _coerce(key: str, raw: Any, where: str) -> Any:  # noqa: ANN401
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
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(
            f"{where}: setting '{key}' expects {kind.__name__}, got {raw!r}",
            hint=f"for example {key} = {getattr(Settings(), key)!r}",
        ) from None
    _check(key, value, where)
    return value


def load_settings(
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge the layers. ``config`` defaults to ``monitor.toml`` in the working directory if it
    exists; ``env`` to ``os.environ``; ``overrides`` are command-line values (None = not given).
    Each value is checked in its layer, so the error names the file, variable or flag."""
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
            _known(key, str(path))
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
        _known(key)
        values[key] = _coerce(key, raw, "command line")
    return Settings(**values)


def describe() -> list[tuple[str, Any, str]]:
    """(key, default, documentation) for every setting, for the README and ``--help``."""
    defaults = Settings()
    return [(f.name, getattr(defaults, f.name), f.metadata["doc"]) for f in fields(Settings)]


def accepted(key: str) -> str:
    """What ``key`` accepts, in words (``an integer >= 1``, ``a number in [0, 1]``)."""
    return _accepts()[key].text(_keys()[key])


TABLE_START = (
    "<!-- settings table: generated by `python -m monitor.core.settings docs/settings.md` -->"
)
TABLE_END = "<!-- end of the settings table -->"


def markdown_table() -> str:
    """The table of ``docs/settings.md``: key, default, accepted values, meaning."""
    rows = ["| key | default | accepts | meaning |", "|---|---|---|---|"]
    for f in fields(Settings):
        shown = f.metadata["shown"]
        default = f"`{shown}`" if shown else f"`{f.default!r}`"
        meaning = f.metadata["doc"].replace("|", "\\|")
        rows.append(f"| `{f.name}` | {default} | {accepted(f.name)} | {meaning} |")
    return "\n".join(rows)


def write_docs(path: Path) -> bool:
    """Put :func:`markdown_table` between the markers of ``path``; True when it changed."""
    text = path.read_text(encoding="utf-8")
    head, start, rest = text.partition(TABLE_START)
    _, end, tail = rest.partition(TABLE_END)
    if not start or not end:
        raise SystemExit(f"{path}: the markers of the settings table are missing")
    new = f"{head}{TABLE_START}\n{markdown_table()}\n{TABLE_END}{tail}"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    if len(sys.argv) == 2:
        print("updated" if write_docs(Path(sys.argv[1])) else "up to date")
    else:
        print(markdown_table())
