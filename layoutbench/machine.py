"""Is the machine quiet enough to measure on? The checks pyperf's ``system show`` makes.

Before a local or ssh target measures, one small shell script reads what adds noise to a
timing: the CPU frequency governor and turbo/boost, SMT, ASLR, the load (runnable tasks
right now and the 1-minute load average), CPU isolation (``isolcpus``/``nohz_full``) and
whether the benchmark is pinned. The same script runs here (``sh``) and on an ssh target,
so both are judged alike; it reads Linux's /proc and /sys and OpenBSD's sysctls, and a
file that is not there is "not visible", not a problem (a virtual machine has no cpufreq).

Each problem is one line with its fix; the findings are stored with the runs they precede.
"""

from __future__ import annotations

import statistics
import subprocess
from dataclasses import asdict, dataclass

#: prints key=value lines; runs under any POSIX sh (Linux, OpenBSD)
SCRIPT = r"""
echo "ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || sysctl -n hw.ncpuonline 2>/dev/null)"
echo "governor=$(cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor 2>/dev/null | sort -u | tr '\n' ' ')"
echo "perfpolicy=$(sysctl -n hw.perfpolicy 2>/dev/null)"
echo "no_turbo=$(cat /sys/devices/system/cpu/intel_pstate/no_turbo 2>/dev/null)"
echo "boost=$(cat /sys/devices/system/cpu/cpufreq/boost 2>/dev/null)"
echo "smt=$(cat /sys/devices/system/cpu/smt/active 2>/dev/null || sysctl -n hw.smt 2>/dev/null)"
echo "aslr=$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null)"
echo "loadavg=$(cat /proc/loadavg 2>/dev/null || sysctl -n vm.loadavg 2>/dev/null)"
echo "isolated=$(cat /sys/devices/system/cpu/isolated 2>/dev/null)"
echo "nohz_full=$(cat /sys/devices/system/cpu/nohz_full 2>/dev/null)"
for i in 1 2 3 4 5; do
  echo "running=$(awk '/^procs_running/ {print $2}' /proc/stat 2>/dev/null)"
  sleep 0.1
done
"""


@dataclass(frozen=True)
class Finding:
    check: str  #: governor, boost, smt, aslr, load, isolation, pinning
    value: str  #: what was read, for people ("performance", "2 runnable on 2 CPUs", "n/a")
    problem: str = ""  #: empty when it adds no noise
    fix: str = ""

    def line(self) -> str:
        return f"{self.problem}; fix: {self.fix}" if self.problem else f"{self.check}: {self.value}"

    def to_dict(self) -> dict:
        return asdict(self)


def parse(text: str) -> dict[str, str | list[str]]:
    """The script's key=value lines; ``running`` keeps every sample."""
    facts: dict[str, str | list[str]] = {"running": []}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if key == "running":
            if value:
                facts["running"].append(value)  # type: ignore[union-attr]
        else:
            facts[key] = value
    return facts


