"""`bisect judge`: one probe judged against GOOD and BAD, as a `git bisect run` script (its exit code)."""

from __future__ import annotations

import contextlib
from dataclasses import asdict

from ..decide import Skip
from ..errors import LayoutbenchError
from ..profile import Profile
from ..store import Store
from .prober import Judgement, Prober, endpoints, judge_probe
from ..verdict.record import Effect
from ..verdict.text import interval
from .settings import Settings, state_key
from .state import Bisection, normalize

# -- judge: one probe, as a `git bisect run` script -----------------------------------------------

class Abort(LayoutbenchError):
    """Stop a `git bisect run` (exit codes of 128 and above abort it instead of marking bad)."""

    exit_code = 128


JUDGE_EXIT = {"good": 0, "bad": 1, "between": 1, "uncertain": 125, "skip": 125}  # between: a change on both sides


def judge(store: Store, profile: Profile, settings: Settings, rev: str | None, good: str | None, bad: str | None,
          say=lambda m: None) -> tuple[int, Judgement, dict]:
    """Measure ``rev`` (None: the working tree) over the K layouts against the GOOD and BAD
    references and return (exit code, judgement, details): 0 like GOOD, 1 like BAD, 125 when
    it cannot be built or measured, or stays uncertain within the budget."""
    with contextlib.ExitStack() as stack:  # closes the prober's target
        return _judge(stack, store, profile, settings, (rev, good, bad), say)


def _judge(stack: contextlib.ExitStack, store: Store, profile: Profile, settings: Settings, revs: tuple, say
           ) -> tuple[int, Judgement, dict]:
    rev, good, bad = revs
    if len(settings.targets) > 1:  # one checkout, one verdict: a probe is judged on one machine
        raise Abort(f"judge measures on one machine; give one --target, not {settings.target!r}")
    settings = normalize(profile, settings)
    if good is None or bad is None:
        b = Bisection.load(store, state_key(settings.kernel, settings.repo, settings.subdir))
        if b is None or not b.good or not b.bad:
            raise Abort("judge needs --good and --bad, or a bisection of this kernel and repository in progress")
        good, bad = good or b.good, bad or b.bad
    p = stack.enter_context(Prober(profile, settings, store, say))
    good_co, bad_co = p.checkout(good), p.checkout(bad)
    try:
        ends = endpoints(p, good_co, bad_co)
    except Skip as e:
        raise Abort(f"a reference cannot be measured: {e}") from None
    if ends.status != "differs":
        e = ends.comparison
        said = "do not differ beyond layout noise" if ends.status == "noise" else "show no change"
        raise Abort(f"GOOD and BAD {said} (BAD/GOOD {e.ratio:.4f}, CI {interval(e.ci_low, e.ci_high)}); "
                    "there is nothing to bisect")
    probe = p.checkout(rev)
    j = judge_probe(p, probe, good_co, bad_co)
    details = {"commit": probe.commit, "verdict": j.verdict, "judgement": asdict(j), "endpoints": Effect.of(ends.comparison).to_dict(),
               "cost": p.cost("layouts"), "exit": JUDGE_EXIT[j.verdict]}
    return JUDGE_EXIT[j.verdict], j, details
