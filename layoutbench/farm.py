"""A bisection's probes on labgrid places (``--target POOL``, a ``labgrid-places`` target).

The decision engine (:mod:`decide`) runs k probers, one probe each per round; here each
prober is a *slot* of the pool: it holds a place only while it measures.  At the start of
every round (when the engine reads the marks) every slot gives its place back and the
round's slots take places again in name order, waiting in the coordinator's queue (so two
bisections on one pool take turns, and cannot each hold a place the other waits for).  The
endpoints, the confirmation and the single-layout shadow take one place, any free one.

A slot keeps its place for the whole of a probe: the probe and GOOD and BAD are measured
on the same place (never two places in one comparison).  A place lost in the middle
(:class:`~layoutbench.targets.places.PlaceLost`) is released; the round is judged again
(what was measured stays stored, keyed by place) with as many slots as usable places are
left, so the lost probe goes to another place.  Every mark names its place; the log keeps
the losses.
"""

from __future__ import annotations

from . import decide
from .errors import LayoutbenchError
from .targets.places import PlaceLost, PlaceTarget


def pool(profile, names: list) -> bool:
    """Whether ``--target`` names a labgrid-places pool (which must then be the only target)."""
    kinds = [profile.target(n).kind for n in names]
    if "labgrid-places" not in kinds:
        return False
    if len(names) > 1:
        raise LayoutbenchError(f"--target {','.join(str(n) for n in names)}: a labgrid-places target is a farm by "
                               f"itself (one probe per place); give it alone")
    return True


class Farm:
    """The slots of one bisection over a place pool."""

    def __init__(self, probers: list, b, say):
        self.probers, self.b, self.say = probers, b, say
        for j, q in enumerate(probers):
            t: PlaceTarget = q.target
            t.per_probe, t.say = True, say
            q.name = f"{q.name}#{j + 1}"  # a slot; the marks name its place
        self.by_name = {q.name: q for q in probers}
        self.live = len(probers)  #: slots in use (shrinks when places are lost)
        self.commits: list[str] = []

    @property
    def targets(self) -> list[PlaceTarget]:
        return [q.target for q in self.probers]

    def release_all(self) -> None:
        for t in self.targets:
            t.release()

    # the engine's hooks ---------------------------------------------------------------------------
    def round(self, segment, marks: dict) -> None:
        """A round starts (the engine reads the marks): give every place back, then take the
        places this round's probes need, in name order."""
        self.release_all()
        commits = self.commits
        if segment:
            a, z = segment.split("..")
            commits = commits[commits.index(a):commits.index(z) + 1]
        lo = max([i for i, c in enumerate(commits) if marks.get(c, {}).get("verb") == "good"] + [0])
        hi = min([i for i, c in enumerate(commits) if i > lo and marks.get(c, {}).get("verb") == "bad"]
                 + [len(commits) - 1])
        cand = [i for i in range(lo + 1, hi) if commits[i] not in marks]
        need = len(decide.split(lo, hi, cand, self.live)) if self.live > 1 else 0
        if need < 2:
            return  # one probe (or none): its slot takes any free place when it measures
        slots = iter(self.targets[:need])
        t = next(slots)
        for name in self.targets[0].usable():  # in name order, each waited for in turn
            if t.take(name):
                t = next(slots, None)
                if t is None:
                    return

    def place_of(self, slot: str | None) -> dict:
        q = self.by_name.get(slot)
        if q is None or q.target.last is None:
            return {}
        return {"place": q.target.last, "slot": slot}

    def engines(self, engines: list):
        live = engines[:self.live]
        return live if len(live) > 1 else live[0]

    def retrying(self, what: str, fn):
        """``fn()``, again after each lost place (each time with the slots that places remain for)."""
        while True:
            try:
                return fn()
            except PlaceLost as e:
                self.release_all()
                left = self.targets[0].usable() if self.targets[0].coord else []
                if not left:
                    raise LayoutbenchError(f"{e}; no other place of {self.targets[0].describe()} is left") from None
                self.live = max(1, min(self.live, len(left)))
                self.b.log.append({"verb": "place", "commit": "", "by": "measured", "place": e.place, "note": (
                    f"{e} during {what}; released; what it stored is kept, {what} goes on with "
                    f"{self.live} place(s) ({', '.join(left)})")})
                self.b.save()
                self.say(f"{e}: released; {what} goes on over {', '.join(left)}")

    def summary(self, marks: list[dict]) -> dict:
        """Per place: the probes it judged; the places lost (and why)."""
        per: dict[str, dict] = {}
        for e in marks:
            if e.get("place"):
                d = per.setdefault(e["place"], {"probes": 0, "commits": []})
                d["probes"] += 1
                d["commits"].append(e["commit"])
        coord = next((t.coord for t in self.targets if t.coord), None)
        lost = dict(coord.lost) if coord else {}
        for e in self.b.log:
            if e["verb"] == "place" and e.get("place"):
                lost.setdefault(e["place"], e["note"])
        return {"per_place": per, "lost": lost, "slots": len(self.probers), "slots_at_end": self.live}

