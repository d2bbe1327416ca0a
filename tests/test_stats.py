"""Tests for layoutbench.stats on generated data with known answers.

Data model used throughout: value = center * (1 + layout effect) * (1 + run
noise), layout effect ~ N(0, layout_sd), run noise ~ N(0, run_sd).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from layoutbench.stats import (
    Comparison,
    NoiseSplit,
    Summary,
    adjust,
    adjust_comparisons,
    compare,
    noise_split,
    summarize,
)

NB = 400  # modest bootstrap count keeps the suite fast


def make_groups(rng, k, r, center, layout_sd, run_sd, prefix="l", effects=None):
    """k layouts x r runs; ``effects`` (length k) overrides the layout draw."""
    groups = {}
    for i in range(k):
        le = effects[i] if effects is not None else rng.normal(0.0, layout_sd)
        runs = center * (1.0 + le) * (1.0 + rng.normal(0.0, run_sd, r))
        groups[f"{prefix}{i}"] = runs.tolist()
    return groups


# --------------------------------------------------------------------------
# summarize
# --------------------------------------------------------------------------

def test_summarize_basic_and_ci_contains_median():
    rng = np.random.default_rng(42)
    x = rng.normal(100.0, 2.0, 40)
    s = summarize(x, n_boot=NB)
    assert isinstance(s, Summary)
    assert s.n == 40
    assert s.median == pytest.approx(float(np.median(x)))
    assert s.mean == pytest.approx(float(np.mean(x)))
    assert s.stdev == pytest.approx(float(np.std(x, ddof=1)))
    assert s.min == pytest.approx(x.min()) and s.max == pytest.approx(x.max())
    assert s.ci_low <= s.median <= s.ci_high
    assert s.ci_low < s.ci_high
    # CI of the median should be about +-1.25*2/sqrt(40)*1.96 ~ +-0.8 wide
    assert 0.3 < s.ci_high - s.ci_low < 3.0
    assert s.outliers == []


def test_summarize_flags_planted_outlier_without_dropping_it():
    rng = np.random.default_rng(7)
    x = list(rng.normal(100.0, 1.0, 30))
    x.insert(13, 125.0)  # ~25 sigma
    s = summarize(x, n_boot=NB)
    assert s.outliers == [13]
    assert s.n == 31
    assert s.max == pytest.approx(125.0)  # not dropped
    assert s.mean == pytest.approx(float(np.mean(x)))


def test_summarize_edge_cases():
    one = summarize([5.0])
    assert (one.n, one.median, one.stdev, one.ci_low, one.ci_high) == (1, 5.0, 0.0, 5.0, 5.0)
    assert one.outliers == []

    eq = summarize([3.0] * 10)
    assert eq.stdev == 0.0 and eq.ci_low == eq.ci_high == 3.0 and eq.outliers == []

    two = summarize([1.0, 2.0], n_boot=NB)
    assert two.ci_low <= two.median <= two.ci_high

    # MAD == 0 fallback (mean absolute deviation): a lone far value is flagged,
    # a third of the sample differing is not.
    assert summarize([1.0] * 6 + [2.0], n_boot=NB).outliers == [6]
    assert summarize([1.0] * 4 + [2.0, 2.0], n_boot=NB).outliers == []

    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        summarize([1.0, float("nan")])


def test_summarize_deterministic():
    x = np.random.default_rng(3).normal(10, 1, 25)
    assert summarize(x, seed=5, n_boot=NB) == summarize(x, seed=5, n_boot=NB)


# --------------------------------------------------------------------------
# noise_split
# --------------------------------------------------------------------------

def test_noise_split_recovers_layout_sd():
    rng = np.random.default_rng(2024)
    g = make_groups(rng, k=30, r=10, center=100.0, layout_sd=0.02, run_sd=0.005)
    ns = noise_split(g)
    assert isinstance(ns, NoiseSplit)
    assert ns.k == 30 and ns.n == 300
    assert ns.layout_cv == pytest.approx(0.02, rel=0.30)
    assert ns.layout_sd == pytest.approx(2.0, rel=0.30)
    assert ns.run_cv == pytest.approx(0.005, rel=0.15)
    assert 0.8 < ns.layout_share < 0.99  # 0.02^2/(0.02^2+0.005^2) = 0.94
    assert set(ns.medians) == set(g)
    assert ns.median_min <= ns.grand_median <= ns.median_max
    assert ns.median_range_rel == pytest.approx(
        (ns.median_max - ns.median_min) / ns.grand_median)


def test_noise_split_recovery_over_many_datasets():
    """Average estimate is close to truth; individual ones mostly within 30%."""
    rng = np.random.default_rng(11)
    est = np.array([
        noise_split(make_groups(rng, 30, 10, 100.0, 0.02, 0.005)).layout_cv
        for _ in range(40)
    ])
    assert abs(est.mean() / 0.02 - 1.0) < 0.1
    assert np.mean(np.abs(est / 0.02 - 1.0) <= 0.30) >= 0.9


def test_noise_split_no_layout_effect_is_near_zero():
    rng = np.random.default_rng(5)
    g = make_groups(rng, k=30, r=10, center=100.0, layout_sd=0.0, run_sd=0.005)
    ns = noise_split(g)
    assert ns.layout_cv < 0.001  # truth 0; run noise must not leak in
    assert ns.layout_share < 0.1
    assert ns.run_cv == pytest.approx(0.005, rel=0.15)
    # the naive spread of medians *is* inflated by run noise (~0.005*1.25/sqrt(10))
    assert ns.median_spread_cv > 0.001
    assert ns.median_spread_cv > 2 * ns.layout_cv


def test_noise_split_unbalanced_and_edge_cases():
    rng = np.random.default_rng(8)
    g = make_groups(rng, 20, 8, 50.0, 0.02, 0.005)
    g = {k: v[: 2 + i % 7] for i, (k, v) in enumerate(g.items())}  # 2..8 runs
    ns = noise_split(g)
    assert ns.layout_cv == pytest.approx(0.02, rel=0.4)

    single = noise_split({"only": [1.0, 1.1, 0.9]})
    assert single.k == 1 and math.isnan(single.layout_sd)
    assert single.run_sd == pytest.approx(0.1)
    d = single.to_dict()
    assert d["layout_sd"] is None
    json.dumps(d, allow_nan=False)

    const = noise_split({"a": [2.0, 2.0], "b": [2.0, 2.0]})
    assert const.layout_sd == 0.0 and const.run_sd == 0.0 and const.layout_share == 0.0

    one_run_each = noise_split({"a": [1.0], "b": [1.2], "c": [0.9]})
    assert math.isnan(one_run_each.run_sd) and one_run_each.layout_sd > 0

    bare = noise_split([1.0, 2.0, 3.0])  # a bare sequence = one layout
    assert bare.k == 1


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------

def _pair(rng, effect, k=8, r=5, layout_sd=0.01, run_sd=0.005, same_ids=False):
    a = make_groups(rng, k, r, 100.0, layout_sd, run_sd, "x")
    b = make_groups(rng, k, r, 100.0 * (1 + effect), layout_sd, run_sd,
                    "x" if same_ids else "y")
    return a, b


@pytest.mark.parametrize("higher_is_better", [False, True])
def test_compare_finds_3pct_in_correct_direction(higher_is_better):
    rng = np.random.default_rng(99)
    a, b = _pair(rng, 0.03)
    c = compare(a, b, higher_is_better=higher_is_better)
    assert isinstance(c, Comparison)
    assert not c.paired
    assert c.ratio == pytest.approx(1.03, abs=0.01)
    assert c.ci_low > 1.0 and c.ci_low <= c.ratio <= c.ci_high
    assert c.p_value < 0.05
    assert c.verdict == ("faster" if higher_is_better else "slower")
    # swapping sides flips the verdict
    c2 = compare(b, a, higher_is_better=higher_is_better)
    assert c2.verdict == ("slower" if higher_is_better else "faster")
    assert c2.ratio == pytest.approx(1.0 / c.ratio)
    # layout noise ~1%, a 3% difference is unlikely to come from layout alone
    assert 0.004 < c.layout_noise < 0.02
    assert c.explained_by_layout < 0.2


@pytest.mark.parametrize("same_ids", [False, True])
def test_compare_error_rates(same_ids):
    """False-positive rate <= ~5% and detection of a 3% effect >= 90%.

    With same_ids the paired design is chosen automatically (here the layout
    effects are independent, so pairing gains nothing but must stay valid).
    """
    rng = np.random.default_rng(1234 + same_ids)
    n = 100
    fp = det = 0
    for i in range(n):
        a, b = _pair(rng, 0.0, same_ids=same_ids)
        c = compare(a, b, higher_is_better=False)
        assert c.paired is same_ids
        fp += c.verdict != "no difference"
        a, b = _pair(rng, 0.03, same_ids=same_ids)
        c = compare(a, b, higher_is_better=False)
        det += c.verdict == "slower"
    assert fp / n <= 0.05 + 0.04
    assert det / n >= 0.90


def test_compare_no_difference_is_reported_as_such():
    rng = np.random.default_rng(17)
    a, b = _pair(rng, 0.0)
    c = compare(a, b, higher_is_better=True)
    assert c.verdict == "no difference"
    assert c.ci_low <= 1.0 <= c.ci_high
    assert c.p_value >= 0.05
    assert "not different" in c.describe()


def test_paired_design_cancels_shared_layout_noise():
    """5% layout noise shared per layout id, 2% code effect, K=8 x R=5."""
    rng = np.random.default_rng(31)
    n = 20
    paired_hits = unpaired_hits = 0
    ratio_w = []
    for i in range(n):
        eff = rng.normal(0.0, 0.05, 8)
        a = make_groups(rng, 8, 5, 100.0, 0.0, 0.005, "s", effects=eff)
        b = make_groups(rng, 8, 5, 102.0, 0.0, 0.005, "s", effects=eff)
        p = compare(a, b, higher_is_better=False)
        u = compare(a, b, higher_is_better=False, paired=False)
        assert p.paired and not u.paired
        assert p.ratio == pytest.approx(u.ratio)  # same estimand, other design
        paired_hits += p.verdict == "slower"
        unpaired_hits += u.verdict == "slower"
        ratio_w.append((u.ci_high - u.ci_low) / (p.ci_high - p.ci_low))
        assert len(p.per_layout_ratios) == 8
    assert paired_hits == n
    assert unpaired_hits <= n // 4
    assert np.median(ratio_w) > 4.0  # paired CI much narrower


def test_paired_true_uses_common_ids_only():
    rng = np.random.default_rng(4)
    eff = rng.normal(0.0, 0.05, 6)
    a = make_groups(rng, 6, 4, 100.0, 0.0, 0.005, "s", effects=eff)
    b = make_groups(rng, 6, 4, 102.0, 0.0, 0.005, "s", effects=eff)
    del a["s0"]
    b["extra"] = [500.0] * 4
    # auto pairing uses the common ids and says how many layouts it dropped
    auto = compare(a, b, False)
    assert auto.paired and auto.n_pairs == 5 and auto.dropped == 2
    assert "2 unpaired dropped" in auto.describe()
    assert not compare(a, b, False, paired=False).paired
    c = compare(a, b, False, paired=True)
    assert c.paired and c.n_layouts_a == c.n_layouts_b == 5
    assert c.verdict == "slower"
    assert "extra" not in c.per_layout_ratios
    with pytest.raises(ValueError):
        compare({"p": [1.0]}, {"q": [1.0]}, False, paired=True)


def test_compare_single_layout_and_describe_and_json():
    """One layout per side: a comparison of two images through their runs (Welch on log runs)."""
    rng = np.random.default_rng(12)
    a = {"seed0": list(100 * (1 + rng.normal(0, 0.005, 20)))}
    b = list(103 * (1 + rng.normal(0, 0.005, 20)))  # bare sequence = one layout
    c = compare(a, b, higher_is_better=False)
    assert c.n_layouts_a == c.n_layouts_b == 1
    assert c.method.startswith("runs") and c.wilcoxon_p < 0.001
    assert c.verdict == "slower"
    assert math.isnan(c.layout_noise)  # not estimable from one layout
    line = c.describe()
    assert line.startswith(f"B is {c.ratio:.3f} ± ") and "× slower than A (95% CI" in line
    assert "runs of one layout per side" in line
    assert "layout noise n/a" in line and "\n" not in line
    d = c.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["layout_noise"] is None and d["noise_a"]["k"] == 1

    # faster orientation is reported as a factor >= 1
    f = compare(b, a, higher_is_better=False)
    assert f.verdict == "faster" and f.describe().startswith(f"B is {c.ratio:.3f} ± ")


def test_compare_one_sample_has_no_verdict():
    """One layout with one run per side: no verdict, whatever the values."""
    c = compare({"l": [100.0]}, {"l": [100.1]}, False)
    assert c.verdict == "n/a" and not c.significant
    assert "n/a (1 sample)" in c.describe()
    assert math.isnan(c.p_value) and math.isnan(c.ci_low)
    json.dumps(c.to_dict(), allow_nan=False)
    # one layout against several: no verdict either
    assert compare({"l": [1.0, 1.1]}, {"x": [1.0], "y": [1.2]}, False).verdict == "n/a"
    # two layouts with one run each: a verdict is possible (K=2, df=1)
    two = compare({"a": [100.0], "b": [110.0]}, {"a": [120.0], "b": [132.1]}, False)
    assert two.verdict == "slower" and two.df == 1


def test_compare_needs_the_minimum_effect():
    """A consistent 0.1% shift is significant but below min_effect: no verdict of faster/slower."""
    eff = np.random.default_rng(3).normal(0.0, 0.01, 8)
    a = {f"s{i}": [100.0 * (1 + e)] for i, e in enumerate(eff)}
    b = {k: [v[0] * 1.001 * (1 + 1e-5 * i)] for i, (k, v) in enumerate(a.items())}
    c = compare(a, b, False)
    assert c.ci_low > 1.0  # the interval excludes 1 ...
    assert c.verdict == "no difference" and "minimum effect" in c.reason  # ... but 0.1% < 0.5%
    assert compare(a, b, False, min_effect=0.0005).verdict == "slower"


def test_compare_p_value_and_interval_agree():
    rng = np.random.default_rng(8)
    for i in range(200):
        k = int(rng.integers(2, 9))
        a = make_groups(rng, k, 2, 100.0, 0.01, 0.003, "s")
        b = make_groups(rng, k, 2, 100.0 * (1 + rng.normal(0, 0.01)), 0.01, 0.003, "s")
        c = compare(a, b, False, min_effect=0.0)
        assert (c.p_value < 0.05) == (c.ci_low > 1.0 or c.ci_high < 1.0)
        assert c.ci_low <= c.ratio <= c.ci_high


def test_adjust_holm_and_bh():
    p = [0.01, 0.04, 0.03, float("nan"), 0.005]
    holm = adjust(p, "holm")
    assert holm[:3] == pytest.approx([0.03, 0.06, 0.06]) and holm[4] == pytest.approx(0.02)
    assert math.isnan(holm[3])
    bh = adjust(p, "bh")
    assert bh[0] == pytest.approx(0.02) and bh[1] == pytest.approx(0.04) and bh[4] == pytest.approx(0.02)
    assert adjust(p, "none")[:3] == p[:3]
    with pytest.raises(ValueError):
        adjust(p, "bonf")


def test_adjust_comparisons_keeps_interval_and_p_in_agreement():
    rng = np.random.default_rng(2)
    comps = []
    for eff in (0.0, 0.01, 0.02, 0.004, 0.0):
        eff_l = rng.normal(0.0, 0.01, 6)
        a = make_groups(rng, 6, 2, 100.0, 0.0, 0.004, "s", effects=eff_l)
        b = make_groups(rng, 6, 2, 100.0 * (1 + eff), 0.0, 0.004, "s", effects=eff_l)
        comps.append(compare(a, b, False, min_effect=0.0))
    comps.append(None)
    adj = adjust_comparisons(comps, "holm")
    assert adj[-1] is None
    for raw, c in zip(comps[:-1], adj[:-1]):
        assert c.p_value >= raw.p_value and c.p_raw == raw.p_value and c.family == 5
        assert c.ci_low <= raw.ci_low and c.ci_high >= raw.ci_high  # wider
        assert (c.p_value < 0.05) == (c.ci_low > 1.0 or c.ci_high < 1.0)
        assert "holm-adjusted over 5" in c.describe()


def test_noise_bound_and_never_a_bare_zero():
    rng = np.random.default_rng(6)
    g = make_groups(rng, 8, 3, 100.0, 0.0, 0.005, "s")  # no layout effect at all
    ns = noise_split(g)
    assert ns.runs_separated and ns.layout_cv_upper > ns.layout_cv >= 0
    t = ns.noise_text()
    assert "0.00%" not in t.split("(")[0] and "upper bound" in t
    one = noise_split(make_groups(rng, 8, 1, 100.0, 0.01, 0.005, "s"))
    assert not one.runs_separated and "layout + run noise (runs not separated)" in one.noise_text()
    # the upper bound covers the truth in >= 93% of datasets (K=4, R=3)
    cover = 0
    for i in range(300):
        ns = noise_split(make_groups(rng, 4, 3, 100.0, 0.01, 0.01, "s"))
        cover += ns.layout_cv_upper >= 0.01
    assert cover / 300 >= 0.93


def test_compare_describe_multi_layout_and_determinism():
    rng = np.random.default_rng(21)
    a, b = _pair(rng, 0.03)
    c1 = compare(a, b, False)
    c2 = compare(a, b, False)
    assert c1.to_dict() == c2.to_dict()
    line = c1.describe()
    assert "layout noise " in line and "%" in line and "p=" in line and "upper bound" in line
    assert c1.method == "Welch t on per-layout means" and 0 < c1.wilcoxon_p < 1
