"""Planning a preference campaign: which pairs to ask each annotator next.

Transitivity as part of the design of a campaign (Marchiori, Minervini et al., *Aligning
Intraobserver Agreement by Transitivity*, §4): a pair whose order an annotator's own judgments
already imply is never asked again (:func:`monitor.metrics.preferences.intraobserver.implied_pairs`, the
closure of their weak preference), which tames the quadratic number of pairs; and a share of the
pairs closes triangles with pairs the annotator judged, so that their transitivity kappa (§3.1)
becomes measurable (``triplet_target`` fully judged triplets for an annotator with
``min_comparisons`` or more comparisons).

Each annotator's quota is split into

* **retest**: pairs they judged before, asked again (test-retest);
* **gold**: pairs of two items with different gold values;
* **triangle**: a pair ``(a, c)`` closing a wedge ``(a, b), (b, c)`` they judged (never one their
  judgments imply: with strict answers, only wedges whose middle item won or lost both), and,
  where wedges run out, two pairs ``(a, c), (b, c)`` with a new item ``c`` (at random, as
  information partners are) for a judged pair ``(a, b)`` (neither is implied when planned; the
  answers may still be intransitive);
* **known**: for a new annotator (no judgments yet), pairs whose order the model is sure of;
* **information**: the rest, chosen for the item scores as a whole (Spearman is a global
  measure): A-optimal design, the fall of the trace of the scores' posterior covariance under
  the rank-one update of an answer, ``I ||Sigma a||^2 / (1 + I a' Sigma a)``, ``a = e_i - e_j``,
  ``Sigma`` taken diagonal: ``I (v_i^2 + v_j^2) / (1 + I (v_i + v_j))``. ``I`` is the Fisher
  information of annotator ``k``'s answer (accuracy ``eta_k``) about ``d = s_i - s_j``
  (Crowd-BT, Chen et al., WSDM 2013), ``I = (2 eta_k - 1)^2 (p (1-p))^2 / (q (1 - q))``, ``p =
  sig(d / sqrt(1 + pi V / 8))`` averaged over ``V = v_i + v_j``, ``q = eta_k p + (1 - eta_k)(1 -
  p)``. Candidates are sampled, never all O(I^2) pairs: items in proportion to their variance
  (the least known first, so that degrees rise evenly, where random pairs leave some items with
  0-2 comparisons), each with uniformly random partners (the comparison graph stays the
  expander random pairs make; partners near in score give a chain that places items poorly in
  the whole ranking, and near pairs are the ones real annotators answer near 1/2: in
  bench/planning.py, pairs near in the true order did worse than random ones). They are chosen
  in rounds that apply the update to the chosen items' variances, so annotators do not all get
  the same pairs. Annotators' quotas follow the information of an answer, ``(2 eta_k - 1)^2``
  (:func:`quotas`).

Everything is vectorised over annotators; randomness comes from one ``numpy.random.Generator``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.preferences.intraobserver import implied_pairs
from monitor.metrics.preferences.triangles import triangle_state

PURPOSES: tuple[str, ...] = ("triangle", "information", "known", "gold", "retest")
TRIANGLE, INFORMATION, KNOWN, GOLD, RETEST = range(5)
TRIPLET_TARGET = 10
"""Fully judged triplets an annotator needs for a transitivity kappa worth reading."""
MIN_COMPARISONS = 30
"""Annotators with this many comparisons are to reach the triplet target (from half as many
on, they work toward it)."""
CLOSE_SHARE = 0.25
"""Share of an annotator's pairs spent closing triangles once the target is met."""
FLOOR_SHARE = 0.5
CAP_SHARE = 1.5
"""An annotator's quota lies between these multiples of the even share of the budget."""
ROUNDS = 3
"""Rounds of information choices at least (variances shrink between them)."""
MAX_ROUNDS = 30
ROUND_SHARE = 4.0
"""A round chooses about one pair per this many items: the annotators of one round do not all
take the same uncertain items."""
CANDIDATES = 3
"""Information candidates sampled per pair to choose (more tilts the pairs further from
random ones: bench/planning.py measured 3 best of 3 and 6)."""


