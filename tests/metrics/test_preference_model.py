"""The preference reliability model: planted annotators, gradients, gold, history, warm starts."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import special
from scipy.stats import kendalltau

from monitor.metrics.preferences import model as pm
from monitor.metrics.preferences.judgments import parse_outcomes
from monitor.metrics.preferences.model import gold_order, preference_model, prepare
from monitor.metrics.preferences.model_summary import score_variance
from monitor.metrics.preferences.posterior import SCORE_SD, Posterior
from tests.golden import load, params


def simulate(
    rng: np.random.Generator,
    eta: list[float],
    per_annotator: int,
    n_items: int = 40,
    bias: list[float] | None = None,
    tie_rate: float | list[float] = 0.0,
    spread: float = 1.5,
) -> dict[str, np.ndarray]:
    """Crowd-BT with ties and left offsets: annotator k answers ``per_annotator`` random pairs."""
    k = len(eta)
    s = rng.normal(size=n_items) * spread
    w = np.repeat(np.arange(k), per_annotator)
    left = rng.integers(0, n_items, len(w))
    right = (left + rng.integers(1, n_items, len(w))) % n_items
    d = s[left] - s[right]
    b = np.zeros(k) if bias is None else np.asarray(bias, dtype=float)
    e = np.asarray(eta)[w]
    p_left = e * special.expit(d + b[w]) + (1 - e) * special.expit(b[w] - d)
    rate = np.broadcast_to(np.asarray(tie_rate, dtype=float), (k,))[w]
    nu = 2 * rate / (1 - rate)
    tie = rng.random(len(w)) < nu / (nu + 2 * np.cosh(d / 2))
    y = np.where(tie, 0, np.where(rng.random(len(w)) < p_left, 1, -1)).astype(np.int8)
    return {"workers": w, "left": left, "right": right, "outcome": y, "score": s}


def fit(c: dict[str, np.ndarray], **kw):
    return preference_model(c["workers"], c["left"], c["right"], c["outcome"], **kw)


# ---------------------------------------------------------------------- planted annotators


def test_planted_annotators_are_told_apart() -> None:
    rng = np.random.default_rng(1)
    c = simulate(rng, [0.95] * 6 + [0.5, 0.1], 300, n_items=60)
    m = fit(c)
    assert m.converged
    good, spammer, adversary = m.accuracy[:6], m.accuracy[6], m.accuracy[7]
    assert good.min() > 0.85
    assert m.accuracy_low[6] < 0.5 < m.accuracy_high[6]  # a random answerer sits at chance
    assert adversary < 0.3
    assert m.accuracy_high[7] < 0.5  # confidently below chance
    assert spammer < good.min()
    assert kendalltau(m.score, c["score"]).statistic > 0.8
    assert np.all(m.accuracy_low <= m.accuracy)
    assert np.all(m.accuracy <= m.accuracy_high)
    assert m.crowd_accuracy == pytest.approx(0.85, abs=0.1)


def test_perfect_annotators_give_accuracy_near_one() -> None:
    rng = np.random.default_rng(2)
    s = np.arange(30.0)
    left = rng.integers(0, 30, 600)
    right = (left + rng.integers(1, 30, 600)) % 30
    w = np.arange(600) % 5
    y = np.sign(s[left] - s[right]).astype(np.int8)
    m = preference_model(w, left, right, y)
    assert m.converged
    assert np.all(m.accuracy > 0.95)
    assert kendalltau(m.score, s).statistic > 0.98
    assert np.all(m.agreement > 0.9)


def test_far_apart_items_and_ties_raise_no_numerical_warning() -> None:
    rng = np.random.default_rng(12)
    c = simulate(rng, [0.99] * 4, 300, n_items=30, spread=8.0, tie_rate=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = fit(c)
    assert m.converged
    assert np.all(np.isfinite(m.score))


def test_planted_position_bias_is_found_and_only_there() -> None:
    rng = np.random.default_rng(3)
    c = simulate(rng, [0.9] * 10, 250, n_items=50, bias=[2.0, -2.0] + [0.0] * 8)
    m = fit(c)
    assert m.position_bias_low[0] > 0.5
    assert m.position_bias_high[1] < -0.5
    clean = slice(2, 10)
    assert np.mean((m.position_bias_low[clean] < 0) & (m.position_bias_high[clean] > 0)) >= 0.75
    unbiased = fit(c, position_bias=False)
    assert not unbiased.bias_modelled
    assert np.all(unbiased.position_bias == 0)
    # the model that knows the bias ranks the items at least as well
    tau = kendalltau(m.score, c["score"]).statistic
    assert tau >= kendalltau(unbiased.score, c["score"]).statistic - 0.02


def test_tie_propensity_follows_each_annotators_ties() -> None:
    rng = np.random.default_rng(4)
    c = simulate(rng, [0.9] * 6, 300, tie_rate=[0.05] * 4 + [0.5] * 2)
    m = fit(c)
    assert m.ties_modelled
    assert m.tie_propensity[4:].min() > m.tie_propensity[:4].max()
    assert np.all((m.tie_propensity_low <= m.tie_propensity) & (m.tie_propensity <= 1))
    assert m.n_ties.sum() == int((c["outcome"] == 0).sum())
    # a random answerer with many ties reaches less agreement at chance than one without
    assert m.agreement_floor[4:].max() < m.agreement_floor[:4].min()


def test_strict_campaign_rejects_ties_and_models_none() -> None:
    with pytest.raises(ValueError, match="allows no ties but 1 answers"):
        preference_model([0, 0], [0, 1], [1, 2], [1, 0], ties_allowed=False)
    m = preference_model([0, 0, 1], [0, 1, 0], [1, 2, 2], [1, -1, 1], ties_allowed=False)
    assert not m.ties_modelled
    assert m.crowd_tie_propensity is None


def test_golden_pairwise_case_ranks_the_planted_annotators() -> None:
    case = load(params("pairwise_medium.json")[0].values[0])
    rows = case["judgments"]
    workers, wc = np.unique([r["worker"] for r in rows], return_inverse=True)
    _items, ic = np.unique([r["left"] for r in rows] + [r["right"] for r in rows],
                          return_inverse=True)  # fmt: skip
    n = len(rows)
    m = preference_model(wc, ic[:n], ic[n:], parse_outcomes([r["preference"] for r in rows]))
    kinds = [case["truth_info"]["annotators"][w]["type"] for w in workers]
    acc = dict(zip(kinds, m.accuracy, strict=False))
    k_adv, k_spam = kinds.index("adversarial"), kinds.index("spammer")
    assert m.accuracy_high[k_adv] < 0.5
    assert m.accuracy_low[k_spam] < 0.5 < m.accuracy_high[k_spam] or m.accuracy[k_spam] < 0.6
    good = [i for i, k in enumerate(kinds) if k == "good"]
    assert m.accuracy[good].min() > max(m.accuracy[k_adv], m.accuracy[k_spam])
    assert acc["good"] > 0.5


# ---------------------------------------------------------------------- the objective


@pytest.mark.parametrize("bias,gold", list(itertools.product([True, False], [True, False])))
def test_gradient_matches_finite_differences(bias: bool, gold: bool) -> None:
    rng = np.random.default_rng(5)
    c = simulate(rng, [0.9, 0.7, 0.5, 0.8], 60, n_items=12, tie_rate=0.2)
    g = np.where(rng.random(len(c["left"])) < 0.2, gold_order(c["left"], c["right"], c["score"]),
                 np.nan) if gold else None  # fmt: skip
    D = prepare(c["workers"], c["left"], c["right"], c["outcome"], g)
    lay = pm.Layout(D.n_items, D.n_workers, bias, True)
    prior = np.array([np.nan, 1.0, np.nan, np.nan])
    post = Posterior(D, lay, prior, 1.3, np.float64)
    post.bias_sd = 0.7
    x = rng.normal(size=lay.size) * 0.5
    _f, grad = post(x)
    h = 1e-6
    num = [(post(x + h * e)[0] - post(x - h * e)[0]) / (2 * h) for e in np.eye(lay.size)]
    np.testing.assert_allclose(num, grad, atol=1e-5)
    fast = Posterior(D, lay, prior, 1.3, np.float32)
    fast.bias_sd = 0.7
    np.testing.assert_allclose(fast(x)[1], grad, atol=1e-4)


def test_symmetry_swapping_sides_negates_the_bias_only() -> None:
    rng = np.random.default_rng(6)
    c = simulate(rng, [0.9, 0.8, 0.6, 0.95], 120, n_items=25, bias=[1.5, 0, 0, 0], tie_rate=0.1)
    m = fit(c)
    s = fit({**c, "left": c["right"], "right": c["left"], "outcome": -c["outcome"]})
    np.testing.assert_allclose(s.score, m.score, atol=2e-3)
    np.testing.assert_allclose(s.accuracy, m.accuracy, atol=2e-3)
    np.testing.assert_allclose(s.position_bias, -m.position_bias, atol=2e-3)
    np.testing.assert_allclose(s.tie_propensity, m.tie_propensity, atol=2e-3)


def test_relabelling_annotators_items_and_rows_permutes_the_results() -> None:
    rng = np.random.default_rng(7)
    c = simulate(rng, [0.9, 0.7, 0.5, 0.85, 0.95], 80, n_items=20, tie_rate=0.1)
    m = fit(c)
    pw, pi, rows = rng.permutation(5), rng.permutation(20), rng.permutation(len(c["left"]))
    r = preference_model(pw[c["workers"]][rows], pi[c["left"]][rows], pi[c["right"]][rows],
                         c["outcome"][rows])  # fmt: skip
    np.testing.assert_allclose(r.score[pi], m.score, atol=2e-3)
    np.testing.assert_allclose(r.accuracy[pw], m.accuracy, atol=2e-3)
    np.testing.assert_allclose(r.score_se[pi], m.score_se, rtol=1e-2)


# ---------------------------------------------------------------------- options


def test_gold_pairs_clamp_the_order_and_equal_gold_orders_nothing() -> None:
    # three annotators all say 1 > 0 ten times; the gold says 0 > 1
    w = np.repeat([0, 1, 2], 10)
    left, right, y = np.zeros(30, int), np.ones(30, int), np.ones(30, np.int8)
    free = preference_model(w, left, right, y)
    assert free.score[0] > free.score[1]
    gold = np.full(30, -1.0)
    m = preference_model(w, left, right, y, gold=gold)
    assert m.score[1] > m.score[0]
    assert np.all(m.n_gold == 10)
    assert np.all(m.accuracy < 0.2)
    same = preference_model(w, left, right, y, gold=np.zeros(30))
    np.testing.assert_allclose(same.score, free.score, atol=1e-6)
    assert np.all(same.n_gold == 0)
    order = gold_order([0, 1, 2, 1], [1, 2, 0, 3], [3.0, 3.0, np.nan, 1.0])
    assert order[0] == 0
    assert np.isnan(order[1])
    assert np.isnan(order[2])
    assert order[3] == 1


def test_history_prior_replaces_the_crowd_for_a_newcomer() -> None:
    rng = np.random.default_rng(8)
    c = simulate(rng, [0.9] * 6 + [0.9], 200, n_items=40)
    keep = (c["workers"] < 6) | (np.arange(len(c["workers"])) % 200 < 3)
    c = {k: v[keep] if k != "score" else v for k, v in c.items()}
    cold = fit(c)
    prior = np.full(7, np.nan)
    prior[6] = 0.55
    warm = fit(c, prior_accuracy=prior)
    assert abs(warm.accuracy[6] - 0.55) < abs(cold.accuracy[6] - 0.55)
    assert warm.accuracy[6] < cold.accuracy[6]
    with pytest.raises(ValueError, match=r"prior_accuracy\[6\] is 1.5"):
        fit(c, prior_accuracy=np.r_[prior[:6], 1.5])


def test_warm_start_agrees_with_a_cold_fit() -> None:
    rng = np.random.default_rng(9)
    c = simulate(rng, [0.9, 0.8, 0.6, 0.95, 0.7, 0.85], 200, n_items=80, tie_rate=0.1)
    n = len(c["left"])
    part = {k: v[: int(0.9 * n)] if k != "score" else v for k, v in c.items()}
    first = fit(part, n_items=80, n_workers=6)
    cold = fit(c)
    warm = fit(c, init=first.start())
    assert cold.converged
    assert warm.converged
    assert warm.iterations < cold.iterations
    # within 0.01 posterior sd of the cold fit, with tol = 1e-3
    assert np.max(np.abs(warm.score - cold.score) / cold.score_se) < 0.01
    assert np.max(np.abs(special.logit(warm.accuracy) - special.logit(cold.accuracy))) < 0.01
    assert abs(warm.crowd_accuracy - cold.crowd_accuracy) < 2 * pm.MU_TOL


def test_not_converged_says_so() -> None:
    rng = np.random.default_rng(10)
    c = simulate(rng, [0.9, 0.7], 100, n_items=30)
    m = fit(c, max_iter=2)
    assert not m.converged
    assert m.iterations <= 2
    assert m.max_iter == 2


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="gold must have one entry per comparison"):
        preference_model([0], [0], [1], [1], gold=[1.0, 2.0])
    with pytest.raises(ValueError, match="compares item 1 with itself"):
        preference_model([0], [1], [1], [1])
    with pytest.raises(ValueError, match=r"init\.score must have one entry per code"):
        preference_model([0], [0], [1], [1], init=pm.PreferenceStart(np.zeros(3), np.zeros(1)))
    with pytest.raises(ValueError, match="max_iter"):
        preference_model([0], [0], [1], [1], max_iter=0)


def test_items_and_annotators_without_comparisons_keep_their_prior() -> None:
    m = preference_model([1, 1], [0, 2], [2, 0], [1, 1], n_items=5, n_workers=3)
    assert m.score[1] == 0
    assert m.score[3] == 0
    assert m.score_se[1] == pytest.approx(SCORE_SD)
    assert m.n_judgments.tolist() == [0, 2, 0]
    assert np.isnan(m.agreement[0])
    assert np.all(np.isfinite(m.score))


# ---------------------------------------------------------------------- score variances


def test_belief_propagation_variances_are_exact_on_a_tree() -> None:
    # a path 0-1-2-3-4 with weights: a tree, where belief propagation is exact
    left, right = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 4])
    pair, pairs = np.arange(4), np.stack([left, right], axis=1)
    w = np.array([0.3, 1.0, 0.2, 0.5])
    exact, is_exact, _ = score_variance(pair, pairs, w, 5, 1 / 9, exact_max=10)
    bp, bp_exact, _ = score_variance(pair, pairs, w, 5, 1 / 9, exact_max=0)
    assert is_exact
    assert not bp_exact
    np.testing.assert_allclose(bp, exact, rtol=1e-4)


def test_belief_propagation_variances_on_dense_blocks_are_close_and_low() -> None:
    rng = np.random.default_rng(11)
    c = simulate(rng, [0.9] * 20, 200, n_items=300)
    D = prepare(c["workers"], c["left"], c["right"], c["outcome"])
    w = rng.uniform(0.05, 0.25, len(D.left))
    exact, _, _ = score_variance(D.pair, D.pairs, w, D.n_items, 1 / 9, exact_max=1000)
    bp, _, _ = score_variance(D.pair, D.pairs, w, D.n_items, 1 / 9, exact_max=0)
    ratio = bp / exact
    assert ratio.max() <= 1 + 1e-6
    assert np.median(ratio) > 0.9


@pytest.mark.parametrize("bias", [True, False])
def test_strict_pull_is_the_crowd_bt_gradient_of_each_strict_answer(bias: bool) -> None:
    rng = np.random.default_rng(11)
    c = simulate(rng, [0.9, 0.7, 0.6], 80, n_items=15, tie_rate=0.1)
    g = np.where(rng.random(len(c["left"])) < 0.2, gold_order(c["left"], c["right"], c["score"]),
                 np.nan)  # fmt: skip
    D = prepare(c["workers"], c["left"], c["right"], c["outcome"], g)
    lay = pm.Layout(D.n_items, D.n_workers, bias, True)
    x = rng.normal(size=lay.size) * 0.5
    ws, ys, d, e, yb, grad_d = pm.strict_pull(D, lay, x)
    np.testing.assert_array_equal(ys, D.y[: D.a])
    a = D.a
    s, eta_logit, b, _, _ = lay.unpack(x)
    want_d = s[D.left[:a]] - s[D.right[:a]]
    want_e = special.expit(eta_logit)[D.w[:a]]
    want_yb = D.y[:a] * b[D.w[:a]] if bias else 0.0
    A = special.expit(want_yb + D.y[:a] * want_d)
    C = special.expit(want_yb - D.y[:a] * want_d)
    want = D.y[:a] * (want_e * A * (1 - A) - (1 - want_e) * C * (1 - C)) / (C + want_e * (A - C))
    np.testing.assert_array_equal(ws, D.w[:a])
    np.testing.assert_array_equal(d, want_d)
    np.testing.assert_array_equal(yb, want_yb)
    np.testing.assert_allclose(e, want_e, rtol=1e-15)
    np.testing.assert_allclose(grad_d, want, rtol=1e-12)
