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


def test_the_layout_noise_bound_covers_run_noise_dominated_cases_and_is_never_an_unsupported_zero():
    """24% run noise, a layout sd of 0.5-10% of it: the 95% upper bound of the layout sd covers the
    truth in >= 95% of datasets in every case, and is above 0 whenever the layout means differ (the
    Graybill-Wang bound alone is 0 in some of these datasets, below every true sd)."""
    rng = np.random.default_rng(33)
    zero_gw = 0
    for k, r in ((4, 3), (4, 2), (8, 2), (3, 5)):
        for frac in (0.005, 0.02, 0.05, 0.1):
            sd_l, n, cover = 0.24 * frac, 1000, 0
            for _ in range(n):
                ns = noise_split(make_groups(rng, k, r, 1000.0, sd_l, 0.24, "s"))
                cover += ns.layout_cv_upper >= sd_l
                assert ns.layout_cv_upper > 0, ns
                zero_gw += ns.layout_cv == 0
            assert cover / n >= 0.95, (k, r, frac, cover / n)
    assert zero_gw > 0  # the cases that printed "< 0.00% (95% upper bound; estimate 0)" were drawn


def test_compare_describe_multi_layout_and_determinism():
    rng = np.random.default_rng(21)
    a, b = _pair(rng, 0.03)
    c1 = compare(a, b, False)
    c2 = compare(a, b, False)
    assert c1.to_dict() == c2.to_dict()
    line = c1.describe()
    assert "layout noise " in line and "%" in line and "p=" in line and "upper bound" in line
    assert c1.method == "Welch t on per-layout means" and 0 < c1.wilcoxon_p < 1


# --------------------------------------------------------------------------
# exact expectations: each statistic against an independent computation (scipy, by hand)
# --------------------------------------------------------------------------

from scipy import stats as sps  # noqa: E402

from layoutbench.stats import noise_text  # noqa: E402

# unequal run counts, fixed values: every number below is checked against a textbook formula
A_UNEQ = {"s1": [100.0, 101.5, 99.0], "s2": [103.0, 104.0], "s3": [98.0, 97.5, 99.5, 98.5], "s4": [101.0, 100.0, 102.0]}


def _anova(groups):
    """The one-way random-effects ANOVA of NoiseSplit's docstring, written out."""
    arrays = [np.asarray(v, float) for v in groups.values()]
    k, ns = len(arrays), np.array([a.size for a in arrays], float)
    N = ns.sum()
    means = np.array([a.mean() for a in arrays])
    gm = (ns * means).sum() / N
    msb = (ns * (means - gm) ** 2).sum() / (k - 1)
    msw = sum(((a - a.mean()) ** 2).sum() for a in arrays) / (N - k)
    n0 = (N - (ns ** 2).sum() / N) / (k - 1)
    return msb, msw, n0, k - 1, N - k


def test_noise_split_is_the_random_effects_anova_written_out():
    s = noise_split(A_UNEQ)
    msb, msw, n0, dfb, dfw = _anova(A_UNEQ)
    meds = [100.0, 103.5, 98.25, 101.0]
    assert (s.k, s.n) == (4, 12) and s.medians == dict(zip(A_UNEQ, meds))
    assert s.layout_sd == pytest.approx(math.sqrt((msb - msw) / n0), rel=1e-12)
    assert s.run_sd == pytest.approx(math.sqrt(msw), rel=1e-12) and s.runs_separated
    gmed = float(np.median(meds))
    assert s.grand_median == gmed and s.center == pytest.approx(np.mean(meds))
    assert s.layout_cv == pytest.approx(s.layout_sd / gmed) and s.run_cv == pytest.approx(s.run_sd / gmed)
    vb = (msb - msw) / n0
    assert s.layout_share == pytest.approx(vb / (vb + msw))
    assert s.median_spread_sd == pytest.approx(np.std(meds, ddof=1))
    assert (s.median_min, s.median_max) == (98.25, 103.5)
    assert s.median_range_rel == pytest.approx((103.5 - 98.25) / gmed)
    # the 95% upper bound of the layout sd: Graybill-Wang's modified large-sample bound
    h1 = dfb / sps.chi2.ppf(0.05, dfb) - 1
    g2 = 1 - dfw / sps.chi2.ppf(0.95, dfw)
    upper = math.sqrt(((msb - msw) + math.sqrt((h1 * msb) ** 2 + (g2 * msw) ** 2)) / n0)
    assert s.layout_cv_upper == pytest.approx(upper / gmed, rel=1e-9)