def _cpus(text: str) -> set[int]:
    """A Linux CPU list ("1,3-5") as a set."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def assess(facts: dict, pin: str | None = None) -> list[Finding]:
    """Judge the facts; every finding, the quiet ones too (they are stored)."""
    found: list[Finding] = []
    ncpu = int(facts.get("ncpu") or 0) or 1

    gov = str(facts.get("governor", "")).split()
    policy = str(facts.get("perfpolicy", ""))
    if gov and set(gov) != {"performance"}:
        found.append(Finding("governor", " ".join(gov), f"CPU frequency governor is {' '.join(gov)}: the clock "
                             "follows the load", "cpupower frequency-set -g performance"))
    elif policy and policy != "high":
        found.append(Finding("governor", policy, f"hw.perfpolicy is {policy}: the clock follows the load",
                             "sysctl hw.perfpolicy=high"))
    else:
        found.append(Finding("governor", " ".join(gov) or policy or "n/a (no cpufreq visible)"))

    if facts.get("no_turbo") == "0" or facts.get("boost") == "1":
        found.append(Finding("boost", "on", "turbo/boost is on: the clock depends on temperature and the other "
                             "cores", "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (intel_pstate) or "
                             "echo 0 > /sys/devices/system/cpu/cpufreq/boost"))
    else:
        found.append(Finding("boost", "off" if facts.get("no_turbo") == "1" or facts.get("boost") == "0"
                             else "n/a"))

    if facts.get("smt") == "1":
        found.append(Finding("smt", "on", "SMT is on: a sibling thread shares the core's caches with the benchmark",
                             "echo off > /sys/devices/system/cpu/smt/control (Linux) or sysctl hw.smt=0 (OpenBSD), "
                             "or --pin a CPU whose sibling is idle"))
    else:
        found.append(Finding("smt", {"0": "off", "": "n/a"}.get(str(facts.get("smt", "")), str(facts.get("smt")))))

    aslr = str(facts.get("aslr", ""))
    if aslr not in ("", "0"):
        found.append(Finding("aslr", aslr, "ASLR is on: stack, heap and mmap addresses change from run to run "
                             "(run noise)", "sysctl kernel.randomize_va_space=0, or run the benchmark under "
                             "setarch -R"))
    else:
        found.append(Finding("aslr", "off" if aslr == "0" else "n/a"))

    running = [int(x) for x in facts.get("running", []) if str(x).isdigit()]
    others = max(0, int(statistics.median(running)) - 1) if running else 0  # the script's own awk runs
    load1 = _number(str(facts.get("loadavg", "")).replace("{", " ").split()[:1])
    what = f"{others} other runnable task(s) on {ncpu} CPU(s), 1-min load {load1 if load1 is not None else 'n/a'}"
    if others >= max(1, ncpu // 2) or (load1 is not None and load1 > 0.5 * ncpu + 0.5):
        found.append(Finding("load", what, f"the machine is busy: {what}",
                             "stop other jobs, or measure on a quiet machine"))
    else:
        found.append(Finding("load", what))

    isolated = _cpus(str(facts.get("isolated", ""))) | _cpus(str(facts.get("nohz_full", "")))
    iso_text = ",".join(map(str, sorted(isolated))) or "none"
    if pin is None:
        found.append(Finding("pinning", "not pinned", "the benchmark is not pinned: the scheduler moves it between "
                             "CPUs", f"--pin CPU{' (isolated here: ' + iso_text + ')' if isolated else ''}"))
    elif isolated and not (_cpus(str(pin)) <= isolated):
        found.append(Finding("pinning", f"pinned to {pin}", f"CPU {pin} is not isolated (isolated: {iso_text})",
                             f"--pin one of {iso_text}"))
    elif not isolated:
        found.append(Finding("pinning", f"pinned to {pin}", f"CPU {pin} is not isolated: other tasks share it",
                             f"boot with isolcpus={pin} nohz_full={pin}"))
    else:
        found.append(Finding("pinning", f"pinned to {pin} (isolated)"))
    return found


def _number(words: list[str]) -> float | None:
    try:
        return float(words[0])
    except (IndexError, ValueError):
        return None


def check_local(pin: str | None = None, timeout: float = 20) -> list[Finding]:
    """The findings for this machine."""
    try:
        out = subprocess.run(["sh", "-c", SCRIPT], capture_output=True, text=True, timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return [Finding("check", "failed", f"the quiet-machine check could not run ({e})", "see sh on this machine")]
    return assess(parse(out), pin)


def problems(findings: list[Finding] | list[dict]) -> list[str]:
    """One line per problem, with its fix (findings as objects or as stored dicts)."""
    fs = [f if isinstance(f, Finding) else Finding(**f) for f in findings]
    return [f.line() for f in fs if f.problem]


def summary(findings: list[Finding] | list[dict]) -> str:
    """The findings in one line: ``governor n/a, boost n/a, smt off, ...``."""
    fs = [f if isinstance(f, Finding) else Finding(**f) for f in findings]
    return ", ".join(f"{f.check} {f.value}" + (" (!)" if f.problem else "") for f in fs)
