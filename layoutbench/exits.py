"""The exit codes of every command, and their table (for --help, the README and
docs/guide/reading-output.md).  Imported at the command line's start: nothing heavy here."""

OK = 0  #: no change shown (or within layout noise); compare --commits: B not shown slower
CHANGE = 1  #: a change shown: a first bad commit; compare --commits: B slower by the minimum effect
ERROR = 2  #: bad input or environment: one line on stderr
UNDECIDED = 3  #: bisect: uncertain, or only skipped commits left (a range)
BUDGET = 4  #: bisect: the budget ended before a culprit was confirmed
SKIP = 125  #: judge: the commit cannot be judged (git bisect run skips it)
ABORT = 128  #: judge: an error (git bisect run stops)

#: (code, meaning) for --help, the README and docs/guide/reading-output.md
EXIT_TABLE = [
    (OK, "the command ran; with --exit-code: no change shown (bisect: no change shown or within layout noise; "
         "compare --commits: B not shown slower by --min-effect); judge: like GOOD"),
    (CHANGE, "with --exit-code: a change shown (bisect: a first bad commit, confirmed; compare --commits: B "
             "slower by at least --min-effect); judge: like BAD; symdiff: the placement differs"),
    (ERROR, "error: bad input or environment (one line on stderr, no verdict)"),
    (UNDECIDED, "with --exit-code: bisect undecided: uncertain (the confirmation did not show the change) or the "
                "first bad commit is one of several that could not all be judged (skipped)"),
    (BUDGET, "with --exit-code: bisect: the --budget ended before a culprit was confirmed"),
    (SKIP, "judge: the commit cannot be built or measured, or stays uncertain (git bisect run skips it)"),
    (ABORT, "judge: an error (git bisect run stops)"),
    (129, "hung up (SIGHUP: its terminal or ssh session closed); what was stored is kept, the same command "
          "resumes"),
    (130, "interrupted (Ctrl-C, SIGINT); what was stored is kept, the same command resumes"),
    (143, "terminated (SIGTERM); what was stored is kept, the same command resumes"),
]


def exit_table_text(indent: str = "  ") -> str:
    """The table as plain lines (for a click epilog)."""
    import textwrap

    return "\n".join(textwrap.fill(what, 96, initial_indent=f"{indent}{code:>3}  ",
                                   subsequent_indent=indent + " " * 5) for code, what in EXIT_TABLE)
