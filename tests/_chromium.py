"""Drive Debian's headless ``chromium`` over the DevTools protocol, through a pipe.

``--remote-debugging-pipe`` makes Chromium read protocol commands from fd 3 and write
replies and events to fd 4, NUL-terminated JSON: no websocket, no port, no extra package.
The browser gets no network (every host name resolves to nothing) and a throw-away profile.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         "--disable-default-apps", "--mute-audio", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--allow-file-access-from-files", "--hide-scrollbars", "--remote-debugging-pipe"]


def find() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Browser:
    def __init__(self, exe: str, profile_dir: Path, width: int = 1280, height: int = 1000):
        self.profile_dir = Path(profile_dir)
        to_r, to_w = os.pipe()  # we write commands → chromium's fd 3
        from_r, from_w = os.pipe()  # chromium's fd 4 → we read

        def child():  # move the pipe ends out of the way first: one of them may be fd 3 or 4
            a, b = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.profile_dir.mkdir(parents=True, exist_ok=True)
        with open(self.profile_dir / "stderr.log", "wb") as err:
            self.proc = subprocess.Popen(
                [exe, *FLAGS, f"--user-data-dir={self.profile_dir}", f"--window-size={width},{height}",
                 "about:blank"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                preexec_fn=child, pass_fds=(to_r, from_w, 3, 4), start_new_session=True)
        os.close(to_r)
        os.close(from_w)
        self.w, self.r = to_w, from_r
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []
        self.session = None
        tid = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=tid, flatten=True)["sessionId"]
        for dom in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{dom}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    # -- protocol ------------------------------------------------------------------------------
    def _read(self, timeout: float) -> dict | None:
        end = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe; see " + str(self.profile_dir / "stderr.log"))
                self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method: str, timeout: float = 60, **params):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            m = self._read(max(0.0, end - time.monotonic()))
            if m is None:
                raise TimeoutError(f"no answer to {method} in {timeout}s")
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_event(self, method: str, timeout: float = 60) -> dict:
        end = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e["method"] == method:
                    return self.events.pop(i)
            m = self._read(max(0.0, end - time.monotonic()))
            if m is None:
                raise TimeoutError(f"no {method} in {timeout}s")
            if "method" in m:
                self.events.append(m)

    # -- what the tests use ------------------------------------------------------------------------
    def load(self, url: str) -> dict:
        """Load ``url``; return {errors: [...], requests: [urls]} seen while loading."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        # let late console messages arrive
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            m = self._read(0.05)
            if m and "method" in m:
                self.events.append(m)
        errors, requests = [], []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif e["method"] == "Runtime.exceptionThrown":
                errors.append("exception: " + p["exceptionDetails"].get("text", ""))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                errors.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif e["method"] == "Network.requestWillBeSent":
                requests.append(p["request"]["url"])
            elif e["method"] == "Network.loadingFailed":
                errors.append(f"network: {p.get('errorText')} ({p.get('requestId')})")
        return {"errors": errors, "requests": requests}

    def eval(self, expr: str):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = False) -> None:
        params = {"format": "png"}
        if full_page:
            m = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": m["width"], "height": m["height"], "scale": 1})
        data = self.call("Page.captureScreenshot", **params)["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)