def test_noise_split_with_one_run_per_layout_and_with_no_layout_effect():
    one = {"a": [10.0], "b": [12.0], "c": [11.0], "d": [15.0]}
    s = noise_split(one)
    v = np.array([10.0, 12.0, 11.0, 15.0])
    assert s.layout_sd == pytest.approx(np.std(v, ddof=1)) and math.isnan(s.run_sd) and not s.runs_separated
    assert math.isnan(s.layout_share)
    # runs not separated: the chi-square bound sqrt(df * MSB / chi2_{0.05, df})
    assert s.layout_cv_upper == pytest.approx(math.sqrt(3 * np.var(v, ddof=1) / sps.chi2.ppf(0.05, 3)) / 11.5)
    # the layouts' means agree exactly: no layout noise, all of it run noise
    flat = {"a": [9.0, 11.0], "b": [10.5, 9.5], "c": [10.0, 10.0]}
    s = noise_split(flat)
    assert s.layout_sd == 0.0 and s.layout_share == 0.0 and s.run_sd == pytest.approx(math.sqrt(2.5 / 3))
    # one layout: nothing between layouts to estimate
    s = noise_split({"a": [1.0, 2.0, 3.0]})
    assert math.isnan(s.layout_sd) and math.isnan(s.layout_cv_upper) and s.run_sd == pytest.approx(1.0)


def test_noise_text_says_what_was_separated():
    assert noise_text(0.0042, 0.0071, True) == "layout noise 0.42% (95% upper bound 0.71%)"
    assert noise_text(0.00001, 0.0071, True) == "layout noise < 0.71% (95% upper bound; estimate 0)"
    assert noise_text(0.02, math.inf, False) == "layout + run noise (runs not separated) 2.00% (95% upper bound inf)"
    assert noise_text(math.nan, math.nan, True) == "layout noise n/a (fewer than 2 layouts)"


def _logmeans(groups):
    return np.array([np.mean(np.log(v)) for v in groups.values()])


def test_unpaired_compare_is_welch_on_the_layouts_log_means():
    a = {"a1": [100.0, 101.0], "a2": [103.0, 102.0], "a3": [99.0, 98.0]}
    b = {"b1": [107.0, 108.0], "b2": [111.0, 110.5], "b3": [104.0, 106.0], "b4": [109.0, 107.0]}
    c = compare(a, b, higher_is_better=False, rank_test=False)
    ma, mb = _logmeans(a), _logmeans(b)
    ref = sps.ttest_ind(mb, ma, equal_var=False)
    va, vb = ma.var(ddof=1) / 3, mb.var(ddof=1) / 4
    assert c.method == "Welch t on per-layout means" and not c.paired and c.dropped == 0
    assert c.log_ratio == pytest.approx(mb.mean() - ma.mean()) and c.ratio == pytest.approx(math.exp(c.log_ratio))
    assert c.se == pytest.approx(math.sqrt(va + vb))
    assert c.df == pytest.approx((va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 3))
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    lo, hi = ref.confidence_interval(0.95)
    assert (c.ci_low, c.ci_high) == (pytest.approx(math.exp(lo)), pytest.approx(math.exp(hi)))
    assert (c.n_layouts_a, c.n_layouts_b, c.n_runs_a, c.n_runs_b) == (3, 4, 6, 8)
    assert c.center_a == pytest.approx(math.exp(ma.mean())) and c.center_b == pytest.approx(math.exp(mb.mean()))
    assert c.verdict == "slower" and math.isnan(c.wilcoxon_p)
    assert compare(a, b, higher_is_better=True).verdict == "faster"
    assert compare(a, b, higher_is_better=False).wilcoxon_p == pytest.approx(
        sps.mannwhitneyu(ma, mb, alternative="two-sided").pvalue)


