"""`tfdbg-tui demo [--logdir DIR]`: dump the example program in a subprocess, then open
the TUI on it.

The example (`instrument.examples.debug_mnist`) runs in a subprocess, so this
process never imports TensorFlow; its output is shown as it comes, with the time
elapsed, and the TUI opens once it has exited.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from tfdbg_tui.exit_codes import EXIT_DEMO_FAILED, EXIT_OK

EXAMPLE_MODULE = "instrument.examples.debug_mnist"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfdbg-tui demo",
        description="Run the example training program (a digit classifier whose loss "
        "takes log(0)) instrumented in FULL_HEALTH mode, then open the dump.",
    )
    parser.add_argument(
        "--logdir", default=None, help="where to dump (default: a new temporary directory)"
    )
    parser.add_argument(
        "--max_steps",
        type=int,
        default=None,
        help="training steps of the example (its default when omitted)",
    )
    parser.add_argument(
        "--no-mouse", action="store_true", help="do not capture the mouse in the TUI"
    )
    parser.add_argument(
        "--no-tui", action="store_true", help="only write the dump and print its path"
    )
    return parser


def example_command(logdir: str, max_steps: int | None = None) -> list[str]:
    """The command line that runs the instrumented example into `logdir`."""
    command = [
        sys.executable,
        "-m",
        EXAMPLE_MODULE,
        "--dump_dir",
        logdir,
        "--dump_tensor_debug_mode",
        "FULL_HEALTH",
        "--dump_circular_buffer_size",
        "-1",
    ]
    if max_steps is not None:
        command += ["--max_steps", str(max_steps)]
    return command


def run_example(logdir: str, max_steps: int | None = None, out=None) -> int:
    """Run the example, echoing its output with the elapsed time; returns its status."""
    out = out or sys.stderr
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    start = time.monotonic()
    print(
        f"tfdbg-tui demo: running the example into {logdir} (importing TensorFlow takes a while)…",
        file=out,
        flush=True,
    )
    process = subprocess.Popen(
        example_command(logdir, max_steps),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        env=env,
    )
    assert process.stdout is not None
    for line in process.stdout:
        print(f"  [{time.monotonic() - start:5.1f}s] {line.rstrip()}", file=out, flush=True)
    status = process.wait()
    print(
        f"tfdbg-tui demo: the example {'finished' if status == 0 else 'failed'} "
        f"after {time.monotonic() - start:.1f}s",
        file=out,
        flush=True,
    )
    return status


def main(argv: list[str] | None = None) -> int:
    """Entry point of `tfdbg-tui demo`; returns the exit status."""
    args = build_parser().parse_args(argv)
    logdir = args.logdir or tempfile.mkdtemp(prefix="tfdbg-tui-demo-")
    try:
        status = run_example(logdir, args.max_steps)
    except KeyboardInterrupt:
        print("tfdbg-tui demo: interrupted", file=sys.stderr)
        return EXIT_DEMO_FAILED
    if status != 0:
        print(
            f"tfdbg-tui: the example program failed (status {status}); is TensorFlow installed?",
            file=sys.stderr,
        )
        return EXIT_DEMO_FAILED
    if args.no_tui:
        print(logdir)
        return EXIT_OK
    from tfdbg_tui.commands.app_main import main as app_main

    return app_main([logdir] + (["--no-mouse"] if args.no_mouse else []))
