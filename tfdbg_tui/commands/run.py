"""`tfdbg-tui run [OPTIONS] -- python PROGRAM.py ARGS...`: debug a program unedited.
Runs `python -m instrument` in a child (this process never imports TensorFlow; it
takes the recording options from `instrument.runner`), then the app or the report;
its exit statuses.

The program runs in a child process, ``python -m instrument [OPTIONS] PROGRAM.py
ARGS`` (`instrument.runner`), on this interpreter, so this process never imports
TensorFlow; the child tells where the run went through the run file. When the program
ends, the TUI opens on the run in a terminal (with `--serve`, it is served to a browser
by `tfdbg_tui.commands.serve`), and the report is printed elsewhere (a pipe, CI). The
program's own exit status passes through; `--fail-on-alert` turns a harmful NaN or
infinity into `EXIT_ALERT`. `--ab` (`tfdbg_tui.commands.ab_run`) runs
the program twice and compares the runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from instrument.runner import add_recording_options, new_logdir
from tfdbg_tui import exit_codes as codes
from tfdbg_tui.commands.program_runs import (
    PROG,
    PYTHON,
    CommandError,
    Outcome,
    harmful_alert,
    logdir_and_run,
    open_debugger,
    opens_debugger,
    parse_program,
    recording_arguments,
    run_child,
    say,
)
from tfdbg_tui.commands.serve import add_serve_options

USAGE = f"{PROG} [OPTIONS] -- python [-m MODULE | PROGRAM.py] ARGS..."
EPILOG = f"""The program runs as `python PROGRAM.py ARGS` would (its arguments, __main__,
working directory), on the interpreter tfdbg-tui runs on. Afterwards, in a terminal the
TUI opens on the run (with --serve, it is served to a browser: the URL to open is
printed); in a pipe or CI the report is printed.

exit status: the program's own (128+N when a signal N ended it); {codes.EXIT_USAGE} bad
command line; {codes.EXIT_NO_PROGRAM} no program to run, or it could not be started;
{codes.EXIT_ALERT} with --fail-on-alert, the program succeeded but the run holds a harmful
NaN or infinity; {codes.EXIT_AB_NOT_APPLICABLE} with --ab, the variant cannot apply to the
program (said why); {codes.EXIT_NO_DUMP}/{codes.EXIT_NEWER_FORMAT}/{codes.EXIT_DAMAGED} as for
`tfdbg-tui report`, when the program succeeded and its dump cannot be read."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=USAGE,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a Python program instrumented, without editing it, then open "
        "the TUI on the run (or print the report).",
    )
    add_recording_options(parser)
    parser.add_argument(
        "--no-open",
        action="store_true",
        help="print the report instead of opening the TUI, even in a terminal",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the report (with --ab: the diff) as one JSON object; the "
        "program's own output goes to stderr",
    )
    parser.add_argument(
        "--fail-on-alert",
        action="store_true",
        help=f"exit {codes.EXIT_ALERT} when the run holds a harmful NaN or "
        "infinity (contained ones do not count), for a CI gate",
    )
    parser.add_argument(
        "--ab",
        metavar="VARIANT",
        default=None,
        help="run the program twice and compare the runs: 'xla' (XLA off "
        "where the program asks for it, on where it never does), "
        "'precision' (mixed_float16 against float32) or "
        "'env:NAME=VALUE' (one environment variable changed)",
    )
    parser.add_argument(
        "--no-mouse", action="store_true", help="do not capture the mouse in the TUI"
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="afterwards, serve the debugger to a browser (as `tfdbg-tui serve` does, "
        "with --port and --host) instead of opening the TUI",
    )
    add_serve_options(parser)
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- python PROGRAM.py",
        help="the program and its arguments",
    )
    return parser


