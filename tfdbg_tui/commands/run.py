"""`tfdbg-tui run [OPTIONS] -- python PROGRAM.py ARGS...`: debug a program unedited.

The program runs in a child process, ``python -m instrument [OPTIONS] PROGRAM.py
ARGS`` (`instrument.runner`), on this interpreter, so this process never imports
TensorFlow; the child tells where the run went through the run file. When the program
ends, the TUI opens on the run in a terminal, and the report is printed elsewhere (a
pipe, CI). The program's own exit status passes through; `--fail-on-alert` turns a
harmful NaN or infinity into `EXIT_ALERT`. `--ab` (`tfdbg_tui.commands.ab_run`) runs
the program twice and compares the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from instrument.runner import RUN_FILE_ENV, add_recording_options, new_logdir
from tfdbg_tui import exit_codes as codes

PROG = "tfdbg-tui run"
USAGE = f"{PROG} [OPTIONS] -- python [-m MODULE | PROGRAM.py] ARGS..."
EPILOG = f"""The program runs as `python PROGRAM.py ARGS` would (its arguments, __main__,
working directory), on the interpreter tfdbg-tui runs on. Afterwards, in a terminal the
TUI opens on the run; in a pipe or CI the report is printed.

exit status: the program's own (128+N when a signal N ended it); {codes.EXIT_USAGE} bad
command line; {codes.EXIT_NO_PROGRAM} no program to run, or it could not be started;
{codes.EXIT_ALERT} with --fail-on-alert, the program succeeded but the run holds a harmful
NaN or infinity; {codes.EXIT_AB_NOT_APPLICABLE} with --ab, the variant cannot apply to the
program (said why); {codes.EXIT_NO_DUMP}/{codes.EXIT_NEWER_FORMAT}/{codes.EXIT_DAMAGED} as for
`tfdbg-tui report`, when the program succeeded and its dump cannot be read."""

# An interpreter named before the program: python, python3, python3.11, /usr/bin/python.
_PYTHON = re.compile(r"python[0-9.]*(\.exe)?$")
# Interpreter options that take a value (`python -W error`, `-X dev`).
_PYTHON_OPTIONS_WITH_VALUE = ("-W", "-X")
# Signals a user (or a job scheduler) sends to stop a job: passed on to the program.
_FORWARDED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT")
                   if hasattr(signal, name))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, usage=USAGE, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a Python program instrumented, without editing it, then open "
                    "the TUI on the run (or print the report).")
    add_recording_options(parser)
    parser.add_argument("--no-open", action="store_true",
                        help="print the report instead of opening the TUI, even in a terminal")
    parser.add_argument("--json", action="store_true",
                        help="print the report (with --ab: the diff) as one JSON object; the "
                             "program's own output goes to stderr")
    parser.add_argument("--fail-on-alert", action="store_true",
                        help=f"exit {codes.EXIT_ALERT} when the run holds a harmful NaN or "
                             "infinity (contained ones do not count), for a CI gate")
    parser.add_argument("--ab", metavar="VARIANT", default=None,
                        help="run the program twice and compare the runs: 'xla' (XLA off "
                             "where the program asks for it, on where it never does), "
                             "'precision' (mixed_float16 against float32) or "
                             "'env:NAME=VALUE' (one environment variable changed)")
    parser.add_argument("--no-mouse", action="store_true",
                        help="do not capture the mouse in the TUI")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- python PROGRAM.py",
                        help="the program and its arguments")
    return parser


@dataclass
class Program:
    """What runs after ``--``: interpreter options, then a script or a module."""

    python_options: list[str]
    script: str | None
    module: str | None
    args: list[str]

    @property
    def name(self) -> str:
        return self.module or os.path.basename(self.script or "program")

    def instrument_arguments(self) -> list[str]:
        """The tail of the child's command line: ``PROGRAM.py ARGS`` or ``-m MODULE ARGS``."""
        if self.module is not None:
            return ["-m", self.module, *self.args]
        return [str(self.script), *self.args]


class CommandError(Exception):
    """A command line `run` refuses; its text is the one line printed."""

    def __init__(self, message: str, status: int = codes.EXIT_NO_PROGRAM) -> None:
        super().__init__(message)
        self.status = status


