"""The `tfdbg-tui` command: dispatches to `commands/` (open a logdir in the TUI, print a
report, run the demo, ...); a closed output pipe ends any of them quietly.

    tfdbg-tui LOGDIR [--run ID] [--no-mouse]
    tfdbg-tui report LOGDIR [--run ID] [--json]
    tfdbg-tui diff A B [--json] [--rtol R] [--atol A]
    tfdbg-tui demo [--logdir DIR] [...]
    tfdbg-tui run [OPTIONS] -- python PROGRAM.py ARGS...
    tfdbg-tui serve LOGDIR [--port N] [--host H] [--run ID] [...]
    tfdbg-tui repro LOGDIR [--run ID] [--alert N] [-o DIR]

Errors a user can cause (a bad path, a foreign or damaged directory, a newer dump
format) print one line on stderr and exit with a documented non-zero status
(`tfdbg_tui.exit_codes`); they never print a traceback.
"""

from __future__ import annotations

import os
import sys

from tfdbg_tui.exit_codes import EXIT_PIPE_CLOSED

SUBCOMMANDS = ("report", "diff", "demo", "run", "serve", "repro")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    try:
        status = _run(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught
        return status
    except BrokenPipeError:
        # End quietly, as shell tools do; what is still buffered goes nowhere rather
        # than raising again when Python flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_PIPE_CLOSED


def _run(argv: list[str]) -> int:
    if argv and argv[0] == "report":
        from tfdbg_tui.commands.report import main as report_main

        return report_main(argv[1:])
    if argv and argv[0] == "diff":
        from tfdbg_tui.commands.diff_report import main as diff_main

        return diff_main(argv[1:])
    if argv and argv[0] == "demo":
        from tfdbg_tui.commands.demo import main as demo_main

        return demo_main(argv[1:])
    if argv and argv[0] == "run":
        from tfdbg_tui.commands.run import main as run_main

        return run_main(argv[1:])
    if argv and argv[0] == "serve":
        from tfdbg_tui.commands.serve import main as serve_main

        return serve_main(argv[1:])
    if argv and argv[0] == "repro":
        from tfdbg_tui.commands.repro import main as repro_main

        return repro_main(argv[1:])
    from tfdbg_tui.commands.app_main import main as app_main

    return app_main(argv)


if __name__ == "__main__":
    sys.exit(main())
