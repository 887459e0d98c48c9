"""Every annotator's fully judged triplets, counted once and kept up to date
(:class:`TriangleState`; Marchiori, Minervini et al., *Aligning Intraobserver Agreement by
Transitivity*, section 3.1; :mod:`monitor.metrics.preferences.intraobserver` turns the counts into kappas).

Fully judged triplets are the triangles of the annotator's graph of judged pairs. All annotators'
graphs live in one sorted array of directed pair keys ``(worker * I + a) * I + b`` (both
directions), so neighbourhoods are contiguous slices. :func:`triangle_state` counts triangles by
orienting every edge from lower to higher (degree, node) and closing each wedge at its lowest
vertex, O(m^1.5) in total; :meth:`TriangleState.update` touches only the triangles through the
pairs whose relation changed or appeared, so it costs O(sum of their degrees) plus one merge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from monitor.metrics.preferences.judgments import (
    Judgments,
    latest,
    pair_keys,
    sort_by_key,
    validate,
)


def _weak_order_table() -> NDArray[np.bool_]:
    """table[(r_uv+1)*9 + (r_uw+1)*3 + (r_vw+1)]: do the relations form a weak order?"""
    table = np.zeros(27, dtype=bool)
    lv = np.array(np.meshgrid([0, 1, 2], [0, 1, 2], [0, 1, 2], indexing="ij")).reshape(3, -1)
    u, v, w = lv
    codes = (np.sign(u - v) + 1) * 9 + (np.sign(u - w) + 1) * 3 + (np.sign(v - w) + 1)
    table[codes] = True
    return table


_TRANSITIVE = _weak_order_table()  # 13 of the 27 patterns; 6 of the 8 strict ones


def _expand(starts: NDArray[np.int64], counts: NDArray[np.int64]) -> tuple[NDArray, NDArray]:
    """Concatenated ranges starts[i] .. starts[i] + counts[i] - 1, and their owner index."""
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(counts)), counts)
    offs = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return starts[owner] + offs, owner


@dataclass(frozen=True)
class TriangleState:
    """Sufficient statistics of transitivity for all annotators; immutable, ``update`` returns a new
    state whose counts equal a recount from scratch.

    Directed pair arrays, shape (2m,), sorted by ``keys`` (``(worker * I + a) * I + b``): ``rel``
    the relation of a to b of the latest judgment (+1 a preferred, 0 tie, -1), ``order`` its time,
    ``ids`` its judgment id, ``counts (2m, 3)`` how many judgments said a<b, a=b, a>b (for
    test-retest). Per worker, shape (W,): ``n_triplets``, ``n_transitive``, ``n_judgments``,
    ``n_ties`` (tie answers, repeats included). Intransitive triplets, shape (c,) and (c, 3):
    ``cycle_workers``, ``cycle_items`` (sorted item codes). ``next_id`` numbers the next judgment.
    """

    n_workers: int
    n_items: int
    keys: NDArray[np.int64]
    rel: NDArray[np.int8]
    # per directed pair; store/coded.py's and judgments.Judgments' fields alike in shape are
    # per judgment
    order: NDArray[np.float64]
    ids: NDArray[np.int64]
    counts: NDArray[np.int64]
    n_triplets: NDArray[np.int64]
    n_transitive: NDArray[np.int64]
    n_judgments: NDArray[np.int64]
    n_ties: NDArray[np.int64]
    cycle_workers: NDArray[np.int64]
    cycle_items: NDArray[np.int64]
    next_id: int

    # ------------------------------------------------------------------ lookups

    def _find(self, keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        pos = np.searchsorted(self.keys, keys)
        pos_c = np.minimum(pos, max(len(self.keys) - 1, 0))
        found = (pos < len(self.keys)) & (self.keys[pos_c] == keys) if len(self.keys) else pos < 0
        return pos_c, found

    def _slices(self, nodes: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        n_i = self.n_items
        start = np.searchsorted(self.keys, nodes * n_i)
        return start, np.searchsorted(self.keys, (nodes + 1) * n_i) - start

    # ------------------------------------------------------------------ triangles through edges

    def _through(self, lo_keys: NDArray[np.int64]) -> tuple[NDArray, NDArray, NDArray]:
        """Triangles containing at least one of the given pairs (sorted unique canonical keys
        present in the state), each once: (worker, sorted items (t, 3), transitive)."""
        n_i = self.n_items
        node_a, b_item = lo_keys // n_i, lo_keys % n_i
        w = node_a // n_i
        node_b = w * n_i + b_item
        sa, da = self._slices(node_a)
        sb, db = self._slices(node_b)
        pivot_is_a = da <= db
        start = np.where(pivot_is_a, sa, sb)
        pos, e = _expand(start, np.where(pivot_is_a, da, db))
        c_item = self.keys[pos] % n_i
        other = np.where(pivot_is_a, node_b, node_a)[e]
        ok = c_item != (other % n_i)
        pos, e, c_item, other = pos[ok], e[ok], c_item[ok], other[ok]
        p_oc, closed = self._find(other * n_i + c_item)
        pos, e, c_item, p_oc = pos[closed], e[closed], c_item[closed], p_oc[closed]
        a_item = node_a[e] % n_i
        b_it = b_item[e]
        wk = w[e]
        # keep the triangle only at its smallest listed pair
        own = lo_keys[e]
        keep = np.ones(len(own), dtype=bool)
        for x in (a_item, b_it):
            k2 = (wk * n_i + np.minimum(x, c_item)) * n_i + np.maximum(x, c_item)
            p2 = np.minimum(np.searchsorted(lo_keys, k2), len(lo_keys) - 1)
            keep &= (lo_keys[p2] != k2) | (k2 > own)
        a_item, b_it, c_item, wk = a_item[keep], b_it[keep], c_item[keep], wk[keep]
        tri = np.sort(np.stack([a_item, b_it, c_item], axis=1), axis=1)
        return wk, tri, self._transitive(wk, tri)

    def _transitive(self, wk: NDArray[np.int64], tri: NDArray[np.int64]) -> NDArray[np.bool_]:
        r = self.relations(wk, tri)
        # columns (x,y), (y,z), (x,z) for x<y<z; table wants (u,v), (u,w), (v,w) = xy, xz, yz
        return _TRANSITIVE[(r[:, 0] + 1) * 9 + (r[:, 2] + 1) * 3 + (r[:, 1] + 1)]

    def relations(self, wk: NDArray[np.int64], tri: NDArray[np.int64]) -> NDArray[np.int64]:
        """Relations (x,y), (y,z), (x,z) of sorted triplets ``tri (t, 3)``, shape (t, 3)."""
        return self.rel[self._pair_pos(wk, tri)].astype(np.int64)

    def judgment_ids(self, wk: NDArray[np.int64], tri: NDArray[np.int64]) -> NDArray[np.int64]:
        """Ids of the judgments behind (x,y), (y,z), (x,z) of sorted triplets, shape (t, 3)."""
        return self.ids[self._pair_pos(wk, tri)]

    def _pair_pos(self, wk: NDArray[np.int64], tri: NDArray[np.int64]) -> NDArray[np.int64]:
        n_i = self.n_items
        x, y, z = tri[:, 0], tri[:, 1], tri[:, 2]
        keys = np.stack([(wk * n_i + a) * n_i + b for a, b in ((x, y), (y, z), (x, z))], axis=1)
        return np.searchsorted(self.keys, keys)

    # ------------------------------------------------------------------ update

    def update(
        self,
        workers: ArrayLike,
        # triangle_state's inputs: the judgments to add
        left: ArrayLike,
        right: ArrayLike,
        outcome: ArrayLike,
        order: ArrayLike | None = None,
        ids: ArrayLike | None = None,
    ) -> TriangleState:
        """The state after adding judgments (same convention as :func:`triangle_state`).

        A new judgment replaces the stored one of its pair when its order is >= the stored order
        (the new batch counts as later in position). Only triangles through pairs whose relation
        changed or that are new are recounted. ``order`` defaults to following the stored ones.
        """
        j = validate(workers, left, right, outcome, order, n_workers=None, n_items=None)
        n = len(j.workers)
        if order is None:
            top = float(self.order.max()) + 1 if len(self.order) else 0.0
            j = replace(j, order=top + np.arange(n, dtype=np.float64))
        new_ids = _ids(ids, n, self.next_id)
        state = self._grown(max(j.n_workers, self.n_workers), max(j.n_items, self.n_items))
        return state._merge(j, new_ids)

    def _grown(self, n_workers: int, n_items: int) -> TriangleState:
        if n_workers == self.n_workers and n_items == self.n_items:
            return self
        old = self.n_items
        node, b = self.keys // old, self.keys % old
        w, a = node // old, node % old
        dummy = Judgments(w[:0], a[:0], b[:0], self.rel[:0], self.order[:0], n_workers, n_items)
        pair_keys(dummy)  # overflow check
        pad = n_workers - self.n_workers
        z = np.zeros(pad, dtype=np.int64)
        return replace(
            self,
            n_workers=n_workers,
            n_items=n_items,
            keys=(w * n_items + a) * n_items + b,
            n_triplets=np.r_[self.n_triplets, z],
            n_transitive=np.r_[self.n_transitive, z],
            n_judgments=np.r_[self.n_judgments, z],
            n_ties=np.r_[self.n_ties, z],
        )

    def _merge(self, j: Judgments, new_ids: NDArray[np.int64]) -> TriangleState:
        n_i, nw = self.n_items, self.n_workers
        j = replace(j, n_workers=nw, n_items=n_i)
        keys = pair_keys(j)
        rows = latest(keys, j.order)
        ukeys = keys[rows]
        cnt = _relation_counts(keys, j.rel, ukeys)
        pos, found = self._find(ukeys)
        # existing pairs: replace when not older
        ex = np.flatnonzero(found)
        p_ex = pos[ex]
        newer = j.order[rows[ex]] >= self.order[p_ex]
        changed_ex = ex[newer & (j.rel[rows[ex]] != self.rel[p_ex])]
        # new pairs: insert both directions
        nw_ = np.flatnonzero(~found)
        r_add = rows[nw_]
        w_add = j.workers[r_add]
        fwd = ukeys[nw_]
        rev = (w_add * n_i + j.hi[r_add]) * n_i + j.lo[r_add]
        add_keys = np.concatenate([fwd, rev])
        sort = np.argsort(add_keys)
        add_keys = add_keys[sort]
        add_rel = np.concatenate([j.rel[r_add], -j.rel[r_add]])[sort]
        add_order = np.concatenate([j.order[r_add]] * 2)[sort]
        add_ids = np.concatenate([new_ids[r_add]] * 2)[sort]
        add_counts = np.concatenate([cnt[nw_], cnt[nw_][:, ::-1]])[sort]
        # one merge of the sorted arrays (fresh copies: the old state stays valid)
        at = np.searchsorted(self.keys, add_keys) + np.arange(len(add_keys))
        keep = np.ones(len(self.keys) + len(add_keys), dtype=bool)
        keep[at] = False

        dest = np.flatnonzero(keep)

        def merge(old: NDArray, add: NDArray) -> NDArray:
            out = np.empty((len(keep), *old.shape[1:]), dtype=old.dtype)
            out[dest], out[at] = old, add
            return out

        rel, order_, ids_ = (
            merge(self.rel, add_rel),
            merge(self.order, add_order),
            merge(self.ids, add_ids),
        )
        counts = merge(self.counts, add_counts)
        # replaced pairs (positions shifted by the insertions before them)
        twin = self._twin(p_ex)
        p_new, twin_new = dest[p_ex], dest[twin]
        upd, upd_twin = p_new[newer], twin_new[newer]
        r_new = j.rel[rows[ex[newer]]]
        rel[upd], rel[upd_twin] = r_new, -r_new
        order_[upd] = order_[upd_twin] = j.order[rows[ex[newer]]]
        ids_[upd] = ids_[upd_twin] = new_ids[rows[ex[newer]]]
        counts[p_new] += cnt[ex]
        counts[twin_new] += cnt[ex][:, ::-1]
        merged = replace(
            self,
            keys=merge(self.keys, add_keys),
            rel=rel,
            order=order_,
            ids=ids_,
            counts=counts,
            n_judgments=self.n_judgments + np.bincount(j.workers, minlength=nw),
            n_ties=self.n_ties
            + np.bincount(j.workers, weights=j.rel == 0, minlength=nw).astype(np.int64),
            next_id=max(self.next_id, int(new_ids.max()) + 1 if len(new_ids) else 0),
        )
        touched = np.sort(np.concatenate([ukeys[changed_ex], fwd]))
        if not len(touched):
            return merged
        old_w, _old_tri, old_ok = self._through(ukeys[changed_ex])
        new_w, new_tri, new_ok = merged._through(touched)
        d_tri = np.bincount(new_w, minlength=nw) - np.bincount(old_w, minlength=nw)
        d_ok = np.bincount(new_w, new_ok, nw) - np.bincount(old_w, old_ok, nw)
        # drop stored cycles through a touched pair, add the new ones
        cw, ci = self.cycle_workers, self.cycle_items
        hit = np.zeros(len(cw), dtype=bool)
        for a, b in ((0, 1), (1, 2), (0, 2)):
            k2 = (cw * n_i + ci[:, a]) * n_i + ci[:, b]
            p2 = np.minimum(np.searchsorted(touched, k2), len(touched) - 1)
            hit |= touched[p2] == k2
        return replace(
            merged,
            n_triplets=self.n_triplets + d_tri,
            n_transitive=self.n_transitive + d_ok.astype(np.int64),
            cycle_workers=np.concatenate([cw[~hit], new_w[~new_ok]]),
            cycle_items=np.concatenate([ci[~hit], new_tri[~new_ok]]),
        )

    def _twin(self, pos: NDArray[np.int64]) -> NDArray[np.int64]:
        n_i = self.n_items
        k = self.keys[pos]
        node, b = k // n_i, k % n_i
        w, a = node // n_i, node % n_i
        return np.searchsorted(self.keys, (w * n_i + b) * n_i + a)


def _ids(ids: ArrayLike | None, n: int, start: int) -> NDArray[np.int64]:
    if ids is None:
        return np.arange(start, start + n, dtype=np.int64)
    out = np.asarray(ids)
    if out.shape != (n,) or (n and not np.issubdtype(out.dtype, np.integer)):
        raise ValueError(f"ids must be {n} integer judgment ids, got shape {out.shape}.")
    return out.astype(np.int64)


def _relation_counts(keys: NDArray, rel: NDArray, ukeys: NDArray) -> NDArray[np.int64]:
    """Per unique key (sorted ``ukeys``): how many judgments said <, =, >, shape (k, 3)."""
    idx = np.searchsorted(ukeys, keys)
    return np.bincount(idx * 3 + rel.astype(np.int64) + 1, minlength=3 * len(ukeys)).reshape(-1, 3)


def triangle_state(
    workers: ArrayLike,
    left: ArrayLike,
    right: ArrayLike,
    outcome: ArrayLike,
    order: ArrayLike | None = None,
    ids: ArrayLike | None = None,
    *,
    n_workers: int | None = None,
    n_items: int | None = None,
) -> TriangleState:
    """Count every annotator's fully judged and transitive triplets from scratch, O(m^1.5).

    ``workers, left, right, outcome, order, ids : (n,)`` (ids default to positions 0..n-1).
    ``n_workers``/``n_items`` reserve room for codes that later updates will bring.
    """
    j = validate(workers, left, right, outcome, order, n_workers=n_workers, n_items=n_items)
    n_i, nw = j.n_items, j.n_workers
    keys = pair_keys(j)
    idx, group = sort_by_key(keys, j.order)
    last = np.ones(len(idx), dtype=bool)
    last[:-1] = group[1:] != group[:-1]
    rows = idx[last]
    jid = _ids(ids, len(keys), 0)
    n_pairs = len(rows)
    cnt = np.bincount(group * 3 + j.rel[idx] + 1, minlength=3 * n_pairs).reshape(-1, 3)
    w, lo, hi, rel = j.workers[rows], j.lo[rows], j.hi[rows], j.rel[rows]
    rev = (w * n_i + hi) * n_i + lo
    rsort = np.argsort(rev)
    # two sorted runs: the stable sort (timsort) merges them in linear time
    sort = np.argsort(np.concatenate([keys[rows], rev[rsort]]), kind="stable")
    sort = np.r_[np.arange(n_pairs), n_pairs + rsort][sort]
    keys2 = np.concatenate([keys[rows], rev])[sort]
    rel2 = np.concatenate([rel, -rel])[sort].astype(np.int8)
    wk, p_uv, p_uw, p_vw = _all_triangles(keys2, n_i)
    ok = _TRANSITIVE[(rel2[p_uv] + 1) * 9 + (rel2[p_uw] + 1) * 3 + (rel2[p_vw] + 1)]
    bad = ~ok
    u_item = keys2[p_uv[bad]] // n_i % n_i
    tri = np.stack([u_item, keys2[p_uv[bad]] % n_i, keys2[p_uw[bad]] % n_i], axis=1)
    return TriangleState(
        n_workers=nw,
        n_items=n_i,
        keys=keys2,
        rel=rel2,
        order=np.concatenate([j.order[rows]] * 2)[sort],
        ids=np.concatenate([jid[rows]] * 2)[sort],
        counts=np.concatenate([cnt, cnt[:, ::-1]])[sort],
        n_triplets=np.bincount(wk, minlength=nw),
        n_transitive=np.bincount(wk, ok, nw).astype(np.int64),
        n_judgments=np.bincount(j.workers, minlength=nw),
        n_ties=np.bincount(j.workers, weights=j.rel == 0, minlength=nw).astype(np.int64),
        cycle_workers=wk[bad],
        cycle_items=np.sort(tri, axis=1).reshape(-1, 3),
        next_id=int(jid.max()) + 1 if len(jid) else 0,
    )


def _all_triangles(keys: NDArray[np.int64], n_i: int) -> tuple[NDArray[np.int64], ...]:
    """All triangles of the graph of sorted directed keys, each once at its lowest vertex u in
    (degree, node) order: worker and the key positions of arcs u->v, u->w, v->w, shape (t,)."""
    if not len(keys):
        e = np.zeros(0, np.int64)
        return e, e, e, e
    node = keys // n_i
    nbr = (node // n_i) * n_i + keys % n_i
    starts = np.flatnonzero(np.r_[True, node[1:] != node[:-1]])
    deg = np.diff(np.r_[starts, len(keys)])
    deg_src = np.repeat(deg, deg)
    deg_nbr = deg[np.searchsorted(node[starts], nbr)]
    fk = np.flatnonzero((deg_src < deg_nbr) | ((deg_src == deg_nbr) & (node < nbr)))
    f_node = node[fk]
    # every pair of forward arcs in one row is a wedge v <- u -> w
    f_start = np.flatnonzero(np.r_[True, f_node[1:] != f_node[:-1]])
    f_len = np.diff(np.r_[f_start, len(f_node)])
    follow = np.repeat(f_start + f_len, f_len) - np.arange(len(f_node)) - 1
    first = np.repeat(np.arange(len(f_node)), follow)
    second = first + 1 + np.arange(len(first)) - np.repeat(np.cumsum(follow) - follow, follow)
    p_uv, p_uw = fk[first], fk[second]
    close = nbr[p_uv] * n_i + keys[p_uw] % n_i
    pos = np.minimum(np.searchsorted(keys, close), len(keys) - 1)
    hit = keys[pos] == close
    p_uv, p_uw = p_uv[hit], p_uw[hit]
    return node[p_uv] // n_i, p_uv, p_uw, pos[hit]


def triplets_per_pair(state: TriangleState) -> NDArray[np.int64]:
    """Per worker, shape (W,): the sum over their judged pairs of the squared number of fully
    judged triplets through the pair, ``sum_e t_e^2`` (``sum_e t_e = 3 x n_triplets``): how much
    the triplets share pairs, which sets the effective number of independent triplets
    (:func:`monitor.metrics.preferences.flags.kappa_interval`)."""
    _wk, p_uv, p_uw, p_vw = _all_triangles(state.keys, state.n_items)
    pos = np.concatenate([p_uv, p_uw, p_vw])
    if not len(pos):
        return np.zeros(state.n_workers, dtype=np.int64)
    n_i = state.n_items
    node = state.keys[pos] // n_i
    pos = np.where(node % n_i < state.keys[pos] % n_i, pos, state._twin(pos))
    through = np.bincount(pos, minlength=len(state.keys))
    hit = np.flatnonzero(through)
    worker = state.keys[hit] // n_i // n_i
    return np.bincount(worker, weights=through[hit] ** 2, minlength=state.n_workers).astype(
        np.int64
    )
