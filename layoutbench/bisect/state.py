"""A bisection's state and its log: the settings and the good/bad/skip marks kept in the store, the
git-shaped verbs (start, mark, replay) and the verdicts kept of finished bisections."""

from __future__ import annotations

import dataclasses
import shlex

from .. import costs, measure, source, targets, validate
from .. import farm as farmmod
from ..errors import LayoutbenchError
from ..profile import Profile
from ..store import Store, config_hash
from .prober import Judgement
from ..verdict import text as vtext
from ..verdict.record import BisectionRecord, read
from .settings import CURRENT, Settings, state_key


class Journal:
    """The engine's marks, kept in the bisection's log (so that a killed bisection resumes)."""

    def __init__(self, bisection: "Bisection", profile: Profile, places: "farmmod.Farm | None" = None):
        self.b, self.profile, self.places = bisection, profile, places

    def marks(self, segment: str | None) -> dict[str, dict]:
        out = {e["commit"]: e for e in self.b.log
               if e["verb"] in ("good", "bad", "skip") and (e.get("segment") or None) == segment}
        if self.places is not None:  # a round starts: the places change hands (farm.py)
            self.places.round(segment, out)
        return out

    def record(self, segment: str | None, commit: str, judgement: Judgement, target: str | None = None) -> None:
        subj = subject_of(self.profile, self.b.s, commit)
        extra = {"segment": segment} if segment else {}
        if target:
            extra["target"] = target  # the machine that judged it (GOOD and BAD measured there too)
        if self.places is not None:
            extra.update(self.places.place_of(target))  # the labgrid place of that slot
        if judgement.verdict == "between":  # a change on both sides: bad for this range's step, as decide's own journal
            extra["between"] = True
        if judgement.verdict in ("good", "bad", "between"):
            self.b.mark("bad" if judgement.verdict == "between" else judgement.verdict, commit, judgement.describe(),
                        "measured", subject=subj,
                        layouts=judgement.layouts, runs=judgement.runs, **extra)
        else:
            why = "uncertain" if judgement.verdict == "uncertain" else "build"
            self.b.mark("skip", commit, judgement.describe(), "measured", subject=subj, why=why,
                        layouts=judgement.layouts,
                        runs=judgement.runs, **extra)


# -- the state and its log ------------------------------------------------------------------------

