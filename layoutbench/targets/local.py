"""``local``: run a hosted executable (or any command) natively on this machine."""

from __future__ import annotations

from pathlib import Path

from . import Target


class LocalTarget(Target):
    """Settings: ``args`` (words after the image) or ``command`` (a list with ``{image}``);
    ``perf`` (true, or a list of events: run under ``perf stat``), ``pin`` (CPUs for taskset)."""

    kind = "local"
    counts = True

    def command(self, image: Path, extra: list[str]) -> list[str]:
        s = self.spec.settings
        if "command" in s:
            return [w.replace("{image}", str(image)) for w in s["command"]] + extra
        return [str(image), *s.get("args", []), *extra]
