"""Two commits (or two layouts) compared: B against A on per-layout log means, an interval, a rank
test beside it, and a verdict only beyond the minimum effect."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import special as _spc

from .. import validate as _validate
from .base import Groups, as_groups, check_conf, layout_stats, ToDict
from .noise import NoiseSplit, noise_split_arrays, re_anova, noise_text

# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------

#: Smallest relative change that earns a verdict; ``compare(min_effect=...)``.  Set in one place for
#: every command: :data:`layoutbench.validate.DEFAULT_MIN_EFFECT`.
DEFAULT_MIN_EFFECT = _validate.DEFAULT_MIN_EFFECT


@dataclass(frozen=True)
class Comparison(ToDict):
    """Result of comparing commit B against commit A.

    The unit of replication is the layout.  Each layout's runs are averaged
    on the log scale (``m_l = mean(log runs)``); commits are compared through
    these per-layout log means:

    * paired (both sides measured on the same layout ids, e.g. the same
      seeds): ``d_l = m_l(B) - m_l(A)`` over the K common ids, a t interval
      with K-1 degrees of freedom, and a Wilcoxon signed-rank test of the
      ``d_l`` as a second opinion;
    * unpaired: Welch's t on the per-layout log means (Welch-Satterthwaite
      df), Mann-Whitney on them as the second opinion;
    * both sides a single layout with >= 2 runs each: Welch's t on the log
      runs -- a comparison of two *images*, which says nothing about other
      layouts (``method`` says so);
    * otherwise (one value on a side, or one layout against several): no
      verdict, ``verdict == "n/a"``.

    p-value and interval come from the same t statistic, so ``p < 1 -
    confidence`` exactly when the interval excludes 1.

    Fields:
        ratio: ``exp(mean d)`` (paired) or the ratio of the geometric means
            of the per-layout values (unpaired): B/A.
        sided: 0 for a two-sided interval; +1 when the test was one-sided towards a
            larger ratio (the interval is ``ci_low``…inf), -1 towards a smaller one
            (0…``ci_high``).
        ci_low, ci_high: interval of ``ratio`` at level ``confidence`` (after
            :func:`adjust_comparisons`: at the per-test level that matches the
            adjusted p-value).  nan when ``verdict == "n/a"``.
        confidence: the nominal level asked for.
        p_value: two-sided p of ``ratio == 1`` (adjusted for multiplicity
            after :func:`adjust_comparisons`; the raw one is ``p_raw``).
        verdict: ``faster``/``slower`` (B relative to A given
            ``higher_is_better``) when the interval excludes 1 *and*
            ``|log ratio| >= log(1 + min_effect)``; ``no difference``
            otherwise; ``n/a`` when there is too little data (``reason``).
        reason: why there is no verdict, or ``""``.
        min_effect: the minimum relative effect for a verdict.
        method: which test was used (see above).
        paired, n_pairs, dropped: paired design; number of pairs; layouts
            of either side left out because the other side lacks them.
        n_layouts_a, n_layouts_b, n_runs_a, n_runs_b: layouts and runs used.
        center_a, center_b: geometric mean of the per-layout values used.
        log_ratio, se, df: the t statistic's parts (``t = log_ratio/se``).
        wilcoxon_p: rank-test p-value (signed-rank paired, rank-sum
            unpaired); a second opinion, not used for the verdict.
        p_raw, adjusted, family: raw p-value; multiplicity method (``""``,
            ``holm``, ``bh``) and family size.
        layout_noise: pooled between-layout sd on the log scale (relative);
            with one run per layout it includes the run noise
            (``noise_separated`` False).  nan with < 2 layouts per side.
        layout_noise_upper: its one-sided 95% upper bound.
        explained_by_layout: probability that one random layout per side
            would show a difference at least this large from relinking
            alone: ``2 * (1 - Phi(|log ratio| / (sqrt(2) * layout_noise)))``.
        per_layout_ratios: paired design: ``exp(d_l)`` per common layout id.
        noise_a, noise_b: :class:`NoiseSplit` of each side (all layouts).
    """

    ratio: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float
    verdict: str
    higher_is_better: bool
    paired: bool
    n_layouts_a: int
    n_layouts_b: int
    n_runs_a: int
    n_runs_b: int
    center_a: float
    center_b: float
    layout_noise: float
    explained_by_layout: float
    per_layout_ratios: dict[str, float]
    df: float
    noise_a: NoiseSplit
    noise_b: NoiseSplit
    min_effect: float = DEFAULT_MIN_EFFECT
    method: str = ""
    reason: str = ""
    n_pairs: int = 0
    dropped: int = 0
    log_ratio: float = 0.0
    se: float = math.nan
    wilcoxon_p: float = math.nan
    p_raw: float = math.nan
    adjusted: str = ""
    family: int = 1
    layout_noise_upper: float = math.nan
    noise_separated: bool = False
    sided: int = 0

    @property
    def significant(self) -> bool:
        """True when a difference is claimed (interval excludes 1 and the effect is large enough)."""
        return self.verdict in ("faster", "slower")

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    def noise_text(self) -> str:
        return noise_text(self.layout_noise, self.layout_noise_upper, self.noise_separated)

    @property
    def shown(self) -> int:
        """The direction the interval shows (+1: it lies above 1, -1: below 1, 0: it holds 1 or is
        not known) -- whether or not the change is also shown to be the minimum effect."""
        lo, hi = self.ci_low, self.ci_high
        if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float))) or math.isnan(lo) or math.isnan(hi):
            return 0
        return 1 if lo > 1.0 else -1 if hi < 1.0 else 0

    def direction_word(self, up: bool) -> str:
        """"slower" or "faster" for a ratio B/A above (``up``) or below 1, given the metric's direction."""
        return "slower" if up != bool(self.higher_is_better) else "faster"

    def claim(self) -> str:
        """What the comparison says in words: its verdict, or, where the interval excludes 1 but the
        change is not shown to be the minimum effect, exactly that (never "no difference" then)."""
        if self.significant or self.verdict == "n/a" or not self.shown:
            return self.verdict
        return (f"shown {self.direction_word(self.shown > 0)} but not shown to exceed the "
                f"{100 * self.min_effect:.2f}% minimum effect")

    def test_text(self) -> str:
        """The test the interval and p belong to: paired or pooled, one- or two-sided, its layouts."""
        sided = "one-sided" if self.sided else "two-sided"
        if self.method.startswith("pooled"):
            return (f"{sided} group-sequential test, pooled over {self.n_layouts_a} vs {self.n_layouts_b} layouts")
        if self.method.startswith("paired group"):
            return f"{sided} group-sequential test, paired over {self.n_pairs} layouts"
        if self.paired:
            return f"{sided} t, paired over {self.n_pairs} layouts" + (
                f", {self.dropped} unpaired dropped" if self.dropped else "")
        if self.method.startswith("runs"):
            return f"{sided} Welch t on the runs of one layout per side"
        return f"{sided} Welch t over {self.n_layouts_a} vs {self.n_layouts_b} layouts"

    def describe(self) -> str:
        """One line, e.g. ``B is 1.031 ± 0.008× slower than A (95% CI 1.023…1.039, p=0.001,
        two-sided t, paired over 8 layouts); layout noise 2.10% (95% upper bound 3.40%)``.

        A claimed difference is oriented to be >= 1 (the slowdown or speedup factor, in either
        direction of the metric); otherwise the raw ratio B/A is shown.  A one-sided interval's
        open end is printed as such (0 or ∞), never divided by."""
        conf = f"{self.confidence * 100:g}%"
        if self.verdict == "n/a":
            return f"B vs A: n/a ({self.reason}); B/A = {self.ratio:.3f}; {self.noise_text()}"
        if self.significant:
            up = self.ratio >= 1.0
            f, lo, hi = (self.ratio, self.ci_low, self.ci_high) if up else \
                (_inv(self.ratio), _inv(self.ci_high), _inv(self.ci_low))
            if self.sided:  # a one-sided bound: how much at least
                head = f"B is {f:.3f}× {self.verdict} than A ("
                mid = f"{conf} one-sided bound: at least {lo:.3f}×"
            else:
                head = f"B is {f:.3f} ± {(hi - lo) / 2.0:.3f}× {self.verdict} than A ("
                mid = f"{conf} CI {lo:.3f}…{hi:.3f}"
        else:
            f = self.ratio
            if self.shown:
                head = (f"B is shown {self.direction_word(self.shown > 0)} than A but not shown to exceed the "
                        f"{100 * self.min_effect:.2f}% minimum effect (B/A = {f:.3f}")
            else:
                head = (f"B is not different from A{' beyond the minimum effect' if self.reason else ''} "
                        f"(B/A = {f:.3f}" + ("" if self.sided else f" ± {(self.ci_high - self.ci_low) / 2.0:.3f}"))
            lo, hi = (self.ci_low, math.inf) if self.sided > 0 else (0.0, self.ci_high) if self.sided < 0 else \
                (self.ci_low, self.ci_high)
            mid = f", {conf} {'one-sided ' if self.sided else ''}CI {ratio_interval(lo, hi, 3)}"
        tail = f", p={self.p_value:.3g}"
        if self.adjusted:
            tail += f" {self.adjusted}-adjusted over {self.family}"
        tail += f", {self.test_text()}"
        reason = self.reason
        if self.shown and not self.significant and "minimum effect" in reason:  # the head says it already
            reason = reason.split(" minimum effect", 1)[-1].strip().removeprefix("(").removesuffix(")")
        if reason:
            tail += f"; {reason}"
        return f"{head}{mid}{tail}); {self.noise_text()}"

    def at_alpha(self, alpha: float) -> Comparison:
        """The same comparison with its interval and verdict at test level ``alpha``
        (``confidence`` becomes ``1 - alpha``)."""
        if self.verdict == "n/a":
            return self
        lo, hi = _t_interval(self.log_ratio, self.se, self.df, alpha)
        verdict, reason = effect_verdict(lo, hi, self.log_ratio, self.min_effect, self.higher_is_better)
        return dataclasses.replace(self, ci_low=math.exp(lo), ci_high=math.exp(hi), verdict=verdict,
                                   reason=reason, confidence=1.0 - alpha)


