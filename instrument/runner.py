"""`python -m instrument [OPTIONS] PROGRAM.py ARGS...` (or `-m MODULE ARGS...`): run a
program instrumented, without editing it. Enables the dump on the program's behalf
(`api.enable_for_program`: the program's own call wins), runs it with `runpy` as
`__main__`, writes the run file `tfdbg-tui run` reads; the options `tfdbg-tui run`
shares.

The dump is enabled on the program's behalf, then the program runs as ``python
PROGRAM.py ARGS`` would run it (`runpy`, as ``__main__``): the same ``sys.argv``,
``sys.path[0]``, working directory, exit status, signals and traceback (our own
frames are left out of it). A program that calls ``enable_dump_debug_info`` itself
is not instrumented twice: its call wins (`instrument.api.enable_for_program`).

``tfdbg-tui run`` starts this in a child process; it learns where the run went from
the run file (`RUN_FILE_ENV`): one JSON object, written when the dump is enabled and
again when the program ends.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
import shutil
import sys
import time
import types
from typing import Any

from instrument.run_variants import Observations
from reader import format as fmt

PROG = "python -m instrument"
# Where `tfdbg-tui run` and `python -m instrument` record without --logdir.
DEFAULT_LOGDIR_ROOT = "tfdbg-logdir"
DEFAULT_MODE = fmt.FULL_HEALTH
DEFAULT_CIRCULAR_BUFFER = 1000
# The environment variable naming the run file (set by `tfdbg-tui run`).
RUN_FILE_ENV = "TFDBG_TUI_RUN_FILE"
# Status of a command line this module refuses (argparse's own), and of a program
# that cannot be started (Python's own for a missing file).
EXIT_USAGE = 2


def add_recording_options(parser: argparse.ArgumentParser) -> None:
    """The options that mirror `enable_dump_debug_info` (shared with `tfdbg-tui run`)."""
    parser.add_argument(
        "--mode",
        default=DEFAULT_MODE,
        choices=fmt.TENSOR_DEBUG_MODES,
        metavar="MODE",
        help="tensor_debug_mode: what is recorded of each "
        f"tensor, one of {', '.join(fmt.TENSOR_DEBUG_MODES)} (default "
        f"{DEFAULT_MODE})",
    )
    parser.add_argument(
        "--logdir",
        default=None,
        help=f"where to record (default: a new directory under "
        f"./{DEFAULT_LOGDIR_ROOT}/, printed at start)",
    )
    parser.add_argument(
        "--circular-buffer",
        type=int,
        default=DEFAULT_CIRCULAR_BUFFER,
        metavar="N",
        help="keep the latest N executions and graph traces "
        "(and the first alert's window); 0 or less keeps everything "
        f"(default {DEFAULT_CIRCULAR_BUFFER})",
    )
    parser.add_argument(
        "--op-regex",
        default=None,
        metavar="REGEX",
        help="trace only tensors of ops whose type matches",
    )
    parser.add_argument(
        "--dtypes",
        default=None,
        metavar="LIST",
        help="trace only tensors of these dtypes, comma-separated (float32,float16)",
    )
    parser.add_argument(
        "--stop-on-alert",
        action="store_true",
        help="stop the program at the first NaN or infinity "
        "(instrument.NonFiniteError, naming the op and line)",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="leave it on: record no op, watch each training step's "
        "update (instrument.watch), and at the first harmful NaN "
        "replay that step fully recorded and stop; --mode and the "
        "other recording options do not apply",
    )
    parser.add_argument(
        "--pdb",
        action="store_true",
        help="at the first harmful NaN or infinity, stop in pdb at your "
        "line that ran it, with `culprit` (the op, its values, the "
        "diagnosis); `continue` runs on, `quit` stops",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [OPTIONS] PROGRAM.py ARGS... | {PROG} [OPTIONS] -m MODULE ARGS...",
        description="Run a TensorFlow program with a tfdbg-tui dump enabled, unchanged "
        "(its arguments, __main__, working directory and exit status), then "
        "open the dump with tfdbg-tui LOGDIR.",
    )
    add_recording_options(parser)
    parser.add_argument(
        "--xla",
        choices=("on", "off"),
        default=None,
        help="build every tf.function with jit_compile on or off",
    )
    parser.add_argument(
        "--precision",
        default=None,
        metavar="POLICY",
        help="set Keras' global dtype policy first (mixed_float16)",
    )
    parser.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        default=None,
        metavar="MODULE",
        help="run a module, as python -m does",
    )
    parser.add_argument("program", nargs="?", metavar="PROGRAM.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
    return parser


def new_logdir(program: str, root: str = DEFAULT_LOGDIR_ROOT) -> str:
    """A new directory under ``root`` for one run of ``program``: "train-20261125-093621"
    (with "-2", "-3", ... when that exists)."""
    stem = re.sub(r"[^\w.-]", "_", os.path.splitext(os.path.basename(program))[0]) or "run"
    base = os.path.join(root, f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}")
    path, number = base, 1
    while os.path.exists(path):
        number += 1
        path = f"{base}-{number}"
    os.makedirs(path)
    return path


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m instrument``; returns the status when the program
    does not end the process itself (`SystemExit` passes through)."""
    args = build_parser().parse_args(argv)
    run_file = os.environ.pop(RUN_FILE_ENV, None)
    # Under `tfdbg-tui run` our lines speak for it.
    prog = "tfdbg-tui run" if run_file else PROG
    module = args.module[0] if args.module else None
    if module is None and args.program is None:
        print(f"{prog}: no program to run (PROGRAM.py ARGS or -m MODULE ARGS)", file=sys.stderr)
        return EXIT_USAGE
    target = module or args.program
    if module is None and not os.path.isfile(args.program):
        print(f"{prog}: no such program: {args.program}", file=sys.stderr)
        return EXIT_USAGE
    if module is not None and _find_module(module) is None:
        print(f"{prog}: no module named {module}", file=sys.stderr)
        return EXIT_USAGE
    observations = Observations()
    state: dict[str, Any] = {"own_call": False}
    try:
        state["run"] = _enable(args, target, observations, run_file, state, prog)
    except (ValueError, OSError, ImportError) as error:
        print(f"{prog}: cannot instrument the program: {error}", file=sys.stderr)
        return EXIT_USAGE
    _write_run_file(run_file, state, observations)
    sys.excepthook = _without_our_frames(sys.excepthook)
    try:
        if module is not None:
            sys.argv = [module, *args.module[1:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [args.program, *args.args]
            sys.path[0] = os.path.dirname(os.path.abspath(args.program))
            runpy.run_path(args.program, run_name="__main__")
    finally:
        observations.finish()
        _write_run_file(run_file, state, observations)
    return 0


def _find_module(module: str) -> Any:
    import importlib.util

    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def _enable(
    args: argparse.Namespace,
    target: str,
    observations: Observations,
    run_file: str | None,
    state: dict[str, Any],
    prog: str,
) -> str:
    from instrument import run_variants
    from instrument.api import enable_for_program

    logdir = args.logdir or new_logdir(target)
    if args.logdir is None:
        print(f"{prog}: recording into {logdir}", file=sys.stderr, flush=True)

    def replaced(ours: str, theirs: str) -> None:
        # Ours held only what ran before the program's call: nothing of the program's.
        shutil.rmtree(ours, ignore_errors=True)
        state.update(run=theirs, own_call=True)
        _write_run_file(run_file, state, observations)
        print(
            f"{prog}: the program enables its own dump, and its call wins: recording into {theirs}",
            file=sys.stderr,
            flush=True,
        )

    if getattr(args, "watch", False):
        from instrument.watch import watch_for_program

        path = watch_for_program(replaced, logdir)
        run_variants.watch_functions(observations, args.xla)
        if args.precision:
            run_variants.set_policy(observations, args.precision)
        return path
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()] if args.dtypes else None
    path = enable_for_program(
        replaced,
        logdir,
        prog,
        tensor_debug_mode=args.mode,
        circular_buffer_size=args.circular_buffer,
        op_regex=args.op_regex,
        tensor_dtypes=dtypes,
        stop_on_alert=args.stop_on_alert,
        on_alert="pdb" if args.pdb else None,
    )
    run_variants.watch_functions(observations, args.xla)
    if args.precision:
        run_variants.set_policy(observations, args.precision)
    return path


def _write_run_file(
    run_file: str | None, state: dict[str, Any], observations: Observations
) -> None:
    if run_file is None:
        return
    temporary = run_file + ".tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump({**state, **observations.as_dict()}, out)
    os.replace(temporary, run_file)


# The frames an uncaught exception passes through before the program's own.
_OUR_FILES = frozenset(
    {
        os.path.abspath(__file__),
        os.path.abspath(runpy.__file__),
        "<frozen runpy>",
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "__main__.py"),
    }
)


def _without_our_frames(hook: Any) -> Any:
    """An excepthook that shows the program's traceback as ``python PROGRAM.py``
    would: the frames of this runner and `runpy` above the program's are dropped."""

    def excepthook(
        kind: type[BaseException], error: BaseException, traceback: types.TracebackType | None
    ) -> None:
        while traceback is not None and _is_ours(traceback.tb_frame.f_code.co_filename):
            traceback = traceback.tb_next
        # Python's own hook prints the exception's `__traceback__`, not its argument.
        hook(kind, error.with_traceback(traceback), traceback)

    return excepthook


def _is_ours(filename: str) -> bool:
    return filename in _OUR_FILES or os.path.abspath(filename) in _OUR_FILES
