#!/usr/bin/env python3
"""Print vmlinux's objects in link order, for layoutbench (``vmlinux.objs``).

Reads the ``-Map`` file of a default link: every input section of the text
(``.text`` and ``.text.<name>``) names its object as ld.lld sees it:
``vmlinux.a(kernel/fork.o)``, ``lib/lib.a(argv_split.o)`` or ``init/main.o``.  One
line per object, in order of first appearance (= link order), as
``NAME PATH``: NAME is the object's name in a linker-script file pattern
(``vmlinux.a:kernel/fork.o``), PATH the object file relative to the object tree.
Only archive members that the link pulled in are listed.
"""

import os
import re
import sys

LINE = re.compile(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+\d+\s+(\S+?):\((\.text(?:\.[0-9A-Za-z_][^)]*)?)\)\s*$")
MEMBER = re.compile(r"^(\S+\.a)\((\S+)\)$")


def main(path: str) -> None:
    seen = {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            where = m.group(1)
            a = MEMBER.match(where)
            if a:
                archive, member = a.groups()
                name = f"{archive}:{member}"
                rel = os.path.normpath(os.path.join(os.path.dirname(archive), member))
            else:
                name = rel = where
            if name not in seen and not name.startswith(".tmp_"):
                seen[name] = rel
    for name, rel in seen.items():
        print(name if name == rel else f"{name} {rel}")


if __name__ == "__main__":
    main(sys.argv[1])