def test_paired_compare_is_a_paired_t_on_the_common_layouts():
    a = {"1": [100.0, 100.4], "2": [104.0, 104.2], "3": [97.0, 97.4], "4": [101.0, 101.2], "9": [50.0, 51.0]}
    b = {"1": [101.1, 101.3], "2": [105.0, 105.4], "3": [98.3, 98.2], "4": [102.2, 102.0], "7": [1.0, 1.1],
         "8": [2.0, 2.0]}
    c = compare(a, b, higher_is_better=False)
    common = ["1", "2", "3", "4"]
    d = _logmeans({k: b[k] for k in common}) - _logmeans({k: a[k] for k in common})
    ref = sps.ttest_rel(_logmeans({k: b[k] for k in common}), _logmeans({k: a[k] for k in common}))
    assert c.paired and c.method == "paired t over 4 layouts" and c.n_pairs == 4 and c.dropped == 3
    assert c.df == 3 and c.log_ratio == pytest.approx(d.mean()) and c.p_value == pytest.approx(ref.pvalue)
    assert c.per_layout_ratios == {k: pytest.approx(math.exp(x)) for k, x in zip(common, d)}
    assert (c.n_runs_a, c.n_runs_b) == (8, 8)
    assert c.wilcoxon_p == pytest.approx(sps.wilcoxon(d).pvalue)
    # paired=False on the same data: Welch over all the layouts of each side
    u = compare(a, b, higher_is_better=False, paired=False)
    assert not u.paired and u.n_pairs == 0 and u.dropped == 0 and (u.n_layouts_a, u.n_layouts_b) == (5, 6)


def test_one_layout_per_side_compares_the_runs():
    a, b = {"x": [10.0, 10.2, 9.9, 10.1]}, {"y": [10.5, 10.6, 10.4]}
    c = compare(a, b, higher_is_better=False)
    ref = sps.ttest_ind(np.log(b["y"]), np.log(a["x"]), equal_var=False)
    assert c.method == "runs: Welch t on the runs of one layout per side"
    assert c.p_value == pytest.approx(ref.pvalue) and c.df == pytest.approx(ref.df)
    assert c.verdict == "slower" and (c.n_layouts_a, c.n_layouts_b) == (1, 1)
    two = compare({"x": [10.0, 10.1]}, {"y": [11.0, 11.3]}, higher_is_better=False)  # two runs are enough
    assert two.method == c.method and two.df == pytest.approx(
        sps.ttest_ind(np.log([11.0, 11.3]), np.log([10.0, 10.1]), equal_var=False).df)
    # one run a side: no verdict, and why
    n = compare({"x": [10.0]}, {"y": [11.0]}, higher_is_better=False)
    assert (n.verdict, n.reason, n.method) == ("n/a", "1 sample", "none") and math.isnan(n.p_value)
    n = compare({"x": [10.0, 10.1]}, {"y": [11.0, 11.2], "z": [11.0, 11.1]}, higher_is_better=False, paired=False)
    assert n.verdict == "n/a" and n.reason.startswith("1 layout on one side")
    n = compare({"y": [11.0, 11.2], "z": [11.0, 11.1]}, {"x": [10.0, 10.1]}, higher_is_better=False, paired=False)
    assert n.verdict == "n/a" and n.reason.startswith("1 layout on one side") and n.method == "none"


