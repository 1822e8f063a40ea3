"""Running a program under `python -m instrument` in a child process, for `tfdbg-tui
run` and `run --ab`: what runs after `--` (`python [-m MODULE | PROGRAM.py] ARGS`),
the child's command line, its signals (Ctrl+C reaches the program; SIGTERM, SIGHUP,
SIGQUIT are passed on), and what its run file says of the run."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from instrument.runner import RUN_FILE_ENV
from reader import is_run_dir
from reader.storage import store_for
from tfdbg_tui import exit_codes as codes

PROG = "tfdbg-tui run"
# An interpreter named before the program: python, python3, python3.11, /usr/bin/python.
PYTHON = re.compile(r"python[0-9.]*(\.exe)?$")
# Interpreter options that take a value (`python -W error`, `-X dev`).
_PYTHON_OPTIONS_WITH_VALUE = ("-W", "-X")
# Signals a user (or a job scheduler) sends to stop a job: passed on to the program.
_FORWARDED = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)
)


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
    if PYTHON.search(os.path.basename(tokens[0])):
        tokens.pop(0)
    elif not tokens[0].endswith(".py"):
        raise CommandError(
            f"{tokens[0]!r} is not a Python program: tfdbg-tui run -- python PROGRAM.py ARGS...",
            codes.EXIT_USAGE,
        )
    options: list[str] = []
    while tokens and tokens[0].startswith("-") and tokens[0] != "-":
        token = tokens.pop(0)
        if token == "-m":
            if not tokens:
                raise CommandError("-m needs a module: tfdbg-tui run -- python -m MODULE")
            return Program(options, None, tokens[0], tokens[1:])
        if token == "-c":
            raise CommandError("python -c cannot be run: put the code in a file", codes.EXIT_USAGE)
        options.append(token)
        if token in _PYTHON_OPTIONS_WITH_VALUE and tokens:
            options.append(tokens.pop(0))
    if not tokens:
        raise CommandError("no program to run: tfdbg-tui run -- python PROGRAM.py ARGS...")
    script = tokens[0]
    if not os.path.isfile(script):
        raise CommandError(f"no such program: {script}")
    return Program(options, script, None, tokens[1:])


def logdir_and_run(run_path: str) -> tuple[str, str, str]:
    """The app's arguments that open ``run_path`` (a directory or a bucket's URL):
    its logdir, ``--run``, its run id."""
    store = store_for(run_path)
    return store.dirname(run_path), "--run", store.basename(run_path)


@dataclass
class Outcome:
    """One run of the program: its status and what the child said of its run."""

    status: int
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def run_path(self) -> str | None:
        run = self.info.get("run")
        return run if isinstance(run, str) and is_run_dir(run) else None

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
    arguments = [
        "--logdir",
        logdir,
        "--mode",
        args.mode,
        "--circular-buffer",
        str(args.circular_buffer),
    ]
    if args.op_regex is not None:
        arguments += ["--op-regex", args.op_regex]
    if args.dtypes is not None:
        arguments += ["--dtypes", args.dtypes]
    if args.stop_on_alert:
        arguments.append("--stop-on-alert")
    if args.pdb:
        arguments.append("--pdb")
    if getattr(args, "watch", False):
        arguments.append("--watch")
    return arguments


def run_child(
    program: Program, arguments: list[str], *, env: dict[str, str] | None = None, stdout: Any = None
) -> Outcome:
    """Run ``python -m instrument ARGUMENTS PROGRAM`` to its end and read its run file.

    Ctrl+C reaches the program from the terminal (this process ignores it meanwhile);
    SIGTERM, SIGHUP and SIGQUIT sent to this process are passed on to it.
    """
    handle, run_file = tempfile.mkstemp(prefix="tfdbg-tui-run-", suffix=".json")
    os.close(handle)
    os.unlink(run_file)  # the child writes it once the dump is enabled
    child_env = dict(os.environ if env is None else env, **{RUN_FILE_ENV: run_file})
    command = [
        sys.executable,
        *program.python_options,
        "-m",
        "instrument",
        *arguments,
        *program.instrument_arguments(),
    ]
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


def opens_debugger(args: argparse.Namespace) -> bool:
    """Whether `run` ends in the debugger (served with `--serve`; in a terminal unless
    `--no-open` or `--json`), rather than in the report."""
    return args.serve or (in_terminal() and not args.no_open and not args.json)


def open_debugger(args: argparse.Namespace, app_argv: list[str]) -> int:
    """Open the debugger on what `run` recorded (``app_argv``: the app's LOGDIR and
    options): served to a browser with `--serve`, else in this terminal."""
    if args.serve:
        from tfdbg_tui.commands.serve import main as serve_main

        return serve_main([*app_argv, "--port", str(args.port), "--host", args.host])
    from tfdbg_tui.commands.app_main import main as app_main

    return app_main(app_argv + (["--no-mouse"] if args.no_mouse else []))
