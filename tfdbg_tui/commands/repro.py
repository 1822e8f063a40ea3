"""`tfdbg-tui repro LOGDIR [--run ID] [--alert N] [-o DIR]`: the one-op reproduction.

Writes, for the root cause of the run's first harmful NaN or infinity (or of alert
``N``), a self-contained script and the ``.npz`` of the op's stored inputs
(`instrument.repro.script`): ``python repro.py`` reproduces the op's non-finite output
with TensorFlow alone (compiled with XLA when the op was), ``python repro.py --fixed``
runs the fixed line beside it. What a user attaches to a bug report or turns into a
unit test. This command imports no TensorFlow; the script does.
"""

from __future__ import annotations

import argparse
import sys

import reader
from instrument.repro.script import ReproError, write_repro
from reader import DumpError
from reader.analysis.diagnosis.culprit_values import culprit_values
from reader.model import RootCause
from tfdbg_tui.exit_codes import EXIT_NO_DUMP, EXIT_NO_REPRO, EXIT_OK, fail
from tfdbg_tui.text.literal import literal

COMMAND = "tfdbg-tui repro"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=COMMAND,
        description="Write a script and the .npz of its inputs that reproduce the root "
        "cause's NaN or infinity with TensorFlow alone, and the fixed line beside it.",
        epilog=f"exit status: {EXIT_OK} written; {EXIT_NO_DUMP} missing, empty or foreign "
        f"directory; {EXIT_NO_REPRO} no such alert, no harmful alert, no values (a "
        "summary mode), or an op without a one-op reproduction.",
    )
    parser.add_argument("logdir", metavar="LOGDIR", help="directory holding runs")
    parser.add_argument("--run", metavar="ID", default=None, help="run id or unique prefix")
    parser.add_argument(
        "--alert",
        metavar="N",
        type=int,
        default=None,
        help="the N-th alert in time order, from 1 (default: the first harmful one); "
        "its root cause is reproduced",
    )
    parser.add_argument(
        "-o",
        dest="output",
        metavar="DIR",
        default=None,
        help="where the script and its inputs go (default: ./repro_<op type>)",
    )
    return parser


def main(argv: list[str]) -> int:
    """Write the reproduction; returns the exit status (see `build_parser`'s epilog)."""
    args = build_parser().parse_args(argv)
    try:
        with reader.open_run(args.logdir, args.run) as dump:
            cause = _cause(dump, args.alert)
            if isinstance(cause, str):
                return _refuse(cause)
            values = culprit_values(dump, cause)
            directory = args.output or f"repro_{cause.alert.op_type.lower()}"
            try:
                files = write_repro(values, directory, about=_about(dump, cause))
            except ReproError as error:
                return _refuse(str(error))
            except OSError as error:
                return _refuse(f"cannot write {directory}: {error.strerror or error}")
    except DumpError as error:
        return fail(COMMAND, error)
    xla = " (compiled with XLA, as the op ran)" if values.compiled else ""
    print(f"wrote {literal(files.script)} and {literal(files.inputs)}{xla}")
    print(f"  the op:     {files.call}")
    print(f"  fixed line: {files.fixed_line}")
    print(f"  python {literal(files.script)}          reproduces it (exit status 1)")
    print(f"  python {literal(files.script)} --fixed  runs the fixed line (exit status 0)")
    return EXIT_OK


def _cause(dump: reader.DumpReader, number: int | None) -> RootCause | str:
    """The root cause to reproduce, or why there is none (one line)."""
    if number is None:
        cause = dump.root_cause()
        return cause if cause is not None else "the run has no harmful NaN or infinity"
    alerts = dump.alerts().alerts
    if not 1 <= number <= len(alerts):
        return f"no alert {number}: the run lists {len(alerts)}"
    cause = dump.root_cause(alerts[number - 1])
    return cause if cause is not None else f"alert {number} did no harm"


def _about(dump: reader.DumpReader, cause: RootCause) -> str:
    """Which op of which run the inputs are (kept in the .npz as text)."""
    alert = cause.alert
    where = ""
    if cause.frame is not None:
        where = f" at {cause.frame.path}:{cause.frame.line}"
        if cause.line_text:
            where += f": {cause.line_text.strip()}"
    step = "" if alert.step is None else f", step {dump.steps().of_execution(alert.step)}"
    return (
        f"{alert.op_type} {alert.tensor_name} of run {dump.metadata.run_id}"
        f" ({alert.kind}{step}){where}"
    )


def _refuse(why: str) -> int:
    print(f"{COMMAND}: {literal(why)}", file=sys.stderr)
    return EXIT_NO_REPRO
