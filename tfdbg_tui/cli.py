"""The `tfdbg-tui` command: open a logdir in the TUI, print a report, or run the demo.

    tfdbg-tui LOGDIR [--run ID] [--no-mouse]
    tfdbg-tui report LOGDIR [--run ID] [--json]
    tfdbg-tui demo [--logdir DIR] [...]

Errors a user can cause (a bad path, a foreign or damaged directory, a newer dump
format) print one line on stderr and exit with a documented non-zero status
(`tfdbg_tui.exit_codes`); they never print a traceback.
"""

from __future__ import annotations

import sys

SUBCOMMANDS = ("report", "demo")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "report":
        from tfdbg_tui.report import main as report_main

        return report_main(argv[1:])
    if argv and argv[0] == "demo":
        from tfdbg_tui.demo import main as demo_main

        return demo_main(argv[1:])
    from tfdbg_tui.app_main import main as app_main

    return app_main(argv)


if __name__ == "__main__":
    sys.exit(main())
