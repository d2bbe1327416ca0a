"""``labgrid-places``: run on labgrid places reserved through the lab's coordinator.

A lab whose machines are labgrid *places* (a coordinator, exporters, places with tags)
lends them to layoutbench one at a time: the target names the coordinator and which places
it may use (``places``: names or shell patterns; ``tags``: a filter as ``labgrid-client
reserve`` takes it).  To run, a target

1. creates a labgrid reservation for a usable place (its filter is the place's name, so the
   coordinator queues it behind anyone else's and allocates it when the place is free),
2. acquires the place once the reservation is allocated (the coordinator refuses a place
   that someone else holds: two layoutbench processes never get one place at once),
3. reaches the machine through the place's ``NetworkService`` resource (address, port,
   user): the run is the ``ssh`` target's (copy, run, kill at the timeout), with the
   target table's ssh settings (``identity``, ``known_hosts``, ``ssh_config``, ``command``,
   ``args`` ...),
4. releases the place and cancels the reservation.

The host of every run is ``labgrid:<place>``: samples are keyed by the place, so the
statistics of two places are never pooled.

A place is *lost* when its exporter disappears (the coordinator then lists none of its
resources), when it has no NetworkService, or when ssh cannot reach it (a run that ends
with status ``error``).  The place is then released, remembered as lost for the rest of the
process, and :class:`PlaceLost` is raised; the run in flight is not stored (samples already
stored stay).  A bisection catches it and judges the probe again on another place.

A ``compare`` or ``run`` holds one place from ``open`` to ``close``.  A bisection holds
places only while it measures (``per_probe``): ``hold`` gets one (any usable place, the one
used last if it is free), ``take`` waits for a given one (a round takes its places in
name order, so that two bisections cannot each hold a place the other waits for),
``release`` gives them back.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import getpass
import logging
import os
import random
import socket
import threading
import time

from . import RunResult, Target
from ..errors import LayoutbenchError

#: settings of this kind that are not the ssh target's
OWN = ("coordinator", "places", "tags", "acquire_timeout", "parallel")


class PlaceLost(LayoutbenchError):
    """A place went away (or could not be reached) while held: what ran there is kept, the
    run in flight is not stored, and the work goes to another place."""

    def __init__(self, place: str, reason: str):
        super().__init__(f"labgrid place {place} lost: {reason}")
        self.place, self.reason = place, reason


class Coordinator:
    """One client session with a labgrid coordinator per address and process, shared by the
    threads of a farm; its event loop runs in a thread of its own."""

    _lock = threading.Lock()
    _open: dict[str, "Coordinator"] = {}

    @classmethod
    def get(cls, address: str, timeout: float = 15) -> "Coordinator":
        with cls._lock:
            c = cls._open.get(address)
            if c is None:
                c = cls._open[address] = Coordinator(address, timeout)
            c.users += 1
            return c

    def __init__(self, address: str, timeout: float):
        from labgrid.remote.client import ClientSession

        self.address, self.users = address, 0
        self.lost: dict[str, str] = {}  #: place → why it was lost (for the rest of this process)
        self.events: list[dict] = []  #: acquired / released / lost, in order (time, place, event)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="labgrid", daemon=True)
        self.thread.start()
        user = f"{getpass.getuser()}.layoutbench.{os.getpid()}"  # one owner per process: reservations are ours

        class Session(ClientSession):
            def getuser(self):
                return user

        async def start():
            s = Session(address, self.loop)
            await asyncio.wait_for(s.start(), timeout)
            return s

        try:
            self.session = self._call(start(), timeout + 5)
        except Exception as e:  # noqa: BLE001 -- grpc, timeouts: one line
            self._stop_loop()
            why = _QUIET.last.rsplit(": ", 1)[-1].lower() if _QUIET.last else _why(e)
            raise LayoutbenchError(f"cannot reach the labgrid coordinator at {address}: {why}; is "
                                   f"labgrid-coordinator running there (LG_COORDINATOR, or the target's "
                                   f"coordinator setting)?") from None
        self.owner = f"{self.session.gethostname()}/{user}"

    def _call(self, coro, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn, timeout: float = 60):
        """``fn()`` run in the session's loop (its place and resource tables change there)."""
        async def run():
            return fn()
        return self._call(run(), timeout)

    def rpc(self, name: str, request, timeout: float = 30):
        async def run():
            return await getattr(self.session.stub, name)(request)
        try:
            return self._call(run(), timeout)
        except Exception as e:  # noqa: BLE001
            raise LayoutbenchError(f"labgrid coordinator {self.address}: {name} failed: {_why(e)}") from None

    def note(self, place: str, event: str, why: str = "") -> None:
        self.events.append({"time": time.time(), "place": place, "event": event, **({"why": why} if why else {})})

    # -- what the coordinator knows --------------------------------------------------------------
    def places(self) -> dict[str, dict]:
        """name → {tags, acquired, reservation, service (address, port, username) or None}."""
        def snap():
            s = self.session
            out = {}
            for name, p in s.places.items():
                service = None
                for exp, groups in s.resources.items():
                    for grp, res in groups.items():
                        for rname, entry in res.items():
                            data = entry.data
                            if not data or data.get("cls") != "NetworkService" or not data.get("avail"):
                                continue
                            if p.hasmatch((exp, grp, "NetworkService", rname)):
                                service = dict(data.get("params") or {})
                out[name] = {"tags": dict(p.tags), "acquired": p.acquired, "reservation": p.reservation,
                             "service": service}
            return out
        if self.session.stopping.is_set():
            raise LayoutbenchError(f"the labgrid coordinator at {self.address} went away")
        return self.call(snap)

    def held_service(self, place: str) -> dict | None:
        """The NetworkService of a place we hold: from the resources the coordinator acquired for
        it, None when they are gone (its exporter disconnected)."""
        def look():
            s = self.session
            p = s.places.get(place)
            if p is None or p.acquired != self.owner:
                return None
            for path in p.acquired_resources:
                exp, grp, cls, rname = path
                entry = s.resources.get(exp, {}).get(grp, {}).get(rname)
                if cls == "NetworkService" and entry is not None and entry.data and entry.data.get("avail"):
                    return dict(entry.data.get("params") or {})
            return None
        if self.session.stopping.is_set():
            return None
        return self.call(look)

    # -- reserve, acquire, release ---------------------------------------------------------------
    def reserve(self, place: str) -> str:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        req = pb.CreateReservationRequest(filters={"main": pb.Reservation.Filter(filter={"name": place})}, prio=0)
        return self.rpc("CreateReservation", req).reservation.token

    def allocated(self, token: str) -> bool | None:
        """True once the reservation is allocated, False while it waits, None when it is gone."""
        from labgrid.remote.common import Reservation, ReservationState
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        try:
            res = Reservation.from_pb2(self.rpc("PollReservation", pb.PollReservationRequest(token=token))
                                       .reservation)
        except LayoutbenchError:
            return None
        if res.state in (ReservationState.allocated, ReservationState.acquired):
            return True
        return False if res.state is ReservationState.waiting else None

    def acquire(self, place: str) -> bool:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        try:
            self.rpc("AcquirePlace", pb.AcquirePlaceRequest(placename=place))
        except LayoutbenchError:
            return False
        self._call(self.session.sync_with_coordinator(), 30)
        return True

    def release(self, place: str, token: str | None) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        if self.session.stopping.is_set():
            return
        with contextlib.suppress(LayoutbenchError):
            self.rpc("ReleasePlace", pb.ReleasePlaceRequest(placename=place, fromuser=self.owner))
        if token:
            with contextlib.suppress(LayoutbenchError):
                self.rpc("CancelReservation", pb.CancelReservationRequest(token=token))
        with contextlib.suppress(Exception):
            self._call(self.session.sync_with_coordinator(), 30)

    def close(self) -> None:
        with Coordinator._lock:
            self.users -= 1
            if self.users > 0:
                return
            Coordinator._open.pop(self.address, None)
        with contextlib.suppress(Exception):
            self._call(self.session.stop(), 10)
            self._call(self.session.close(), 10)
        self._stop_loop()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class _Quiet(logging.Filter):
    """labgrid's client logs to the root logger (``coordinator is unavailable: ...``); we say it
    in one line of our own instead, so its records are kept here, not printed."""

    last = ""

    def filter(self, record: logging.LogRecord) -> bool:
        if "labgrid" in record.pathname:
            self.last = record.getMessage().splitlines()[0] if record.getMessage() else self.last
            return False
        return True