def _inv(x: float) -> float:
    """1/x for a ratio or an interval's end: an open end (0 or ∞) turns into the other."""
    return math.inf if x == 0 else 0.0 if math.isinf(x) else 1.0 / x


def ratio_interval(lo, hi, digits: int = 4) -> str:
    """A ratio's interval as printed: ``0.9912…1.0131``; a one-sided one's open end (infinite, or
    null in JSON read back from a store) as ``0`` below or ``∞`` above."""
    def end(x, upper: bool) -> str:
        return f"{x:.{digits}f}" if isinstance(x, (int, float)) and math.isfinite(x) and x > 0 else ("∞" if upper else "0")
    return f"{end(lo, False)}…{end(hi, True)}"


def _t_interval(est: float, se: float, df: float, alpha: float) -> tuple[float, float]:
    if not se > 0:
        return est, est
    q = float(_spc.stdtrit(df, 1.0 - alpha / 2.0)) if math.isfinite(df) else float(_spc.ndtri(1.0 - alpha / 2.0))
    return est - q * se, est + q * se


def _t_p(est: float, se: float, df: float) -> float:
    if not se > 0:
        return 1.0 if est == 0 else 0.0
    return float(min(1.0, 2.0 * _spc.stdtr(df, -abs(est) / se)))


def effect_verdict(lo: float, hi: float, est: float, min_effect: float, higher_is_better: bool) -> tuple[str, str]:
    """(verdict, reason) from a log-scale interval and estimate."""
    if lo <= 0.0 <= hi:
        return "no difference", ""
    if abs(est) < math.log1p(min_effect):
        return "no difference", f"smaller than the {100 * min_effect:g}% minimum effect"
    slower = (est > 0) != bool(higher_is_better)
    return ("slower" if slower else "faster"), ""


