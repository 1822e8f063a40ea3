"""`tfdbg-tui LOGDIR [--run ID] [--compare A] [--no-mouse]`: check the logdir (and A),
then run the app.

A path that cannot be opened prints one line on stderr and returns a documented exit
status (`tfdbg_tui.cli`); it never prints a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError

from tfdbg_tui import exit_codes as codes

DESCRIPTION = "Find the op and source line that made the first NaN or inf, in the terminal."
EPILOG = f"""exit status: {codes.EXIT_OK} ok, {codes.EXIT_USAGE} bad command line,
{codes.EXIT_NO_DUMP} no readable dump at LOGDIR, {codes.EXIT_NEWER_FORMAT} dump written by a newer
format, {codes.EXIT_DAMAGED} dump damaged beyond reading (of LOGDIR, or of A with --compare).
Keys: press ? in the app."""


# How long to wait for the run to open before the app starts (and shows "opening…").
OPEN_WAIT_S = 0.25


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfdbg-tui", description=DESCRIPTION, epilog=EPILOG,
        usage="tfdbg-tui LOGDIR [--run ID] [--compare A] [--no-mouse] | tfdbg-tui --version | "
              "tfdbg-tui report ... | tfdbg-tui diff A B ... | tfdbg-tui demo ... | "
              "tfdbg-tui run ... -- python PROGRAM.py ARGS...")
    parser.add_argument("logdir", metavar="LOGDIR", help="directory the instrumented "
                        "program dumped into (instrument.enable_dump_debug_info)")
    parser.add_argument("--run", metavar="ID", default=None,
                        help="run id to open (default: the newest run in LOGDIR)")
    parser.add_argument("--compare", metavar="A", default=None,
                        help="show a second run beside this one: A, the good run (a run "
                             "directory, or a logdir whose newest run is taken); Graph "
                             "Execution shows both runs' summaries, F/d/D go to divergences")
    parser.add_argument("--no-mouse", action="store_true",
                        help="do not capture the mouse, so the terminal can select text")
    parser.add_argument("--version", action="version", version=version_line(),
                        help="print the version and the dump format it reads, and exit")
    return parser


def version_line() -> str:
    """"tfdbg-tui 0.1.0 (dump format 1.0)": the installed package and the newest dump
    format its reader opens."""
    from importlib.metadata import PackageNotFoundError, version

    from reader.format import FORMAT_VERSION

    try:
        installed = version("tfdbg-tui")
    except PackageNotFoundError:
        installed = "(not installed)"
    return f"tfdbg-tui {installed} (dump format {FORMAT_VERSION[0]}.{FORMAT_VERSION[1]})"


def main(argv: list[str] | None = None) -> int:
    """Parse `argv`, open the logdir and run the app; returns the exit status."""
    args = build_parser().parse_args(argv)
    import reader
    from reader.errors import DumpError
    from tfdbg_tui.models.hunt import open_for_landing
    from tfdbg_tui.text.literal import literal

    try:
        runs = reader.list_runs(args.logdir)
        if args.compare is not None:
            reader.resolve_run_path(args.compare)
    except DumpError as error:
        print(f"tfdbg-tui: {literal(str(error))}", file=sys.stderr)
        return codes.exit_code_for(error)
    # Open the run in a thread while the terminal is still ours: a dump that fails at
    # once (newer format, no such run, damaged metadata) gets its one-line error here;
    # a big one keeps indexing, then reads what the app lands on, while the app is
    # imported and paints its first frame.
    started = time.monotonic()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tfdbg-tui-open")
    opening = executor.submit(open_for_landing, args.logdir, args.run)
    from tfdbg_tui.app import DebuggerApp  # imported while the open is under way

    try:
        opening.result(timeout=max(OPEN_WAIT_S - (time.monotonic() - started), 0.0))
    except TimeoutError:
        pass
    except DumpError as error:
        print(f"tfdbg-tui: {literal(str(error))}", file=sys.stderr)
        return codes.exit_code_for(error)
    finally:
        executor.shutdown(wait=False)
    app = DebuggerApp(args.logdir, runs, args.run, opening=opening, compare=args.compare)
    app.run(mouse=not args.no_mouse)
    if app.error_message is not None:
        print(f"tfdbg-tui: {literal(app.error_message)}", file=sys.stderr)
        return app.return_code or codes.EXIT_NO_DUMP
    return codes.EXIT_OK