@dataclass(frozen=True)
class Plan:
    """The planned pairs, shape (m,) each, in the order of the task file (shuffled): annotator
    code, item codes shown left and right, purpose (index into :data:`PURPOSES`). ``quota (W,)``
    what each annotator was allotted, ``n_triplets (W,)`` their fully judged triplets before the
    plan, ``closing (W,)`` the triplets the plan's triangle pairs close once answered."""

    workers: NDArray[np.int64]
    left: NDArray[np.int64]
    right: NDArray[np.int64]
    purpose: NDArray[np.int8]
    quota: NDArray[np.int64]
    n_triplets: NDArray[np.int64]
    closing: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.workers.size)


def pair_id(campaign: str, worker: str, left: str, right: str, round_: int) -> str:
    """The stable id of a planned pair: ``p-`` and 16 hex digits of the SHA-256 of campaign,
    annotator, the two items (as shown) and the plan's round."""
    text = "\x1f".join((campaign, worker, left, right, str(round_)))
    return "p-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def quotas(
    n: int,
    budget: int,
    per_annotator: int | None,
    weight: ArrayLike | None = None,
    shares: tuple[float, float] = (FLOOR_SHARE, CAP_SHARE),
) -> NDArray[np.int64]:
    """Each of ``n`` annotators' number of pairs, adding up to ``budget``: ``per_annotator``
    each when that spends at most the budget; else in proportion to ``weight`` (the information
    an answer of theirs carries; None or all equal: evenly), each between ``shares`` (floor,
    cap; default ``FLOOR_SHARE`` and ``CAP_SHARE``) times the even share (``per_annotator`` caps
    it too), by water-filling."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    each = budget // n
    if per_annotator is not None and per_annotator <= each:
        return np.full(n, per_annotator, dtype=np.int64)
    wt = None if weight is None else np.maximum(np.asarray(weight, dtype=np.float64), 0.0)
    if wt is None or not np.isfinite(wt).all() or np.ptp(wt) == 0 or wt.max() <= 0:
        q = np.full(n, each, dtype=np.int64)
        q[: budget - each * n] += 1
        return q
    even = budget / n
    floor_share, cap_share = shares
    cap = float(max(1, int(np.ceil(cap_share * even))))
    if per_annotator is not None:
        cap = min(cap, float(per_annotator))
    floor = min(cap, float(np.floor(floor_share * even)))
    lo, hi = 0.0, cap / max(float(wt[wt > 0].min()), 1e-12)
    for _ in range(100):  # the scale whose clipped shares add up to the budget
        mid = (lo + hi) / 2
        if np.clip(mid * wt, floor, cap).sum() < budget:
            lo = mid
        else:
            hi = mid
    x = np.clip(hi * wt, floor, cap)
    q = np.floor(x).astype(np.int64)
    short = int(budget - q.sum())
    if short > 0:  # the largest remainders, where the cap leaves room
        room = np.flatnonzero(q < cap)
        q[room[np.argsort(-(x - q)[room], kind="stable")[:short]]] += 1
    return q


def _round(x: NDArray[np.floating], rng: np.random.Generator) -> NDArray[np.int64]:
    """Stochastic rounding: each share's expected count is exact over annotators, however
    small each one's quota."""
    low = np.floor(x)
    return (low + (rng.random(x.shape) < x - low)).astype(np.int64)


def _keys(w: NDArray, a: NDArray, b: NDArray, n_i: int) -> NDArray[np.int64]:
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    return (w.astype(np.int64) * n_i + lo) * n_i + hi


def _member(sorted_keys: NDArray[np.int64], q: NDArray[np.int64]) -> NDArray[np.bool_]:
    if not sorted_keys.size or not q.size:
        return np.zeros(q.shape, dtype=bool)
    p = np.minimum(np.searchsorted(sorted_keys, q), sorted_keys.size - 1)
    return sorted_keys[p] == q