def test_an_exact_ratio_in_every_layout_has_no_spread_to_doubt():
    """Every layout 10% slower to the last digit: se 0, p 0, the interval is the ratio itself; the
    same values on both sides: p 1, no difference.  Constant means unpaired: df = ka + kb - 2."""
    a = {"1": [100.0, 100.0], "2": [120.0, 120.0], "3": [90.0, 90.0]}
    b = {k: [1.1 * x for x in v] for k, v in a.items()}
    c = compare(a, b, higher_is_better=False)
    assert c.se == 0 and c.p_value == 0.0 and c.verdict == "slower"
    assert c.ci_low == pytest.approx(1.1) and c.ci_high == pytest.approx(1.1)
    same = compare(a, a, higher_is_better=False)
    assert same.p_value == 1.0 and same.verdict == "no difference" and same.explained_by_layout == pytest.approx(1.0)
    flat_a = {"1": [100.0, 101.0], "2": [101.0, 100.0]}
    flat_b = {"3": [110.0, 111.0], "4": [111.0, 110.0]}
    w = compare(flat_a, flat_b, higher_is_better=False)
    assert w.se == 0 and w.df == 2.0 and w.p_value == 0.0


def test_the_minimum_effect_and_the_direction_decide_the_verdict():
    a = {"1": [100.0, 100.0], "2": [100.2, 100.2], "3": [99.8, 99.8]}
    b = {k: [1.004 * x * (1 + 1e-5 * i) for x in v] for i, (k, v) in enumerate(a.items())}  # 0.4% slower
    assert compare(a, b, False).verdict == "no difference"
    assert compare(a, b, False).reason == "smaller than the 0.5% minimum effect"
    assert compare(a, b, False, min_effect=0.003).verdict == "slower"
    assert compare(a, b, True, min_effect=0.003).verdict == "faster"
    assert compare(b, a, False, min_effect=0.003).verdict == "faster"
    with pytest.raises(ValueError, match="min_effect"):
        compare(a, b, False, min_effect=-0.1)
    with pytest.raises(ValueError, match="positive values"):
        compare(a, {"1": [0.0, 1.0]}, False)


def test_holm_and_bh_by_hand():
    p = [0.01, 0.04, math.nan, 0.03, 0.5]
    # holm: sorted 0.01, 0.03, 0.04, 0.5 times 4, 3, 2, 1, running max
    assert adjust(p, "holm")[:2] + adjust(p, "holm")[3:] == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert math.isnan(adjust(p, "holm")[2])
    # bh: p * m / rank, running min from the top
    assert adjust([0.01, 0.04, 0.03, 0.5], "bh") == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    assert adjust([0.6, 0.9], "holm") == [1.0, 1.0]
    assert adjust(p, "none")[:2] == [0.01, 0.04]
    with pytest.raises(ValueError, match="holm, bh, none"):
        adjust(p, "bonferroni")


def test_to_dict_is_json_ready():
    c = compare({"x": [10.0]}, {"y": [11.0]}, higher_is_better=False)
    d = c.to_dict()
    json.dumps(d, allow_nan=False)  # nan became None
    assert d["p_value"] is None and d["paired"] is False and isinstance(d["noise_a"], dict)
    s = summarize([1.0, 2.0, 30.0, 2.5, 1.5, 2.2], n_boot=NB).to_dict()
    assert s["outliers"] == [2] and s["n"] == 6 and isinstance(s["median"], float)
    assert noise_split(A_UNEQ).to_dict()["medians"] == {"s1": 100.0, "s2": 103.5, "s3": 98.25, "s4": 101.0}


def test_summarize_gives_an_interval_for_small_spreads():
    s = summarize([1.00, 1.02, 1.01, 1.05, 0.99, 1.03, 1.04, 1.00], n_boot=NB)
    assert s.ci_low < s.median < s.ci_high and s.ci_low >= 0.99 and s.ci_high <= 1.05
    assert s.stdev == pytest.approx(np.std([1.00, 1.02, 1.01, 1.05, 0.99, 1.03, 1.04, 1.00], ddof=1))
    one = summarize([3.0])
    assert (one.ci_low, one.ci_high, one.stdev, one.outliers) == (3.0, 3.0, 0.0, [])


