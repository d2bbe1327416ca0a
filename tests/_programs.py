"""Small C programs as layoutbench profiles, for the tests that build one: the profile text and the
Makefile they write, made by one factory so that each test says only what is its own.

A program profile links one image, ``prog`` (kind ``program``: the compiler driver with
linker-scripts/program-text.ld, static libc), from the objects ``prog.objs`` lists, and runs it on a
``local`` target.
"""

from __future__ import annotations

#: the build command of a Makefile program
MAKE_COMMAND = "make -s OBJDIR={objdir} CC={cc}"
#: the build command of a program built by the profile's own build.sh
BUILD_SH_COMMAND = "sh {profile_dir}/build.sh {src} {objdir} {cc}"


def makefile(srcs: str, cflags: str = "-O2 -ffunction-sections", head: str = "") -> str:
    """A Makefile that compiles ``srcs`` (space-separated .c files) into $(OBJDIR) and lists the objects
    in link order in $(OBJDIR)/prog.objs; ``head``: lines before its first rule."""
    return (f"SRCS := {srcs}\n"
            "OBJS := $(SRCS:%.c=$(OBJDIR)/%.o)\n"
            + (f"{head}\n" if head else "")
            + "all: $(OBJS)\n"
            "\tprintf '%s\\n' $(SRCS:%.c=%.o) > $(OBJDIR)/prog.objs\n"
            "$(OBJDIR)/%.o: %.c\n"
            f"\t$(CC) {cflags} -c $< -o $@\n")


def _strings(values) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def program_profile(name: str, *, description: str = "", top: str = "", source: str = 'tree = "src"',
            command: str = MAKE_COMMAND, inputs: tuple = (), build: str = "", image: str = "", images: str = "",
            args: tuple | None = None, targets: str = "", metric: str | None = None) -> str:
    """The kernel.toml of program ``name``.  ``top``, ``build`` and ``image``: more lines for the top
    level, ``[build]`` and ``[images.prog]``; ``images`` and ``targets``: more image and target tables;
    ``inputs``: the profile's files the build reads; ``args``: the program's arguments on the local
    target; ``metric``: the default metric."""
    lines = [f'name = "{name}"']
    if description:
        lines.append(f'description = "{description}"')
    lines += ['default_target = "local"', *([top] if top else []), "",
              "[source]", source, "",
              "[build]", f'command = "{command}"', *([f"inputs = {_strings(inputs)}"] if inputs else []),
              'cc = "clang-19"', 'ld = "ld.lld-19"', *([build] if build else []), "",
              "[images.prog]", 'kind = "program"', 'objects = "prog.objs"', *([image] if image else []), "",
              *([images, ""] if images else []),
              "[targets.local]", 'kind = "local"', 'image = "prog"',
              *([f"args = {_strings(args)}"] if args is not None else []),
              *(["", targets] if targets else [])]
    if metric:
        lines += ["", "[metrics]", f'default = "{metric}"']
    return "\n".join(lines) + "\n"