def parse_program(command: list[str]) -> Program:
    """The program after ``--``: ``python [OPTIONS] PROGRAM.py ARGS`` or ``python
    [OPTIONS] -m MODULE ARGS`` (``PROGRAM.py ARGS`` alone is taken as well)."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CommandError("no program to run: tfdbg-tui run -- python PROGRAM.py ARGS...")
    tokens = list(command)
    if _PYTHON.search(os.path.basename(tokens[0])):
        tokens.pop(0)
    elif not tokens[0].endswith(".py"):
        raise CommandError(f"{tokens[0]!r} is not a Python program: tfdbg-tui run -- "
                           "python PROGRAM.py ARGS...", codes.EXIT_USAGE)
    options: list[str] = []
    while tokens and tokens[0].startswith("-") and tokens[0] != "-":
        token = tokens.pop(0)
        if token == "-m":
            if not tokens:
                raise CommandError("-m needs a module: tfdbg-tui run -- python -m MODULE")
            return Program(options, None, tokens[0], tokens[1:])
        if token == "-c":
            raise CommandError("python -c cannot be run: put the code in a file",
                               codes.EXIT_USAGE)
        options.append(token)
        if token in _PYTHON_OPTIONS_WITH_VALUE and tokens:
            options.append(tokens.pop(0))
    if not tokens:
        raise CommandError("no program to run: tfdbg-tui run -- python PROGRAM.py ARGS...")
    script = tokens[0]
    if not os.path.isfile(script):
        raise CommandError(f"no such program: {script}")
    return Program(options, script, None, tokens[1:])


@dataclass
class Outcome:
    """One run of the program: its status and what the child said of its run."""

    status: int
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def run_path(self) -> str | None:
        run = self.info.get("run")
        return run if isinstance(run, str) and os.path.isdir(run) else None

    @property
    def signal_name(self) -> str | None:
        if self.status >= 0:
            return None
        try:
            return signal.Signals(-self.status).name
        except ValueError:
            return f"signal {-self.status}"

    def exit_status(self) -> int:
        """The status to pass on: the program's, 128+N for a signal N."""
        return 128 - self.status if self.status < 0 else self.status


def recording_arguments(args: argparse.Namespace, logdir: str) -> list[str]:
    """The child's options from ours (`instrument.runner.add_recording_options`)."""
    arguments = ["--logdir", logdir, "--mode", args.mode,
                 "--circular-buffer", str(args.circular_buffer)]
    if args.op_regex is not None:
        arguments += ["--op-regex", args.op_regex]
    if args.dtypes is not None:
        arguments += ["--dtypes", args.dtypes]
    if args.stop_on_alert:
        arguments.append("--stop-on-alert")
    if args.pdb:
        arguments.append("--pdb")
    return arguments


def run_child(program: Program, arguments: list[str], *, env: dict[str, str] | None = None,
              stdout: Any = None) -> Outcome:
    """Run ``python -m instrument ARGUMENTS PROGRAM`` to its end and read its run file.

    Ctrl+C reaches the program from the terminal (this process ignores it meanwhile);
    SIGTERM, SIGHUP and SIGQUIT sent to this process are passed on to it.
    """
    handle, run_file = tempfile.mkstemp(prefix="tfdbg-tui-run-", suffix=".json")
    os.close(handle)
    os.unlink(run_file)  # the child writes it once the dump is enabled
    child_env = dict(os.environ if env is None else env, **{RUN_FILE_ENV: run_file})
    command = [sys.executable, *program.python_options, "-m", "instrument", *arguments,
               *program.instrument_arguments()]
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, *_FORWARDED)}
    try:
        process = subprocess.Popen(command, env=child_env, stdout=stdout)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for number in _FORWARDED:
            signal.signal(number, lambda received, _frame: process.send_signal(received))
        status = process.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    try:
        with open(run_file, encoding="utf-8") as lines:
            info = json.load(lines)
        os.unlink(run_file)
    except (OSError, ValueError):
        info = {}
    return Outcome(status, info)


def say(text: str) -> None:
    """One line of ours on stderr (the program's output and the report keep stdout)."""
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def harmful_alert(run_path: str) -> bool | None:
    """Whether the run holds a harmful NaN or infinity (None: it cannot be read)."""
    import reader
    from reader.errors import DumpError

    try:
        with reader.DumpReader(run_path) as dump:
            return dump.root_cause() is not None
    except (DumpError, OSError):
        return None


def in_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def main(argv: list[str]) -> int:
    """Entry point of `tfdbg-tui run`; returns the exit status (see `EPILOG`)."""
    parser = build_parser()
    if "--" in argv:
        split = argv.index("--")
        args = parser.parse_args(argv[:split])
        command = argv[split + 1:]
    else:
        args = parser.parse_args(argv)
        command = args.command
    try:
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
    outcome = run_child(program, recording_arguments(args, logdir),
                        stdout=sys.stderr if args.json else None)
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
            say(f"the program did not start (status {outcome.exit_status()}); "
                "nothing was recorded")
        return outcome.exit_status() or codes.EXIT_NO_PROGRAM
    if outcome.signal_name is not None:
        say(f"the program was stopped by {outcome.signal_name}; the dump is closed: "
            f"{run_path}")
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
    """Open the TUI on the run in a terminal (unless --no-open), else print its report."""
    if in_terminal() and not args.no_open and not args.json:
        from tfdbg_tui.commands.app_main import main as app_main

        return app_main([os.path.dirname(run_path), "--run", os.path.basename(run_path)]
                        + (["--no-mouse"] if args.no_mouse else []))
    from tfdbg_tui.commands.report import main as report_main

    sys.stdout.flush()
    return report_main([run_path] + (["--json"] if args.json else []))


def interpreter_note(command: list[str]) -> str | None:
    """A note when the interpreter named after ``--`` is not the one the program runs
    on (this one), or None."""
    if not command or not _PYTHON.search(os.path.basename(command[0])):
        return None
    named = shutil.which(command[0])
    if named is None or os.path.realpath(named) == os.path.realpath(sys.executable):
        return None
    return f"the program runs on {sys.executable}, the interpreter tfdbg-tui runs on"