def test_numpy_values_become_json_values():
    from layoutbench.stats.base import _jsonable

    d = _jsonable({1: np.bool_(True), "t": (np.float64(math.nan), np.int64(3), np.float32(0.5)), "s": "x"})
    assert d == {"1": True, "t": [None, 3, 0.5], "s": "x"}
    assert type(d["1"]) is bool and type(d["t"][1]) is int
    json.dumps(d, allow_nan=False)


def test_an_interval_that_reaches_no_change_is_no_difference_whatever_the_estimate():
    """The verdict's first rule is the interval's: one whose bound is exactly no change (log 0)
    shows no change, with no reason needed -- even with an estimate beyond the minimum effect, and a
    zero-width interval at no change (identical values) is not 'smaller than the minimum effect'."""
    from layoutbench.stats.comparison import effect_verdict

    assert effect_verdict(0.0, 0.1, 0.05, 0.01, False) == ("no difference", "")
    assert effect_verdict(-0.1, 0.0, -0.05, 0.01, False) == ("no difference", "")
    assert effect_verdict(0.0, 0.0, 0.0, 0.01, False) == ("no difference", "")
    assert effect_verdict(1e-9, 0.1, 0.05, 0.01, False) == ("slower", "")
    assert effect_verdict(1e-9, 0.1, 0.005, 0.01, True) == ("no difference", "smaller than the 1% minimum effect")


def test_the_pooled_layout_noise_leaves_out_a_side_of_one_layout():
    """A side with a single layout says nothing of the spread between layouts, and its runs are
    not pooled into the run noise either: the pooled estimate, bound and degrees of freedom are
    those of the other side alone."""
    from layoutbench.stats.noise import re_anova

    a = [np.array([1.00, 1.02]), np.array([1.10, 1.08]), np.array([0.95, 0.97])]
    lone = [np.array([1.0, 1.5, 0.5])]  # one layout, runs far apart
    assert re_anova([a, lone]) == re_anova([a])
    assert re_anova([lone])[3] == 0 and math.isnan(re_anova([lone])[0])


def test_a_comparison_showing_no_difference_says_its_ratio_and_interval():
    """Two-sided: the ratio B/A with half its interval's width and the interval; one-sided: the
    ratio and the one bound, no ±.  A single comparison is a family of one."""
    import dataclasses

    from layoutbench.stats import compare

    a = {f"s{i}": [100.0 + i, 100.5 + i] for i in range(6)}
    b = {f"s{i}": [100.2 + i + 0.3 * (-1) ** i, 100.4 + i] for i in range(6)}
    c = compare(a, b, False)
    assert c.verdict == "no difference" and c.family == 1 and not c.sided
    two = f"B is not different from A (B/A = {c.ratio:.3f} ± {(c.ci_high - c.ci_low) / 2:.3f}, 95% CI " \
          f"{c.ci_low:.3f}…{c.ci_high:.3f}, p="
    assert c.describe().startswith(two), c.describe()
    up = dataclasses.replace(c, sided=1)
    assert up.describe().startswith(f"B is not different from A (B/A = {c.ratio:.3f}, 95% one-sided CI "
                                    f"{c.ci_low:.3f}…∞, p="), up.describe()


def test_layouts_closer_than_their_runs_have_no_layout_noise_and_a_deterministic_step_is_no_relink():
    """The pooled between-layout sd is clamped at 0 when the layouts' means differ less than their
    runs predict (never the root of a negative); with no layout noise a ratio of exactly 1 is what
    a relink gives (probability 1) and any other ratio is not (0)."""
    from layoutbench.stats import compare

    close = {"s1": [100.0, 110.0], "s2": [105.0, 105.0], "s3": [100.0, 110.0]}
    c = compare(close, dict(close), False, paired=True)
    assert c.layout_noise == 0.0 and c.explained_by_layout == 1.0
    same = {f"s{i}": [100.0] for i in range(4)}
    step = compare(same, {k: [102.0] for k in same}, False, paired=True)
    assert step.layout_noise == 0.0 and step.explained_by_layout == 0.0 and step.verdict == "slower"