_QUIET = _Quiet()
logging.getLogger().addFilter(_QUIET)


def _why(e: BaseException) -> str:
    details = getattr(e, "details", None)
    if callable(details):
        with contextlib.suppress(Exception):
            return str(details())
    if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


@dataclasses.dataclass
class Held:
    place: str
    token: str
    service: dict


class PlaceTarget(Target):
    """Settings: ``coordinator`` (``HOST:PORT``; default ``$LG_COORDINATOR``), ``places`` (names
    or shell patterns of the places it may use; default all), ``tags`` (a table: only places
    with these tags), ``acquire_timeout`` (seconds to wait for a place, default 3600),
    ``parallel`` (a bisection's probes per round; default: as many as there are usable
    places), and the ``ssh`` target's settings for the machine behind the place's
    NetworkService (``identity``, ``known_hosts``, ``ssh_config``, ``command``/``args``,
    ``remote_dir`` (``{place}`` in it is the place's name), ``install``, ``reboot`` ...; ``user`` overrides the NetworkService's
    username)."""

    kind = "labgrid-places"
    counts = True

    def __init__(self, spec, profile):
        super().__init__(spec, profile)
        s = spec.settings
        self.address = str(s.get("coordinator") or os.environ.get("LG_COORDINATOR") or "")
        if not self.address:
            raise LayoutbenchError(f"{profile.path}: [targets.{spec.name}] kind {self.kind} needs 'coordinator' "
                                   f"(HOST:PORT of labgrid-coordinator) or LG_COORDINATOR set")
        pats = s.get("places", ["*"])
        self.patterns = [str(p) for p in ([pats] if isinstance(pats, str) else pats)]
        tags = s.get("tags", {})
        if not isinstance(tags, dict):
            raise LayoutbenchError(f"{profile.path}: [targets.{spec.name}] tags must be a table, e.g. "
                                   f"tags = {{ pool = \"bench\" }}")
        self.tags = {str(k): str(v) for k, v in tags.items()}
        self.acquire_timeout = float(s.get("acquire_timeout", 3600))
        self.per_probe = False  #: a bisection: hold places only while measuring (hold/release)
        self.coord: Coordinator | None = None
        self.held: Held | None = None
        self.last: str | None = None  #: the place held last (preferred when free again)
        self._ssh = None
        self._view: str | None = None
        self.say = lambda msg: None

    # -- identity --------------------------------------------------------------------------------
    @property
    def run_noun(self) -> str:
        return "reboots+runs" if self.spec.settings.get("reboot") else "runs"

    @property
    def place(self) -> str | None:
        return self._view or (self.held.place if self.held else None)

    @property
    def host(self) -> str:
        return f"labgrid:{self.place}" if self.place else "labgrid:(no place held)"

    def describe(self) -> str:
        which = " ".join(self.patterns) + "".join(f" {k}={v}" for k, v in self.tags.items())
        return f"{self.spec.name} (labgrid places {which} via {self.address}, ssh)"

    def matches(self, name: str, info: dict) -> bool:
        return (any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
                and all(info["tags"].get(k) == v for k, v in self.tags.items()))

    def candidates(self) -> dict[str, dict]:
        """The places this target may use, sorted by name: matching, not lost."""
        assert self.coord is not None
        return {n: i for n, i in sorted(self.coord.places().items())
                if self.matches(n, i) and n not in self.coord.lost}

    def usable(self) -> list[str]:
        """Candidates whose NetworkService is there now."""
        return [n for n, i in self.candidates().items() if i["service"]]

    def slots(self) -> int:
        """How many probes a bisection may run at once over these places."""
        self.connect()
        n = len(self.usable())
        if n == 0:
            raise self._none_left()
        return min(n, int(self.spec.settings.get("parallel", n)))

    def _none_left(self) -> LayoutbenchError:
        lost = "; ".join(f"{p}: {why}" for p, why in sorted(self.coord.lost.items())) if self.coord else ""
        known = ", ".join(sorted(self.coord.places())) if self.coord else ""
        return LayoutbenchError(f"target {self.spec.name}: no usable labgrid place matches {self.describe()} "
                                f"(places known to the coordinator: {known or 'none'}"
                                + (f"; lost: {lost}" if lost else "") + ")")

    # -- places ----------------------------------------------------------------------------------
    def connect(self) -> None:
        if self.coord is None:
            self.coord = Coordinator.get(self.address)

    def open(self) -> None:
        self.connect()
        if not self.per_probe:
            self.hold()

    def close(self) -> None:
        self.release()
        if self.coord is not None:
            self.coord.close()
            self.coord = None

    def _take(self, name: str, deadline: float, wait: bool) -> Held | None:
        """Reserve ``name`` and acquire it once the reservation is allocated (waiting in the
        coordinator's queue while ``wait``); None when it is not to be had (or not usable)."""
        c = self.coord
        token = c.reserve(name)
        try:
            while True:
                state = c.allocated(token)
                if state is None:
                    return None
                if state:
                    break
                if not wait or time.monotonic() > deadline:
                    return None
                time.sleep(0.2 + 0.2 * random.random())
            if not c.acquire(name):
                return None
            service = c.held_service(name)
            if not service:
                c.release(name, token)
                token = None
                why = "it has no available NetworkService (its exporter is gone?)"
                c.lost.setdefault(name, why)
                c.note(name, "lost", why)
                self.say(f"labgrid place {name}: {why}; not used")
                return None
            held, token = Held(name, token, service), None
            c.note(name, "acquired")
            return held
        finally:
            if token is not None:
                c.release(name, token)

    def hold(self, prefer: str | None = None) -> str:
        """Hold one place (no-op when one is held): a free usable candidate, ``prefer`` or the
        last one first; when none is free, wait in the coordinator's queue of the first."""
        if self._view:
            return self._view
        if self.held:
            return self.held.place
        self.connect()
        deadline = time.monotonic() + self.acquire_timeout
        while True:
            cands = self.candidates()
            usable = [n for n, i in cands.items() if i["service"]]
            if not usable:
                raise self._none_left()
            first = [n for n in (prefer, self.last) if n in usable]
            free = [n for n in usable if not cands[n]["acquired"] and not cands[n]["reservation"]]
            order = list(dict.fromkeys([n for n in first if n in free] + free))
            for name in order:
                got = self._take(name, deadline, wait=False)
                if got:
                    return self._hold(got)
            # none free: queue for one (the preferred, else a random one) for a while, then look again
            name = first[0] if first else random.choice(usable)
            got = self._take(name, min(deadline, time.monotonic() + 5), wait=True)
            if got:
                return self._hold(got)
            if time.monotonic() > deadline:
                who = ", ".join(f"{n} by {cands[n]['acquired'] or 'a reservation'}" for n in usable)
                raise LayoutbenchError(f"target {self.spec.name}: no labgrid place free within "
                                       f"{self.acquire_timeout:.0f}s ({who}); raise acquire_timeout or free one")

    def take(self, name: str) -> bool:
        """Hold ``name``, waiting in the coordinator's queue for it (a bisection's round takes its
        places in name order: two bisections cannot each hold a place the other waits for);
        False when it is lost or has no NetworkService."""
        if self.held:
            return self.held.place == name
        self.connect()
        if name in self.coord.lost:
            return False
        got = self._take(name, time.monotonic() + self.acquire_timeout, wait=True)
        if got:
            self._hold(got)
            return True
        if name not in self.coord.lost:
            raise LayoutbenchError(f"target {self.spec.name}: labgrid place {name} not free within "
                                   f"{self.acquire_timeout:.0f}s; raise acquire_timeout or free it")
        return False

    def _hold(self, held: Held) -> str:
        self.held, self.last = held, held.place
        self._ssh = None
        return held.place

    def release(self) -> None:
        if self.held is None:
            return
        held, self.held = self.held, None
        if self._ssh is not None:
            self._ssh.close()
            self._ssh = None
        if self.coord is not None:
            self.coord.release(held.place, held.token)
            self.coord.note(held.place, "released")

    def lose(self, why: str) -> PlaceLost:
        """Give the held place back as lost; the exception to raise."""
        place = self.held.place if self.held else "?"
        if self.coord is not None:
            self.coord.lost.setdefault(place, why)
            self.coord.note(place, "lost", why)
        self.release()
        return PlaceLost(place, why)

    @contextlib.contextmanager
    def viewing(self, place: str):
        """Read what ``place`` stored without holding it (nothing may run meanwhile)."""
        self._view = place
        try:
            yield
        finally:
            self._view = None

    # -- running ---------------------------------------------------------------------------------
    def ssh(self):
        """The ssh target of the held place (its NetworkService's address, port and user)."""
        from .ssh import SshTarget

        if self._ssh is None:
            svc = self.held.service
            settings = {k: v for k, v in self.spec.settings.items() if k not in OWN}
            settings.update(host=str(svc.get("address")), port=int(svc.get("port", 22)), host_id=self.host,
                            remote_dir=str(settings.get("remote_dir", "/tmp/layoutbench")).replace(
                                "{place}", self.held.place))
            settings.setdefault("user", str(svc.get("username") or getpass.getuser()))
            spec = dataclasses.replace(self.spec, kind="ssh", settings=settings)
            self._ssh = SshTarget(spec, self.profile)
            self._ssh.timeout = self.timeout
        return self._ssh

    def _check(self) -> None:
        if not self.coord.held_service(self.held.place):
            raise self.lose("the coordinator no longer lists its NetworkService (its exporter is gone)")

    def machine_check(self):
        if self._view:
            return []
        self.hold()
        self._check()
        return self.ssh().machine_check()

    def run(self, image, log, extra=None) -> RunResult:
        from .ssh import TargetUnreachable

        if self._view:
            raise LayoutbenchError(f"target {self.spec.name}: place {self._view} is not held; nothing runs there")
        self.hold()
        self._check()
        try:
            r = self.ssh().run(image, log, extra)
        except TargetUnreachable as e:
            raise self.lose(str(e)) from None
        if r.status == "error":  # the machine, not the image: ssh broke or could not connect
            raise self.lose(r.message or "ssh error")
        self._check()  # lost while it ran: the run is not kept (someone else may have had the place)
        with open(log, "ab") as f:
            f.write(f"\n# labgrid place {self.held.place} (reservation {self.held.token}, "
                    f"coordinator {self.address}, {socket.gethostname()})\n".encode())
        return dataclasses.replace(r, host=self.host)