def _ranktest(x: np.ndarray, y: np.ndarray | None = None) -> float:
    """Wilcoxon signed-rank of ``x`` (paired differences) or Mann-Whitney of x vs y."""
    from scipy import stats as _sps  # here: scipy.stats costs a second at every command's start

    try:
        if y is None:
            if not np.any(x != 0):
                return 1.0
            p = float(_sps.wilcoxon(x).pvalue)
        else:
            p = float(_sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    except ValueError:
        return 1.0
    return p if math.isfinite(p) else 1.0


def _log_groups(g: Mapping[str, np.ndarray], what: str) -> dict[str, np.ndarray]:
    out = {}
    for k, v in g.items():
        if not np.all(v > 0):
            raise ValueError(f"{what}[{k!r}]: compare needs positive values (it works on log ratios)")
        out[k] = np.log(v)
    return out


def compare(a_groups: Groups, b_groups: Groups, higher_is_better: bool,
            confidence: float = 0.95, paired: bool | None = None,
            min_effect: float = DEFAULT_MIN_EFFECT, rank_test: bool = True) -> Comparison:
    """Compare commit B (``b_groups``) against commit A (``a_groups``); see :class:`Comparison`.

    ``paired=None`` pairs on the common layout ids when there are at least two
    (the layouts of either side without a partner are dropped and counted in
    ``dropped``); ``paired=True`` pairs on the common ids (an error when there
    is none); ``paired=False`` never pairs.  The interval is an exact t interval.
    ``rank_test=False`` skips the rank test (``wilcoxon_p`` nan): it is never used for the
    verdict, and the bisection engine, which compares many times, does not show it.
    """
    check_conf(confidence)
    if not min_effect >= 0:
        raise ValueError("min_effect must be >= 0")
    ga = as_groups(a_groups, "a_groups")
    gb = as_groups(b_groups, "b_groups")
    la, lb = _log_groups(ga, "a_groups"), _log_groups(gb, "b_groups")
    is_paired, ua, ub, common, dropped = _sides(la, lb, paired)
    ma = layout_stats(list(ua.values()))[1]
    mb = layout_stats(list(ub.values()))[1]
    ka, kb = ma.size, mb.size
    est, se, df, wp, method, reason = _estimate(ua, ub, ma, mb, is_paired, rank_test)
    per_layout = {i: float(math.exp(x)) for i, x in zip(common, mb - ma)} if is_paired and ka >= 2 else {}
    if method != "none":
        lo, hi = _t_interval(est, se, df, 1.0 - confidence)
        p = _t_p(est, se, df)
        verdict, reason = effect_verdict(lo, hi, est, min_effect, higher_is_better)
        ci_low, ci_high = math.exp(lo), math.exp(hi)
    else:
        p = ci_low = ci_high = math.nan
        verdict = "n/a"
    noise, upper, separated, _ = re_anova([list(la.values()), list(lb.values())])
    if math.isfinite(noise) and noise > 0:
        explained = float(2.0 * _spc.ndtr(-abs(est) / (math.sqrt(2.0) * noise)))
    elif noise == 0:
        explained = 1.0 if est == 0 else 0.0
    else:
        explained = math.nan
    return Comparison(
        ratio=float(math.exp(est)),
        ci_low=float(ci_low),
        ci_high=float(ci_high),
        confidence=confidence,
        p_value=float(p),
        verdict=verdict,
        higher_is_better=bool(higher_is_better),
        paired=bool(is_paired and ka >= 2),
        n_layouts_a=ka,
        n_layouts_b=kb,
        n_runs_a=int(sum(v.size for v in ua.values())),
        n_runs_b=int(sum(v.size for v in ub.values())),
        center_a=float(math.exp(np.mean(ma))),
        center_b=float(math.exp(np.mean(mb))),
        layout_noise=float(noise),
        explained_by_layout=explained,
        per_layout_ratios=per_layout,
        df=float(df),
        noise_a=noise_split_arrays(ga),
        noise_b=noise_split_arrays(gb),
        min_effect=float(min_effect),
        method=method,
        reason=reason,
        n_pairs=ka if is_paired else 0,
        dropped=dropped,
        log_ratio=est,
        se=float(se),
        wilcoxon_p=float(wp),
        p_raw=float(p),
        layout_noise_upper=float(upper),
        noise_separated=bool(separated),
    )



def _sides(la: dict, lb: dict, paired: bool | None) -> tuple[bool, dict, dict, list, int]:
    """(paired?, A's layouts, B's layouts, the common ids, layouts dropped): ``paired`` None pairs on
    the common ids when there are at least two, True on the common ids (an error when none), False
    never."""
    common = [k for k in la if k in lb]
    if paired is None:
        is_paired = len(common) >= 2
    elif paired:
        if not common:
            raise ValueError("paired=True but the sides share no layout ids")
        is_paired = True
    else:
        is_paired = False
    if not is_paired:
        return False, la, lb, common, 0
    dropped = (len(la) - len(common)) + (len(lb) - len(common))
    return True, {i: la[i] for i in common}, {i: lb[i] for i in common}, common, dropped


def _estimate(ua: dict, ub: dict, ma: np.ndarray, mb: np.ndarray, is_paired: bool,
              rank_test: bool) -> tuple[float, float, float, float, str, str]:
    """(log ratio, se, df, rank-test p, method, why none) over the per-layout log means ``ma``, ``mb``:
    paired t, Welch t on the layouts, or with one layout a side Welch t on its runs; else none."""
    ka, kb = ma.size, mb.size
    nan = math.nan
    if is_paired and ka >= 2:
        d = mb - ma
        wp = _ranktest(d) if rank_test else nan
        return (float(np.mean(d)), float(np.std(d, ddof=1) / math.sqrt(ka)), float(ka - 1), wp,
                f"paired t over {ka} layouts", "")
    if not is_paired and ka >= 2 and kb >= 2:
        se, df = _welch(ma, mb)
        wp = _ranktest(ma, mb) if rank_test else nan
        return float(np.mean(mb) - np.mean(ma)), se, df, wp, "Welch t on per-layout means", ""
    # one layout on a side: compare the runs of the two images, or give up
    ra = np.concatenate(list(ua.values()))
    rb = np.concatenate(list(ub.values()))
    est = float(np.mean(rb) - np.mean(ra))
    if ka == 1 and kb == 1 and ra.size >= 2 and rb.size >= 2:
        se, df = _welch(ra, rb)
        wp = _ranktest(ra, rb) if rank_test else nan
        return est, se, df, wp, "runs: Welch t on the runs of one layout per side", ""
    reason = ("1 sample" if min(ra.size, rb.size) < 2
              else "1 layout on one side: need 2 layouts per side, or one layout with 2 runs on both")
    return est, nan, nan, nan, "none", reason


def _welch(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(se, Welch-Satterthwaite df) of mean(y) - mean(x)."""
    vx, vy = float(np.var(x, ddof=1)) / x.size, float(np.var(y, ddof=1)) / y.size
    den = vx * vx / (x.size - 1) + vy * vy / (y.size - 1)
    return math.sqrt(vx + vy), ((vx + vy) ** 2 / den if den > 0 else float(x.size + y.size - 2))
