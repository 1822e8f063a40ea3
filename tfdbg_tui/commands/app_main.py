"""`tfdbg-tui LOGDIR [--run ID] [--compare A] [--wait] [--no-mouse]`: check the logdir
(and A), open the run in a thread, run the app (with `--wait` and no run yet, a
waiting app). The one home of the app's options (`add_app_options`, written back by
`app_arguments`) and of the logdir's check (`check_logdir`), which `serve` shares.

A path that cannot be opened prints one line on stderr and returns a documented exit
status (`tfdbg_tui.cli`); it never prints a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError
from typing import TYPE_CHECKING

from tfdbg_tui import exit_codes as codes

if TYPE_CHECKING:
    from reader.errors import DumpError
    from reader.model import RunInfo

DESCRIPTION = "Find the op and source line that made the first NaN or inf, in the terminal."
EPILOG = f"""exit status: {codes.EXIT_OK} ok, {codes.EXIT_USAGE} bad command line,
{codes.EXIT_NO_DUMP} no readable dump at LOGDIR, {codes.EXIT_NEWER_FORMAT} dump written by a newer
format, {codes.EXIT_DAMAGED} dump damaged beyond reading (of LOGDIR, or of A with --compare).
Keys: press ? in the app."""


# How long to wait for the run to open before the app starts (and shows "opening…").
OPEN_WAIT_S = 0.25


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfdbg-tui",
        description=DESCRIPTION,
        epilog=EPILOG,
        usage="tfdbg-tui LOGDIR [--run ID] [--compare A] [--wait] [--no-mouse] | "
        "tfdbg-tui --version | "
        "tfdbg-tui report ... | tfdbg-tui diff A B ... | tfdbg-tui demo ... | "
        "tfdbg-tui run ... -- python PROGRAM.py ARGS... | tfdbg-tui serve LOGDIR ...",
    )
    add_app_options(parser)
    parser.add_argument(
        "--version",
        action="version",
        version=version_line(),
        help="print the version and the dump format it reads, and exit",
    )
    return parser


def add_app_options(parser: argparse.ArgumentParser) -> None:
    """The app's arguments: LOGDIR and the options that say what it opens and how
    (`tfdbg-tui serve` takes them too; `app_arguments` writes them back)."""
    parser.add_argument(
        "logdir",
        metavar="LOGDIR",
        help="directory the instrumented program dumped into (instrument.enable_dump_debug_info)",
    )
    parser.add_argument(
        "--run",
        metavar="ID",
        default=None,
        help="run id to open (default: the newest run in LOGDIR; in a "
        "multi-worker job, the worker that went non-finite first)",
    )
    parser.add_argument(
        "--compare",
        metavar="A",
        default=None,
        help="show a second run beside this one: A, the good run (a run "
        "directory, or a logdir whose newest run is taken); Graph "
        "Execution shows both runs' summaries, F/d/D go to divergences",
    )
    parser.add_argument(
        "--name-a",
        metavar="NAME",
        default=None,
        help="with --compare: what the comparison calls A (default A)",
    )
    parser.add_argument(
        "--name-b",
        metavar="NAME",
        default=None,
        help="with --compare: what the comparison calls this run (default B)",
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="start before the program: when LOGDIR holds no run yet (an "
        "empty or missing directory whose parent exists, a bucket "
        "prefix nothing was written under), show that it waits and "
        "open the first run (with --run, that run) when it appears; "
        "in a multi-worker job, go to the worker that goes "
        "non-finite first",
    )
    parser.add_argument(
        "--no-mouse",
        action="store_true",
        help="do not capture the mouse, so the terminal can select text",
    )


def app_arguments(args: argparse.Namespace) -> list[str]:
    """The command line of the app that ``args`` (parsed by `add_app_options`) ask for:
    what `tfdbg-tui serve` runs for each browser tab."""
    argv = [args.logdir]
    for option, value in (
        ("--run", args.run),
        ("--compare", args.compare),
        ("--name-a", args.name_a),
        ("--name-b", args.name_b),
    ):
        if value is not None:
            argv += [option, value]
    for option, flag in (("--wait", args.wait), ("--no-mouse", args.no_mouse)):
        if flag:
            argv.append(option)
    return argv


def version_line() -> str:
    """ "tfdbg-tui 0.1.0 (dump format 1.0)": the installed package and the newest dump
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
    status, runs = check_logdir(args)
    if status != codes.EXIT_OK:
        return status
    from reader.errors import DumpError

    opening: Future | None = None
    if runs:
        # Open the run in a thread while the terminal is still ours: a dump that fails
        # at once (newer format, no such run, damaged metadata) gets its one-line error
        # here; a big one keeps indexing, then reads what the app lands on, while the
        # app is imported and paints its first frame.
        from tfdbg_tui.models.hunt import open_for_landing

        started = time.monotonic()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tfdbg-tui-open")
        opening = executor.submit(open_for_landing, args.logdir, args.run, runs)
    from reader.analysis.compare.diff import SIDE_NAMES
    from tfdbg_tui.app import DebuggerApp  # imported while the open is under way

    if opening is not None:
        try:
            opening.result(timeout=max(OPEN_WAIT_S - (time.monotonic() - started), 0.0))
        except TimeoutError:
            pass
        except DumpError as error:
            return _failed(error, args)
        finally:
            executor.shutdown(wait=False)
    app = DebuggerApp(
        args.logdir,
        runs,
        args.run,
        opening=opening,
        compare=args.compare,
        compare_names=(args.name_a or SIDE_NAMES[0], args.name_b or SIDE_NAMES[1]),
        wait=not runs,
    )
    app.run(mouse=not args.no_mouse)
    if app.error_message is not None:
        from tfdbg_tui.text.literal import literal

        print(f"tfdbg-tui: {literal(app.error_message)}", file=sys.stderr)
        return app.return_code or codes.EXIT_NO_DUMP
    return codes.EXIT_OK


def check_logdir(args: argparse.Namespace) -> tuple[int, list[RunInfo]]:
    """Check what ``args`` (parsed by `add_app_options`) open: LOGDIR's runs (none yet
    under `--wait`), the run asked for and A under `--compare`. Returns `EXIT_OK` and
    the runs, or the status of the one-line error it printed."""
    import reader
    from reader.errors import DumpError, NoRunsYetError

    try:
        runs = reader.list_runs(args.logdir)
        if args.wait and args.run is not None:
            reader.resolve_run_path(args.logdir, args.run)  # it is there, or wait for it
    except NoRunsYetError as error:
        if not args.wait:
            return _failed(error, args), []
        runs = []
    except DumpError as error:
        return _failed(error, args), []
    if args.compare is not None:
        try:
            reader.resolve_run_path(args.compare)
        except DumpError as error:
            return _failed(error, args, hint=False), []
    return codes.EXIT_OK, runs


def _failed(error: DumpError, args: argparse.Namespace, hint: bool = True) -> int:
    """Print the one-line error of a logdir (or run A) that cannot be opened; with
    ``hint``, where a run may still appear, it says that `--wait` waits for it.
    Returns the status."""
    from reader.errors import NoRunsYetError
    from tfdbg_tui.text.literal import literal

    text = literal(str(error))
    if hint and isinstance(error, NoRunsYetError) and not args.wait:
        text += f"; add --wait to wait for {'it' if args.run else 'the first run'}"
    print(f"tfdbg-tui: {text}", file=sys.stderr)
    return codes.exit_code_for(error)
