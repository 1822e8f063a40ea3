"""Exit statuses of every `tfdbg-tui` command, and the one mapping from reader errors
(`exit_code_for(DumpError)`).

Documented in docs/keys.md ("Command line and exit statuses") and in each command's
``--help``. The CLI, the app, `report`, `demo` and `run` all import them from here.
`run` passes the program's own status through (128+N when a signal N ended it).
"""

from __future__ import annotations

import signal

from reader.errors import DumpError, FormatVersionError, NoRunsError

EXIT_OK = 0
EXIT_USAGE = 2  # bad command line (argparse's own status)
EXIT_NO_DUMP = 3  # missing, empty, unreadable or foreign directory; no such run
EXIT_NEWER_FORMAT = 4  # a dump written by a newer major format version
EXIT_DAMAGED = 5  # the dump cannot be read: damaged beyond reading
EXIT_DEMO_FAILED = 6  # the demo's example program failed
EXIT_NO_PROGRAM = 7  # run: no program after `--`, or it does not exist or could not start
EXIT_ALERT = 8  # run --fail-on-alert: the program succeeded, its run holds a harmful NaN
EXIT_AB_NOT_APPLICABLE = 9  # run --ab: the variant cannot apply to this program
EXIT_CANNOT_SERVE = 10  # serve: the port or host cannot be listened on, or no web extra
EXIT_NO_REPRO = 11  # repro: no such alert, no values, or an op without a one-op script
# Our output's reader went away (`tfdbg-tui report LOGDIR | head`): the status a shell
# gives a command stopped by SIGPIPE, 128 + 13.
EXIT_PIPE_CLOSED = 128 + signal.SIGPIPE


def exit_code_for(error: DumpError) -> int:
    """The status for a reader error: no run, a newer format, or (any other
    `DumpError`, `DamagedDumpError` first among them) a dump that cannot be read."""
    if isinstance(error, NoRunsError):
        return EXIT_NO_DUMP
    if isinstance(error, FormatVersionError):
        return EXIT_NEWER_FORMAT
    return EXIT_DAMAGED


def fail(command: str, error: DumpError) -> int:
    """Print ``error`` as the one line a command ends with on stderr ("tfdbg-tui
    report: ..."; its first line, shown literally) and return its exit status."""
    import sys

    from tfdbg_tui.text.literal import literal  # Rich only on this path

    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    print(f"{command}: {literal(text)}", file=sys.stderr)
    return exit_code_for(error)