class Bisection:
    """A bisection's settings and marks, kept in the store's ``state`` table."""

    def __init__(self, store: Store, settings: Settings, log: list[dict] | None = None,
                 result: BisectionRecord | dict | None = None):
        self.store, self.s = store, settings
        self.log: list[dict] = log or []
        self.result = result

    @property
    def result(self) -> BisectionRecord | None:
        """The finished verdict (None while it is not finished)."""
        return self._result

    @result.setter
    def result(self, rec: BisectionRecord | dict | None) -> None:
        """A stored verdict (its JSON) is read back typed; one that does not read (written by another
        version in another shape) is not reused: the bisection decides again from its log and the store."""
        try:
            self._result = read(rec) if isinstance(rec, dict) else rec
        except (TypeError, AttributeError, ValueError):
            self._result = None

    def stored_result(self) -> dict | None:
        """The verdict as the store keeps it (its JSON)."""
        return self.result.to_dict() if self.result is not None else None

    @property
    def key(self) -> str:
        return state_key(self.s.kernel, self.s.repo, self.s.subdir)

    @classmethod
    def load(cls, store: Store, key: str) -> "Bisection | None":
        d = store.get_state(key)
        if d is None:
            return None
        return cls(store, Settings.from_dict(d["settings"]), d.get("log", []), d.get("result"))

    def save(self) -> None:
        self.store.set_state(self.key, {"settings": self.s.to_dict(), "log": self.log,
                                        "result": self.stored_result()})
        self.store.set_state(CURRENT, self.key)

    def reset(self) -> None:
        self.store.del_state(self.key)
        if self.store.get_state(CURRENT) == self.key:
            self.store.del_state(CURRENT)

    @property
    def range_key(self) -> str:
        """Where this bisection is kept while another range or metric of the kernel is bisected."""
        return range_key(self.s.kernel, self.s.repo, self.s.subdir, self.good, self.bad, self.s.metric)

    def put_aside(self) -> None:
        """Keep this bisection (settings, log, verdict) under its range and metric, and free the
        kernel's slot for another one: ``bisect KERNEL GOOD..BAD`` of its range takes it back
        (:func:`take_back`)."""
        if self.good and self.bad:
            self.store.set_state(self.range_key, {"settings": self.s.to_dict(), "log": self.log,
                                                  "result": self.stored_result()})
        self.reset()

    # marks
    def mark(self, verb: str, commit: str, note: str = "", by: str = "user", **extra) -> None:
        self.result = None
        self.log.append({"verb": verb, "commit": commit, "note": note, "by": by, **extra})
        self.save()

    def marks(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for e in self.log:
            if e["verb"] in ("good", "bad", "skip") and not e.get("segment"):
                out[e["commit"]] = e
        return out

    def entry(self, verb: str) -> dict | None:
        return next((e for e in reversed(self.log) if isinstance(e, dict) and e.get("verb") == verb), None)

    @property
    def good(self) -> str | None:
        e = self.entry("start")
        if e and e.get("good"):
            return e["good"]
        return next((e["commit"] for e in self.log if e["verb"] == "good"), None)

    @property
    def bad(self) -> str | None:
        e = self.entry("start")
        if e and e.get("bad"):
            return e["bad"]
        return next((e["commit"] for e in self.log if e["verb"] == "bad"), None)

    def commits(self, profile: Profile) -> list[str]:
        """GOOD, then the commits of GOOD..BAD oldest first (first parents)."""
        return [self.good] + source.rev_range(profile, f"{self.good}..{self.bad}", self.s.repo, self.s.subdir)

    def window(self, commits: list[str]) -> tuple[int, int, list[int]]:
        """(lo, hi, candidates): the last good index, the first bad index after it, and the
        indices between them still to test."""
        m = self.marks()
        lo = max([i for i, c in enumerate(commits) if m.get(c, {}).get("verb") == "good"] + [0])
        hi = min([i for i, c in enumerate(commits) if i > lo and m.get(c, {}).get("verb") == "bad"]
                 + [len(commits) - 1])
        cand = [i for i in range(lo + 1, hi) if commits[i] not in m]
        return lo, hi, cand

    def next_probe(self, commits: list[str]) -> int | None:
        lo, hi, cand = self.window(commits)
        if not cand:
            return None
        mid = (lo + hi) / 2
        return min(cand, key=lambda i: (abs(i - mid), i))

    def text(self, profile: Profile | None = None) -> str:
        """The log, as ``git bisect log`` prints it: commands, with what was seen as comments."""
        lines = [f"# layoutbench bisect log: {self.s.kernel} repo {self.s.repo or '(profile source)'}, "
                 f"metric {self.s.metric}"]
        opt = []
        if self.s.repo:
            opt += ["--repo", self.s.repo]
        if self.s.subdir:
            opt += ["--subdir", self.s.subdir]
        for e in self.log:
            v = e["verb"]
            if v == "start":
                lines.append(self.s.start_line(e.get("bad"), e.get("good"), profile is not None and profile.bisect_paired))
            elif v == "endpoints":
                lines.append(f"# endpoints: {e['note']}")
            elif v == "place":
                lines.append(f"# place: {e['note']}")
            elif v in ("good", "bad", "skip"):
                subj = e.get("subject", "")
                where = f" on {e['place']}" if e.get("place") else ""
                where += f" in {e['segment']}" if e.get("segment") else ""  # a range beside a found step
                why = (" (between: it differs from both ends, so it holds the step searched for here and lies "
                       "before another)" if e.get("between") else "")
                lines.append(f"# {v}{where}{why}: [{e['commit']}] {subj}" + (f" -- {e['note']}" if e.get("note") else ""))
                words = ["layoutbench", "bisect", v, e["commit"], "--kernel", self.s.kernel] + opt
                if e.get("segment"):
                    words += ["--segment", e["segment"]]
                if v == "skip" and e.get("why"):
                    words += ["--why", e["why"]]
                lines.append(shlex.join(words))
        if self.result is not None:
            lines.extend(vtext.log_lines(self.result))
        return "\n".join(lines) + "\n"


RANGES = "bisect-range:"  #: state keys of bisections put aside: one per kernel, repository, range and metric


def range_key(kernel: str, repo, subdir, good, bad, metric) -> str:
    return f"{RANGES}{kernel}:{repo or ''}:{subdir or ''}:{good}..{bad}:{metric}"


def take_back(store: Store, kernel: str, repo, subdir, good: str, bad: str, metric) -> "Bisection | None":
    """The bisection of GOOD..BAD in ``metric`` put aside (:meth:`Bisection.put_aside`), back in the
    kernel's slot (the one there put aside in its turn); None when there is none."""
    key = range_key(kernel, repo, subdir, good, bad, metric)
    d = store.get_state(key)
    if not isinstance(d, dict) or not isinstance(d.get("settings"), dict):
        return None
    try:
        b = Bisection(store, Settings.from_dict(d["settings"]), d.get("log") or [], d.get("result"))
    except TypeError:  # a state written by another version
        return None
    now = Bisection.load(store, b.key)
    if now is not None:
        now.put_aside()
    store.del_state(key)
    b.save()
    return b


KEPT = "bisect-verdict:"  #: state keys of finished bisections' verdicts, one per kernel, repository, range and metric


def kept_key(bisection: "Bisection") -> str:
    settings = bisection.s
    return (f"{KEPT}{settings.kernel}:{settings.repo or ''}:{settings.subdir or ''}:"
            f"{bisection.good}..{bisection.bad}:{settings.metric}")


def keep(store: Store, bisection: "Bisection") -> None:
    """Keep the finished verdict apart from the bisection's state, so that starting another
    bisection of the kernel (another range or metric) does not lose it: the report shows every one."""
    if bisection.result is not None:
        store.set_state(kept_key(bisection), {"settings": bisection.s.to_dict(), "result": bisection.stored_result(),
                                              "key": bisection.key})


def kept(store: Store) -> list[tuple[str, BisectionRecord]]:
    """(key, verdict) of every finished bisection kept in the store, the latest first; the verdict
    of a bisection's state that holds one not kept apart (no ``bisect-verdict:`` key) too."""
    out, seen = [], set()
    for key, d in store.states(KEPT):
        if isinstance(d, dict) and isinstance(d.get("result"), dict):
            try:
                rec = read(d["result"])
            except (TypeError, AttributeError, ValueError):  # another version's shape: not shown as a verdict
                continue
            if isinstance(rec, BisectionRecord):
                out.append((key, rec if rec.settings else dataclasses.replace(rec, settings=d.get("settings") or {})))
            seen.add(key)
    for b in stored(store):
        if b.result and b.good and b.bad and kept_key(b) not in seen:  # its range and settings beside it
            out.append((kept_key(b), dataclasses.replace(b.result, settings=b.result.settings or b.s.to_dict(),
                                                         good=b.result.good or b.good, bad=b.result.bad or b.bad)))
    return out


def stored(store: Store) -> list[Bisection]:
    """Every bisection kept in the store (its settings, log and verdict), those put aside too, the
    latest first."""
    out = []
    for key, d in store.states("bisect:") + store.states(RANGES):
        if key == CURRENT or not isinstance(d, dict) or not isinstance(d.get("settings"), dict):
            continue
        try:
            out.append(Bisection(store, Settings.from_dict(d["settings"]), d.get("log") or [], d.get("result")))
        except TypeError:  # a state written by another version
            continue
    return out


def current(store: Store, kernel: str | None = None, repo: str | None = None, subdir: str | None = None,
            profile: Profile | None = None) -> Bisection:
    """The bisection the git-shaped verbs act on: the one of (kernel, repo) or the latest started."""
    if kernel is not None:
        repo_path, sub = (source.repo_for(profile, repo, subdir) if profile is not None else (repo, subdir))
        key = state_key(kernel, str(repo_path) if repo_path else None, sub or None)
        b = Bisection.load(store, key)
        if b is None:
            raise LayoutbenchError(f"no bisection of {kernel} in progress"
                                   f"{' for ' + str(repo_path) if repo_path else ''}; start one with "
                                   f"`layoutbench bisect start` or `layoutbench bisect {kernel} GOOD..BAD`")
        return b
    key = store.get_state(CURRENT)
    b = Bisection.load(store, key) if key else None
    if b is None:
        raise LayoutbenchError("no bisection in progress; start one with `layoutbench bisect KERNEL GOOD..BAD`")
    return b


def normalize(profile: Profile, settings: Settings, check_metric: bool = True) -> Settings:
    """Resolve the repository path so that the state key is stable; fill defaults.  ``check_metric``:
    refuse a metric the target cannot print (not for a bisection continued on its own settings: its
    prober checks those)."""
    repo_path, sub = source.repo_for(profile, settings.repo, settings.subdir)
    settings.repo = str(repo_path) if repo_path is not None else None
    settings.subdir = sub or None
    names = settings.targets
    whence = "--metric" if settings.metric is not None else "the default metric"
    if settings.metric is None:
        settings.metric = targets.default_metric(profile, names[0])
    if not settings.metric:
        raise LayoutbenchError(f"{profile.path} names no default metric; give --metric")
    made = [targets.make(profile, n) for n in names]
    for t in made if check_metric else ():  # before anything is built: a metric the target cannot print
        targets.check_metric(profile, t, settings.metric, whence)
    settings.exact = measure.exact_why(made, settings.metric)
    if len(names) == 1:
        settings.target_config = config_hash(measure.target_config(made[0]))
    else:  # a farm: a bisection resumes only on the same machines, configured the same
        settings.target_config = config_hash([measure.target_config(t) for t in made])
    settings.check()
    return settings


def start(store: Store, profile: Profile, settings: Settings, bad: str | None = None,
          good: str | None = None) -> Bisection:
    """Begin a bisection.  An earlier one of the same kernel and repository is put aside under its
    range and metric (:meth:`Bisection.put_aside`), unless it is of the same range and metric: that
    one is replaced."""
    settings = normalize(profile, settings)
    if "paired" not in settings.given and profile.bisect_paired:  # the profile's default, unless --paired/--no-paired
        settings.paired = True
    old = Bisection.load(store, state_key(settings.kernel, settings.repo, settings.subdir))
    if old is not None:
        new_good = source.resolve(profile, good, settings.repo, settings.subdir).commit if good else None
        new_bad = source.resolve(profile, bad, settings.repo, settings.subdir).commit if bad else None
        if (old.good, old.bad, old.s.metric) == (new_good, new_bad, settings.metric):
            old.reset()
        else:
            old.put_aside()
    b = Bisection(store, settings)
    entry = {"verb": "start", "commit": "", "note": "", "by": "user"}
    if bad:
        entry["bad"] = source.resolve(profile, bad, settings.repo, settings.subdir).commit
    if good:
        entry["good"] = source.resolve(profile, good, settings.repo, settings.subdir).commit
    b.log.append(entry)
    b.save()
    return b


def mark(store: Store, profile: Profile, bisection: Bisection, verb: str, revs: list[str], why: str = "",
         segment: str | None = None) -> list[str]:
    """The git-shaped verbs ``good``, ``bad``, ``skip``: mark commits by hand; ``segment`` (A..B): in
    the search of that range beside a found step (as ``bisect log`` writes such a mark)."""
    if segment:
        ends = segment.split("..")
        if len(ends) != 2 or not all(ends):
            raise LayoutbenchError(f"--segment {segment!r}: give the range beside a step as A..B")
        segment = "..".join(source.resolve(profile, x, bisection.s.repo, bisection.s.subdir).commit for x in ends)
    shas = []
    for rev in revs:
        co = source.resolve(profile, rev, bisection.s.repo, bisection.s.subdir)
        bisection.mark(verb, co.commit, note="marked by hand" if not why else why, by="user",
               subject=source.describe(co).get("subject", ""), **({"why": why} if why else {}),
               **({"segment": segment} if segment else {}))
        shas.append(co.commit)
    return shas


def replay(store: Store, text: str, load_profile) -> Bisection:
    """Re-apply a log printed by ``bisect log``: its start line, then every mark."""
    b: Bisection | None = None
    prof = None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as e:
            raise LayoutbenchError(f"replay line {n}: {e}; is this a log printed by `bisect log`?") from None
        if words[:2] == ["git", "bisect"] or words[:2] == ["layoutbench", "bisect"]:
            words = words[2:]
        if not words:
            continue
        verb, rest = words[0], words[1:]
        pos, opts = [], {}
        i = 0
        while i < len(rest):
            w = rest[i]
            if w == "--no-shadow":
                opts["shadow"] = False
            elif w == "--no-paired":
                opts["paired"] = False
            elif w in ("--all-changes", "--first-only", "--prove-null", "--thorough", "--paired"):
                opts[w[2:].replace("-", "_")] = True
            elif w.startswith("--"):
                if i + 1 >= len(rest):
                    raise LayoutbenchError(f"replay line {n}: option {w} has no value")
                opts[w[2:].replace("-", "_")] = rest[i + 1]
                i += 1
            else:
                pos.append(w)
            i += 1
        if verb == "start":
            if not pos:
                raise LayoutbenchError(f"replay line {n}: start needs a kernel")
            prof = load_profile(pos[0])
            kw = {}
            for k, v in opts.items():
                try:
                    if k == "budget":
                        got = costs.parse_budget(v)
                        kw.update(budget=got.runs, budget_time=got.seconds)
                    elif k in ("layouts", "max_layouts", "runs", "max_runs", "seed"):
                        kw[k] = int(v)
                    elif k == "min_effect" and v.strip().endswith("%"):
                        kw[k] = validate.min_effect_percent(v, positive=True) / 100
                    elif k in ("confidence", "min_effect"):  # a log printed with the fraction: read as one
                        kw[k] = float(v)
                    elif k in Settings.OPTIONS or k in ("shadow", "all_changes", "first_only", "prove_null", "thorough",
                                                         "paired"):
                        kw[k] = v
                except ValueError:
                    raise LayoutbenchError(f"replay line {n}: --{k.replace('_', '-')} {v!r} is not a number") from None
            # (given: a log's --paired/--no-paired over the profile's default)
            b = start(store, prof, Settings(kernel=pos[0], **kw, given=tuple(kw)), *(pos[1:3] + [None, None])[:2])
        elif verb in ("good", "bad", "skip"):
            if b is None:
                raise LayoutbenchError(f"replay line {n}: {verb} before start; a log begins with a start line")
            mark(store, prof, b, verb, pos, opts.get("why", ""), opts.get("segment"))
        else:
            raise LayoutbenchError(f"replay line {n}: unknown verb {verb!r}; expected start, good, bad or skip")
    if b is None:
        raise LayoutbenchError("the log holds no start line; nothing replayed")
    return b


def subject_of(profile: Profile, settings: Settings, sha: str) -> str:
    """A commit's subject line ("" when it cannot be read)."""
    try:
        return source.describe(source.resolve(profile, sha, settings.repo, settings.subdir)).get("subject", "")
    except LayoutbenchError:
        return ""