def _take(
    w: NDArray[np.int64], priority: NDArray, room: NDArray[np.int64], rng: np.random.Generator
) -> NDArray[np.int64]:
    """Positions to keep: per annotator ``w``, the ``room[w]`` best by ``priority`` (higher
    first, ties at random)."""
    if not w.size:
        return np.zeros(0, dtype=np.int64)
    idx = np.lexsort((rng.random(w.size), -priority, w))
    ws = w[idx]
    start = np.r_[0, np.flatnonzero(ws[1:] != ws[:-1]) + 1]
    rank = np.arange(ws.size) - np.repeat(start, np.diff(np.r_[start, ws.size]))
    return idx[rank < room[ws]]


class _Chosen:
    """The pairs chosen so far, and what a new candidate must avoid."""

    def __init__(self, blocked: NDArray[np.int64], n_i: int, n_w: int):
        self.blocked, self.n_i = np.unique(blocked), n_i
        self.w: list[NDArray[np.int64]] = []
        self.a: list[NDArray[np.int64]] = []
        self.b: list[NDArray[np.int64]] = []
        self.p: list[NDArray[np.int8]] = []
        self.count = np.zeros(n_w, dtype=np.int64)

    def ok(
        self, w: NDArray[np.int64], a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> NDArray[np.bool_]:
        """Candidates that are new pairs (distinct items, not blocked, not chosen), each once."""
        keys = _keys(w, a, b, self.n_i)
        good = (a != b) & ~_member(self.blocked, keys)
        first = np.zeros(keys.size, dtype=bool)
        first[np.unique(keys, return_index=True)[1]] = True
        return good & first

    def add(
        self,
        w: NDArray[np.int64],
        a: NDArray[np.int64],
        b: NDArray[np.int64],
        purpose: int,
        blocks: bool = True,
    ) -> None:
        self.w.append(w)
        self.a.append(a)
        self.b.append(b)
        self.p.append(np.full(w.size, purpose, dtype=np.int8))
        self.count += np.bincount(w, minlength=self.count.size)
        if blocks and w.size:
            self.blocked = np.union1d(self.blocked, _keys(w, a, b, self.n_i))


def plan_pairs(
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    *,
    n_items: int,
    score: ArrayLike,
    score_sd: ArrayLike,
    accuracy: ArrayLike,
    plan_for: ArrayLike,
    budget: int,
    per_annotator: int | None = None,
    gold: ArrayLike | None = None,
    retest: float = 0.0,
    gold_share: float = 0.0,
    close_share: float = CLOSE_SHARE,
    triplet_target: int = TRIPLET_TARGET,
    min_comparisons: int = MIN_COMPARISONS,
    exclude: tuple[ArrayLike, ArrayLike, ArrayLike] | None = None,
    order: ArrayLike | None = None,
    seed: int | np.random.Generator | None = 0,
    shares: tuple[float, float] = (FLOOR_SHARE, CAP_SHARE),
) -> Plan:
    """Plan ``budget`` pairs for the annotators ``plan_for`` (codes; a code without judgments is
    a new annotator) from the judgments so far (module docstring).

    ``workers, left, right, outcome : (n,)`` codes and +1/-1/0 as in
    :mod:`monitor.metrics.preferences.judgments` (latest judgment of a pair counts, by ``order``);
    ``score, score_sd : (n_items,)`` the model's item scores and their sds; ``accuracy : (W,)``
    each annotator's accuracy (NaN: the mean of the others), ``W`` covering ``plan_for``;
    ``gold : (n_items,)`` gold values (NaN: none); ``exclude`` (annotator, item, item) pairs
    never to plan (planned and not answered yet). ``retest`` and ``gold_share`` are shares of each
    quota; a share that cannot be filled (no earlier pairs, fewer than two gold values) goes to
    information pairs, as does anything else left unfilled. ``shares``: the quotas' floor and cap
    as multiples of the even share (:func:`quotas`).
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    for name, share in (("retest", retest), ("gold_share", gold_share),
                        ("close_share", close_share)):  # fmt: skip
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {share}.")
    if retest + gold_share > 1.0:
        raise ValueError(f"retest + gold_share must be at most 1, got {retest + gold_share}.")
    if budget < 0 or (per_annotator is not None and per_annotator < 1):
        raise ValueError("budget must be >= 0 and per_annotator >= 1.")
    n_i = int(n_items)
    s = np.asarray(score, dtype=np.float64).reshape(-1)
    sd = np.asarray(score_sd, dtype=np.float64).reshape(-1)
    if s.shape != (n_i,) or sd.shape != (n_i,):
        raise ValueError(f"score and score_sd must have one entry per item ({n_i}).")
    eta = np.asarray(accuracy, dtype=np.float64).reshape(-1)
    n_w = eta.size
    P = np.unique(np.asarray(plan_for, dtype=np.int64).reshape(-1))
    if P.size and (P[0] < 0 or P[-1] >= n_w):
        raise ValueError(f"plan_for holds codes outside 0..{n_w - 1}.")
    eta = np.where(np.isfinite(eta), eta, np.nanmean(eta) if np.isfinite(eta).any() else 0.8)
    g = np.full(n_i, np.nan) if gold is None else np.asarray(gold, dtype=np.float64).reshape(-1)
    var = np.maximum(np.where(np.isfinite(sd), sd, 3.0), 1e-3) ** 2
    s = np.where(np.isfinite(s), s, 0.0)

    w = np.asarray(workers, dtype=np.int64).reshape(-1)
    a = np.asarray(left, dtype=np.int64).reshape(-1)
    b = np.asarray(right, dtype=np.int64).reshape(-1)
    y = np.asarray(outcome, dtype=np.int64).reshape(-1)
    if n_i < 2 or (w.size and (w.max() >= n_w or max(a.max(), b.max()) >= n_i)):
        raise ValueError("codes must fit n_items (at least 2) and the accuracy's annotators.")
    # the latest judgment of each (annotator, pair)
    ordr = np.arange(w.size, dtype=np.float64) if order is None else np.asarray(order, float)
    keys = _keys(w, a, b, n_i)
    last = np.lexsort((np.arange(w.size), ordr, keys))
    keep = np.ones(last.size, dtype=bool)
    keep[:-1] = keys[last][1:] != keys[last][:-1]
    last = last[keep]
    jw, ja, jb = w[last], a[last], b[last]
    judged = keys[last]
    n_judged = np.bincount(jw, minlength=n_w)
    if w.size:
        tri = triangle_state(w, a, b, y, ordr, n_workers=n_w, n_items=n_i).n_triplets
        imp = implied_pairs(w, a, b, y, ordr)
        implied = (imp.workers * n_i + imp.items[:, 0]) * n_i + imp.items[:, 1]
    else:
        tri, implied = np.zeros(n_w, dtype=np.int64), np.zeros(0, dtype=np.int64)
    n_triplets = np.zeros(n_w, dtype=np.int64)
    n_triplets[: tri.size] = tri
    excluded = np.zeros(0, dtype=np.int64)
    if exclude is not None:
        ew, ea, eb = (np.asarray(v, dtype=np.int64).reshape(-1) for v in exclude)
        excluded = np.unique(_keys(ew, ea, eb, n_i))
    chosen = _Chosen(np.concatenate([judged, implied, excluded]), n_i, n_w)

    quota = np.zeros(n_w, dtype=np.int64)
    # Crowd-BT's active learning chooses the annotator too: more pairs where an answer
    # carries more information, (2 eta - 1)^2
    info = np.maximum(2 * eta[P] - 1, 0.0) ** 2
    quota[P] = quotas(P.size, budget, per_annotator, info, shares)
    in_plan = np.zeros(n_w, dtype=bool)
    in_plan[P] = True
    is_new = in_plan & (n_judged == 0)

    # retest: earlier pairs, sides at random
    n_re = np.where(in_plan, np.minimum(_round(retest * quota, rng), n_judged), 0)
    if n_re.any():
        open_ = ~_member(excluded, judged)
        pick = _take(jw[open_], np.zeros(int(open_.sum())), n_re, rng)
        idx = np.flatnonzero(open_)[pick]
        chosen.add(jw[idx], ja[idx], jb[idx], RETEST, blocks=False)

    # gold: two items with different gold values
    gold_items = np.flatnonzero(np.isfinite(g))
    n_gold = _round(gold_share * quota, rng) * in_plan
    if n_gold.any() and np.unique(g[gold_items]).size >= 2:
        cw = np.repeat(np.arange(n_w), 4 * n_gold)
        ci = gold_items[rng.integers(0, gold_items.size, cw.size)]
        cj = gold_items[rng.integers(0, gold_items.size, cw.size)]
        ok = chosen.ok(cw, ci, cj) & (g[ci] != g[cj])
        pick = _take(cw[ok], np.zeros(int(ok.sum())), n_gold, rng)
        idx = np.flatnonzero(ok)[pick]
        chosen.add(cw[idx], ci[idx], cj[idx], GOLD)

    rest = quota - chosen.count
    # triangles: enough to reach the target, from half of min_comparisons on, so that an
    # annotator who gets a few pairs a round has it by the time they reach min_comparisons
    deficit = np.maximum(triplet_target - n_triplets, 0)
    target_on = (2 * (n_judged + quota) >= min_comparisons) & ~is_new
    closing_share = _round(close_share * rest, rng)
    n_close = np.where(target_on, np.maximum(closing_share, 2 * deficit), closing_share)
    n_close = np.where(in_plan & ~is_new, np.minimum(n_close, rest), 0)
    closing = np.zeros(n_w, dtype=np.int64)
    if n_close.any():
        closing = _triangles(jw, ja, jb, n_close, chosen, rng, n_i)

    # new annotators: well-known pairs first (half of what is left)
    n_known = np.where(is_new, (quota - chosen.count + 1) // 2, 0)
    if n_known.any():
        _known(n_known, chosen, s, var, rng)

    # information: the rest, in rounds
    total = int(np.where(in_plan, quota - chosen.count, 0).sum())
    rounds = int(np.clip(np.ceil(total / max(n_i / ROUND_SHARE, 1.0)), ROUNDS, MAX_ROUNDS))
    for r in range(rounds + 2):
        room = np.where(in_plan, quota - chosen.count, 0)
        if not room.any():
            break
        per = room if r >= rounds - 1 else -(-room // (rounds - r))
        _information(per, chosen, s, var, eta, rng, last=r >= rounds)

    cw = np.concatenate(chosen.w) if chosen.w else np.zeros(0, np.int64)
    ca = np.concatenate(chosen.a) if chosen.a else np.zeros(0, np.int64)
    cb = np.concatenate(chosen.b) if chosen.b else np.zeros(0, np.int64)
    cp = np.concatenate(chosen.p) if chosen.p else np.zeros(0, np.int8)
    flip = rng.random(cw.size) < 0.5
    ca, cb = np.where(flip, cb, ca), np.where(flip, ca, cb)
    shuffle = rng.permutation(cw.size)
    return Plan(cw[shuffle], ca[shuffle], cb[shuffle], cp[shuffle], quota, n_triplets, closing)


def _triangles(
    jw: NDArray[np.int64],
    ja: NDArray[np.int64],
    jb: NDArray[np.int64],
    n_close: NDArray[np.int64],
    chosen: _Chosen,
    rng: np.random.Generator,
    n_i: int,
) -> NDArray[np.int64]:
    """Pairs closing wedges of judged pairs (one pair, the triangles it closes first), then new
    items joined to both ends of a judged pair (two pairs a triangle); the triplets closed."""
    n_w = n_close.size
    closing = np.zeros(n_w, dtype=np.int64)
    want = np.where(np.isin(np.arange(n_w), jw), n_close, 0)
    # half-edges (annotator, x, y) grouped by (annotator, x); partners at random in the group
    hw, hx, hy = np.r_[jw, jw], np.r_[ja, jb], np.r_[jb, ja]
    use = want[hw] > 0
    hw, hx, hy = hw[use], hx[use], hy[use]
    srt = np.lexsort((hy, hx, hw))
    hw, hx, hy = hw[srt], hx[srt], hy[srt]
    node = hw * n_i + hx
    start = np.r_[0, np.flatnonzero(node[1:] != node[:-1]) + 1] if node.size else np.zeros(0, int)
    size = np.diff(np.r_[start, node.size])
    first = np.repeat(start, size)
    gsize = np.repeat(size, size)
    multi = gsize > 1
    cw_l, ca_l, cb_l = [], [], []
    for _ in range(4):
        k = np.flatnonzero(multi)
        off = (k - first[k] + 1 + rng.integers(0, np.maximum(gsize[k] - 1, 1))) % gsize[k]
        partner = first[k] + off
        cw_l.append(hw[k])
        ca_l.append(hy[k])
        cb_l.append(hy[partner])
    if cw_l:
        cw, ca, cb = np.concatenate(cw_l), np.concatenate(ca_l), np.concatenate(cb_l)
        ok = (ca != cb) & ~_member(chosen.blocked, _keys(cw, ca, cb, n_i))
        cw, ca, cb = cw[ok], ca[ok], cb[ok]
        _, inv, cnt = np.unique(_keys(cw, ca, cb, n_i), return_inverse=True,
                                   return_counts=True)  # fmt: skip
        uniq = np.unique(inv, return_index=True)[1]
        cw, ca, cb = cw[uniq], ca[uniq], cb[uniq]
        # a wedge pair found k times by the sampling closes about that many triangles
        pick = _take(cw, cnt.astype(float), want, rng)
        chosen.add(cw[pick], ca[pick], cb[pick], TRIANGLE)
        closing += np.bincount(cw[pick], minlength=n_w)
    # new items joined to both ends of judged pairs
    room = np.where(n_close > 0, n_close - closing, 0)
    pairs_left = room // 2
    if not pairs_left.any():
        return closing
    # the new item uniformly random, as information partners are: a new item near one end
    # makes a local, hard pair (bench/planning.py)
    tries = 3 * pairs_left[jw]
    e = np.repeat(np.arange(jw.size), np.minimum(tries, 6 * np.maximum(pairs_left[jw], 0)))
    if not e.size:
        return closing
    e = e[rng.permutation(e.size)]
    tw, ta, tb = jw[e], ja[e], jb[e]
    tc = rng.integers(0, n_i, e.size)
    ok = chosen.ok(tw, ta, tc) & chosen.ok(tw, tb, tc) & (tc != ta) & (tc != tb)
    # one new item per judged pair and annotator: no two triangles sharing their new pairs
    k1 = _keys(tw, ta, tc, n_i)
    k2 = _keys(tw, tb, tc, n_i)
    both, n_both = np.unique(np.r_[k1[ok], k2[ok]], return_counts=True)
    shared = both[n_both > 1]
    dup = np.isin(k1, shared) | np.isin(k2, shared)
    ok &= ~dup
    pick = _take(tw[ok], np.zeros(int(ok.sum())), pairs_left, rng)
    idx = np.flatnonzero(ok)[pick]
    chosen.add(np.r_[tw[idx], tw[idx]], np.r_[ta[idx], tb[idx]], np.r_[tc[idx], tc[idx]],
               TRIANGLE)  # fmt: skip
    closing += np.bincount(tw[idx], minlength=n_w)
    return closing


def _information_per_answer(
    # the preference model's scores and the answers; the list alike in shape in
    # crowdtruth/layout.py carries other data
    s: NDArray[np.float64],
    var: NDArray[np.float64],
    eta: NDArray[np.float64],
    w: NDArray[np.int64],
    i: NDArray[np.int64],
    j: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Expected Fisher information of annotator ``w``'s answer on ``(i, j)`` about
    ``d = s_i - s_j`` (Crowd-BT; ``p`` averaged over the posterior of ``d``, MacKay 1992)."""
    V = var[i] + var[j]
    p = 1.0 / (1.0 + np.exp(-(s[i] - s[j]) / np.sqrt(1.0 + np.pi * V / 8.0)))
    e = eta[w]
    q = e * p + (1 - e) * (1 - p)
    return (2 * e - 1) ** 2 * (p * (1 - p)) ** 2 / np.maximum(q * (1 - q), 1e-12)


def _reduction(
    info: NDArray[np.float64], var: NDArray[np.float64], i: NDArray[np.int64], j: NDArray[np.int64]
) -> NDArray[np.float64]:
    """A-optimal value of an answer: the fall of the trace of the scores' covariance under the
    rank-one update of ``a = e_i - e_j`` with information ``I`` (``info``), ``I ||Sigma a||^2 /
    (1 + I a' Sigma a)``, ``Sigma`` taken diagonal: ``I (v_i^2 + v_j^2) / (1 + I (v_i + v_j))``."""
    return info * (var[i] ** 2 + var[j] ** 2) / (1 + info * (var[i] + var[j]))


def _information(
    room: NDArray[np.int64],
    chosen: _Chosen,
    s: NDArray[np.float64],
    var: NDArray[np.float64],
    eta: NDArray[np.float64],
    rng: np.random.Generator,
    *,
    last: bool = False,
) -> None:
    """Choose ``room[w]`` pairs for each annotator: items drawn in proportion to their
    variance (balanced coverage), each with uniformly random partners (the comparison graph of
    random pairs, an expander), the candidate with the largest A-optimal value
    (:func:`_reduction`) kept; then shrink the chosen items' variances by the same rank-one
    update (the next round sees them as partly answered)."""
    n_i = s.size
    n_c = CANDIDATES * (4 if last else 1)
    cw = np.repeat(np.arange(room.size), n_c * room)
    if not cw.size:
        return
    ci = rng.choice(n_i, size=cw.size, p=var / var.sum())
    cj = rng.integers(0, n_i, cw.size)
    ok = chosen.ok(cw, ci, cj)
    cw, ci, cj = cw[ok], ci[ok], cj[ok]
    info = _information_per_answer(s, var, eta, cw, ci, cj)
    pick = _take(cw, _reduction(info, var, ci, cj), room, rng)
    cw, ci, cj, info = cw[pick], ci[pick], cj[pick], info[pick]
    chosen.add(cw, ci, cj, INFORMATION)
    gained = info / (1 + info * (var[ci] + var[cj]))
    var[:] = 1 / (1 / var + np.bincount(ci, gained, n_i) + np.bincount(cj, gained, n_i))


def _known(
    room: NDArray[np.int64],
    chosen: _Chosen,
    s: NDArray[np.float64],
    var: NDArray[np.float64],
    rng: np.random.Generator,
) -> None:
    """Pairs whose order the model is sure of (|d| at least two sds), for a new annotator."""
    n_i = s.size
    cw = np.repeat(np.arange(room.size), 8 * room)
    if not cw.size:
        return
    sure = np.flatnonzero(var <= np.quantile(var, 0.5))
    pool = sure if sure.size >= 2 else np.arange(n_i)
    ci = pool[rng.integers(0, pool.size, cw.size)]
    cj = pool[rng.integers(0, pool.size, cw.size)]
    ok = chosen.ok(cw, ci, cj)
    cw, ci, cj = cw[ok], ci[ok], cj[ok]
    z = np.abs(s[ci] - s[cj]) / np.sqrt(var[ci] + var[cj])
    # sure, but not the two ends of the scale: z capped at 3
    pick = _take(cw, np.minimum(z, 3.0), room, rng)
    chosen.add(cw[pick], ci[pick], cj[pick], KNOWN)
