"""How numbers read everywhere (fmt): values, axes, percents, changes, effects, ratios, probabilities."""

from __future__ import annotations

import dataclasses
import math

from layoutbench import fmt


@dataclasses.dataclass
class _Cmp:
    ratio: float
    ci_low: float
    ci_high: float
    verdict: str = "no difference"


def test_numbers_percents_and_ratios_read_the_same_everywhere():
    assert [fmt.number(x) for x in (1234567.0, 123.456, 1.23456, 0.0123456, None, math.nan)] == [
        "1.235e+06", "123.5", "1.235", "0.01235", "n/a", "n/a"]
    assert [fmt.axis(x) for x in (2.5e9, 1.5e6, 12345.0, 999.0)] == ["2.5G", "1.5M", "12.35k", "999"]
    assert [fmt.pct(0.01234), fmt.pct(0.5, 0), fmt.pct(None), fmt.pct(math.inf)] == ["1.23%", "50%", "n/a", "n/a"]
    assert [fmt.change(1.0123), fmt.change(0.98), fmt.change(math.nan)] == ["+1.23%", "-2.00%", "n/a"]
    assert fmt.effect(_Cmp(1.05, 1.04, 1.06)) == "+5.00% ± 1.00%"
    assert fmt.ratio(_Cmp(1.05, 1.04, 1.06, "slower")) == "1.050 ± 0.010  slower"
    assert fmt.ratio(_Cmp(1.0, 0.99, 1.01)) == "1.000 ± 0.010  same"
    assert [fmt.prob(0.97312), fmt.prob(None)] == ["0.973", "n/a"]