def main(argv: list[str]) -> int:
    """Entry point of `tfdbg-tui run`; returns the exit status (see `EPILOG`)."""
    parser = build_parser()
    if "--" in argv:
        split = argv.index("--")
        args = parser.parse_args(argv[:split])
        command = argv[split + 1 :]
    else:
        args = parser.parse_args(argv)
        command = args.command
    try:
        check_serve(args)
        program = parse_program(command)
        if args.ab is not None:
            from tfdbg_tui.commands.ab_run import main as ab_main

            return ab_main(args, program)
    except CommandError as error:
        say(str(error))
        return error.status
    note = interpreter_note(command)
    if note is not None:
        say(note)
    logdir = args.logdir or new_logdir(program.name)
    say(f"recording into {logdir}")
    outcome = run_child(
        program, recording_arguments(args, logdir), stdout=sys.stderr if args.json else None
    )
    return finish(args, outcome)


def finish(args: argparse.Namespace, outcome: Outcome) -> int:
    """After the program: say how it ended, open or print its run; the exit status."""
    run_path = outcome.run_path
    if run_path is None:
        if outcome.info:
            say("the program recorded nothing (its run directory is gone)")
        elif outcome.status == codes.EXIT_USAGE:  # the child said why
            return codes.EXIT_NO_PROGRAM
        else:
            say(f"the program did not start (status {outcome.exit_status()}); nothing was recorded")
        return outcome.exit_status() or codes.EXIT_NO_PROGRAM
    if outcome.signal_name is not None:
        say(f"the program was stopped by {outcome.signal_name}; the dump is closed: {run_path}")
    elif outcome.status != 0:
        say(f"the program exited with status {outcome.status}; what was recorded: {run_path}")
    status = show_run(args, run_path)
    if outcome.status != 0:
        return outcome.exit_status()
    if status != codes.EXIT_OK:
        return status
    if args.fail_on_alert and harmful_alert(run_path):
        say("the run holds a harmful NaN or infinity (--fail-on-alert)")
        return codes.EXIT_ALERT
    return codes.EXIT_OK


def show_run(args: argparse.Namespace, run_path: str) -> int:
    """Open the TUI on the run in a terminal (unless --no-open), else print its report;
    a watched run whose hit step was replayed opens on the replay."""
    run_path = replay_of_watched(run_path) or run_path
    if opens_debugger(args):
        return open_debugger(args, list(logdir_and_run(run_path)))
    from tfdbg_tui.commands.report import main as report_main

    sys.stdout.flush()
    return report_main([run_path] + (["--json"] if args.json else []))


def check_serve(args: argparse.Namespace) -> None:
    """`--serve` refuses what cannot go with it, before the program runs.

    Raises:
        CommandError: An option that does not go with `--serve`.
    """
    if not args.serve:
        return
    if args.pdb:
        raise CommandError(
            "--pdb stops the program in pdb in this terminal, and a browser cannot reach "
            "it: leave out --serve, or serve the run afterwards (tfdbg-tui serve LOGDIR)",
            codes.EXIT_USAGE,
        )
    for option, given in (("--no-open", args.no_open), ("--json", args.json)):
        if given:
            raise CommandError(
                f"{option} prints the report: it does not go with --serve", codes.EXIT_USAGE
            )


def replay_of_watched(run_path: str) -> str | None:
    """The replay of a watched run's hit step, where there is one."""
    from reader.errors import DumpError
    from reader.run.indexed_run import IndexedRun
    from reader.run.watch_pair import watch_pair

    try:
        with IndexedRun(run_path) as run:
            pair = watch_pair(run)
    except (DumpError, OSError):
        return None
    return pair.replay_path if pair is not None else None


def interpreter_note(command: list[str]) -> str | None:
    """A note when the interpreter named after ``--`` is not the one the program runs
    on (this one), or None."""
    if not command or not PYTHON.search(os.path.basename(command[0])):
        return None
    named = shutil.which(command[0])
    if named is None or os.path.realpath(named) == os.path.realpath(sys.executable):
        return None
    return f"the program runs on {sys.executable}, the interpreter tfdbg-tui runs on"
