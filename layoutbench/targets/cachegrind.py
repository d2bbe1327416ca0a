"""``cachegrind``: the hosted build under valgrind's cache simulator.

The instruction count does not depend on the layout, the misses of a small simulated
I1 cache do, and both are identical from run to run: a layout-sensitive metric with
no run noise.  It reports, as metrics (all lower is better):

- ``cg_ir``: instructions executed,
- ``cg_i1_misses``: I1 misses of the simulated cache (``i1 = "size,assoc,line"``),
- ``cg_cost``: ``cg_ir + miss_weight * cg_i1_misses``, a cycle-like cost (the default metric).

The program's own metric lines time the simulator, not the layout: they are dropped unless
``guest_metrics = true``.
"""

from __future__ import annotations

from pathlib import Path

from . import RunResult, Target


def read_summary(path: Path) -> dict[str, int]:
    """The ``summary:`` totals of a cachegrind output file, by event name."""
    events, summary = [], []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            summary = [int(x) for x in line.split()[1:]]
    return dict(zip(events, summary))


class CachegrindTarget(Target):
    kind = "cachegrind"
    METRICS = ("cg_cost", "cg_ir", "cg_i1_misses")
    DEFAULT_METRIC = "cg_cost"
    #: the settings a profile may leave out (they are part of every run's configuration)
    DEFAULTS = {"i1": "4096,2,64", "d1": "32768,8,64", "ll": "1048576,16,64", "miss_weight": 20}

    @property
    def accelerator(self) -> str:
        return "valgrind"

    def _out(self, log: Path) -> Path:
        return log.with_suffix(".cachegrind")

    def command(self, image: Path, extra: list[str], log: Path | None = None) -> list[str]:
        s = {**self.DEFAULTS, **self.spec.settings}
        return ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--I1={s['i1']}",
                f"--D1={s['d1']}", f"--LL={s['ll']}",
                f"--cachegrind-out-file={self._out(log) if log else '/dev/null'}",
                str(image), *s.get("args", []), *extra]

    def run(self, image: Path, log: Path, extra: list[str] | None = None) -> RunResult:
        from . import run_command

        out = self._out(log)
        out.unlink(missing_ok=True)
        code, output, secs, timed_out = run_command(self.command(image, list(extra or []), log), self.timeout, log)
        if out.is_file() and not timed_out:
            totals = read_summary(out)
            if "Ir" in totals and "I1mr" in totals:
                w = float(self.spec.settings.get("miss_weight", self.DEFAULTS["miss_weight"]))
                cost = totals["Ir"] + w * totals["I1mr"]
                p = self.profile.metric_prefix
                lines = [f"{p} metric name=cg_cost value={cost:.0f} unit=events better=lower",
                         f"{p} metric name=cg_ir value={totals['Ir']} unit=instructions better=lower",
                         f"{p} metric name=cg_i1_misses value={totals['I1mr']} unit=misses better=lower"]
                output += "\n".join(["", "# from cachegrind:", *lines, ""])
                with open(log, "a") as f:
                    f.write("\n".join(["", "# from cachegrind:", *lines, ""]))
        r = self.finish(output, code, timed_out, secs, log)
        if not self.spec.settings.get("guest_metrics"):
            r.samples = [x for x in r.samples if x.metric in self.METRICS]
            if r.status == "ok" and not r.samples:
                r.status, r.message = "failed", f"cachegrind wrote no summary ({out}); see the log"
        return r
