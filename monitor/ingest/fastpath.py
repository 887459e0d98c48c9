"""The CSV fast path of validation: a clean row straight from the reader's fields to its
record, without building the row's dicts; anything unusual goes through
:meth:`~monitor.ingest.validate.Validator.check`, which names the problems."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from monitor.core.catalog import Kind
from monitor.ingest.records import MAX_ID, SEP
from monitor.ingest.safe import NUMBER
from monitor.store.campaigns import CampaignInfo

__all__ = ["CACHE_SIZE", "FastCheck", "clean_time", "csv_fast"]

_fromisoformat = datetime.fromisoformat
_sha256 = hashlib.sha256
_number_text = NUMBER.fullmatch
CACHE_SIZE = 10_000  # distinct value or duration strings whose parse the CSV fast path keeps

# A CSV row (the reader's list of fields) and its line -> its record when clean, else None.
FastCheck = Callable[[list[str], int], tuple[Any, ...] | None]


class Checker(Protocol):
    """What the fast path reads of the file's :class:`~monitor.ingest.validate.Validator`: the
    campaign, its kind and required columns, the scale's bounds, the categories known and
    those seen new (which the fast path leaves to ``check``)."""

    campaign: CampaignInfo
    kind: Kind
    required: tuple[str, ...]
    lo: float
    hi: float
    known: frozenset[str]
    new_categories: dict[str, None]
    planned: dict[str, tuple[str, str]]


def clean_time(text: str, keyed: bool) -> tuple[datetime, str] | None:
    """A timestamp that parses, in UTC, with its text for the content hash of a row without an
    external id (``keyed`` False; "" otherwise); None when it does not parse."""
    try:
        created = _fromisoformat(text)
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        created = created.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: past year 9999 or before 1 in UTC
        return None
    return created, "" if keyed else (_utc_stamp(text) or created.isoformat())


def _utc_stamp(text: str) -> str | None:
    """``isoformat()`` of the UTC time ``text`` (parsed by ``datetime.fromisoformat``) when it
    is written ``YYYY-MM-DDTHH:MM:SS`` with ``Z``, ``+00:00`` or no offset, else None."""
    size = len(text)
    if (
        (size == 19 or (size == 20 and text[19] == "Z") or (size == 25 and text[19:] == "+00:00"))
        and text[4] == text[7] == "-"
        and text[13] == text[16] == ":"
        and text.isascii()
    ):
        return text[:10] + "T" + text[11:19] + "+00:00"
    return None


def csv_fast(
    validator: Checker, positions: dict[str, int], rest: list[tuple[int, str]]
) -> FastCheck | None:
    """A function that turns a clean CSV row straight into its record, else None.

    ``positions`` gives the index of each canonical column of the header, ``rest`` the
    ``(index, name)`` of the payload's. The function takes the reader's list of fields and the
    row's line and returns exactly the record ``validator.check`` gives for the same row, without building the
    row's dicts; for anything unusual (a problem, a category not seen yet) it returns None,
    and the row goes through ``check``, which names the problems. None when the
    campaign's kind has no fast path (multilabel) or a required column is absent.
    """
    if validator.kind == "multilabel" or any(c not in positions for c in validator.required):
        return None
    if validator.planned and any(name == "pair_id" for _, name in rest):
        return None  # rows answering planned pairs are matched to them (Validator._planned)
    get = positions.get
    i_ext, i_time, i_dur = get("judgment_id"), get("created_at"), get("duration_s")
    parse_time, sha, sep, inf = clean_time, _sha256, SEP, math.inf
    number_text = _number_text
    durations: dict[str, float] = {}

    def tail(row: list[str]) -> tuple[Any, ...] | None:
        """(external, created, duration, stamp, payload), or None when one is bad."""
        external: str | None = None
        if i_ext is not None:
            external = row[i_ext].strip()
            if len(external) > MAX_ID:
                return None
            external = external or None
        created: datetime | None = None
        stamp = ""
        if i_time is not None and (text := row[i_time].strip()):
            parsed = parse_time(text, external is not None)
            if parsed is None:
                return None
            created, stamp = parsed
        duration: float | None = None
        if i_dur is not None and (raw := row[i_dur]).strip():
            duration = durations.get(raw)
            if duration is None:
                if not number_text(raw.strip()):
                    return None
                duration = float(raw)
                if not duration >= 0 or duration == inf:
                    return None
                duration += 0.0  # -0.0 -> 0.0, as float(seconds(...)) does
                if len(durations) < CACHE_SIZE:
                    durations[raw] = duration
        payload = {c: row[i] for i, c in rest} if rest else None
        return external, created, duration, stamp, payload

    if validator.kind == "pairwise":
        return _pairwise_fast(validator, positions, tail, sha, sep)
    i_worker, i_item, i_value = positions["worker"], positions["item"], positions["value"]
    rating = validator.kind == "rating"
    lo, hi = validator.lo, validator.hi
    values: dict[str, tuple[float | None, str | None, str]] = {}
    known, new = validator.known, validator.new_categories

    def value_of(value: str) -> tuple[float | None, str | None, str] | None:
        """(value_num, value_label, canonical text) of a clean value, else None."""
        if rating:
            if not number_text(text := value.strip()):
                return None
            num = float(text)
            if not lo <= num <= hi or num - num != 0.0:  # NaN, inf
                return None
            got: tuple[float | None, str | None, str] = (num, None, repr(num))
            if len(values) < CACHE_SIZE:
                values[value] = got
            return got
        label = value.strip()
        if not label or (label not in known and label not in new):
            return None  # a new category is added by check(), in file order
        return None, label, label  # not cached: the categories may still grow

    def fast(row: list[str], line: int) -> tuple[Any, ...] | None:
        worker, item = row[i_worker].strip(), row[i_item].strip()
        if not worker or not item or len(worker) > MAX_ID or len(item) > MAX_ID:
            return None
        got = values.get(value := row[i_value]) or value_of(value)
        if got is None or (rest := tail(row)) is None:
            return None
        num, label, canon = got
        external, created, duration, stamp, payload = rest
        if external is not None:
            key = "id:" + external
        else:
            key = "sha256:" + sha(sep.join((worker, item, canon, stamp)).encode()).hexdigest()
        return (worker, item, num, label, key, external, created, duration, payload, None, line)

    return fast


def _pairwise_fast(
    validator: Checker,
    positions: dict[str, int],
    tail: Callable[[list[str]], tuple[Any, ...] | None],
    sha: Callable[..., Any],
    sep: str,
) -> FastCheck:
    """:func:`csv_fast` for a pairwise campaign."""
    i_worker, i_left, i_right = positions["worker"], positions["left"], positions["right"]
    i_pref = positions["preference"]
    outcomes = ("left", "right") if validator.campaign.strict else ("left", "right", "tie")

    def fast(row: list[str], line: int) -> tuple[Any, ...] | None:
        worker, left, right = row[i_worker].strip(), row[i_left].strip(), row[i_right].strip()
        if (
            not worker
            or not left
            or not right
            or left == right
            or len(worker) > MAX_ID
            or len(left) > MAX_ID
            or len(right) > MAX_ID
        ):
            return None
        outcome = row[i_pref].strip().lower()
        if outcome not in outcomes or (rest := tail(row)) is None:
            return None
        external, created, duration, stamp, payload = rest
        if external is not None:
            key = "id:" + external
        else:
            key = (
                "sha256:"
                + sha(sep.join((worker, left, right, outcome, stamp)).encode()).hexdigest()
            )
        return (worker, left, right, outcome, key, external, created, duration, payload, line)

    return fast
