"""What a running bisection tells a person: every progress line on stderr and, with the time it was
said, in the bisection's progress log (a file of the work directory, one a range, store and metric,
appended to by every command that continues it); which phase a build is for; the naive
single-layout bisection's own lines."""

from __future__ import annotations

import datetime
import hashlib
import math
import threading
from pathlib import Path

from ..paths import workdir


def log_path(kernel: str, good: str, bad: str, metric: str, store_location) -> Path:
    """Where the progress lines of the bisection of GOOD..BAD in METRIC kept in this store go."""
    tag = hashlib.sha256(str(store_location).encode()).hexdigest()[:8]
    return workdir() / "logs" / "bisect" / f"{kernel}-{good[:12]}..{bad[:12]}-{metric}-{tag}.log"


class ProgressLog:
    """``say`` that also appends each line, with its UTC time, to the progress log once it is
    known (:meth:`open`); the lines said before that are written then, in order."""

    def __init__(self, say):
        self.say, self.path = say, None
        self.held: list[tuple[str, str]] = []
        self.lock = threading.Lock()  # a farm's machines say lines from their threads

    def __call__(self, line: str) -> None:
        self.say(line)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.lock:
            if self.path is None:
                self.held.append((stamp, line))
            else:
                self._write([(stamp, line)])

    def open(self, path: Path, header: str) -> None:
        """Start writing to ``path`` (appended to): a header line, then the lines held so far."""
        with self.lock:
            self.path = path
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            self._write([(now, f"-- {header}")] + self.held)
            self.held = []

    def _write(self, lines: list[tuple[str, str]]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.writelines(f"{t} {m}\n" for t, m in lines)
        except OSError as e:  # a full disk loses the log, never the bisection
            self.say(f"the progress log {self.path} cannot be written ({e.strerror}); the lines go to stderr only")
            self.path = Path("/dev/null")


class Phase:
    """What the bisection is measuring now, as the progress lines say it: the context a build's
    line names (``compiling X for probe 3 ...``)."""

    def __init__(self):
        self.now = "the endpoints"
        self.probes = 0

    def saw(self, line: str) -> None:
        if line.startswith("endpoints: "):
            self.now = "the endpoints"
        elif line.startswith("probe "):
            self.probes += 1
            self.now = f"probe {self.probes}"
        elif line.startswith("confirmation "):
            self.now = "the confirmation"
        elif line.startswith("side test "):
            self.now = f"the side test {line.split()[2].rstrip(':')}"
        elif line.startswith("naive probe "):
            self.now = "the naive " + line.split(":")[0][len("naive "):]


def build_context(phase: Phase, probers) -> str:
    """The words after ``compiling X``: what the build is for, the builds before it and the ones
    queued (on a count target with a core for each, BAD and the first probe compile ahead: beside the
    runs of the commit before them; every other commit when its probe needs it)."""
    compiled = sum(q.compiled_now for q in probers)
    ready = len(set().union(*(q.built for q in probers)))
    ahead = sum(q.ahead_running() for q in probers)
    if len(probers) > 1:
        queue = f"one at a time for the {len(probers)} machines"
    elif ahead:
        queue = f"{ahead} more queued to compile ahead, beside its runs"
    elif probers[0].compiles_ahead:
        queue = ("none running beside it or queued: BAD and the first probe compile ahead, the other commits when "
                 "their probe needs them")
    else:
        queue = "none running beside it or queued: a commit is compiled when its probe needs it"
    return (f"for {phase.now} (this command's compile {compiled + 1}; the objects of {ready} commit(s) ready before "
            f"it; {queue})")


def naive_planned(commits: list[str]) -> int:
    """The runs a single-layout bisection of the range takes when every commit builds: the two
    endpoints and one run a halving."""
    return 2 + math.ceil(math.log2(len(commits) - 1)) if len(commits) > 2 else 2
