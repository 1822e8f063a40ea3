"""Start to root cause on screen, in a real terminal, on a dump of 1M traces and 1M
executions.

    python tests/benchmarks/bench_root_cause.py [--executions 1000000] [--repeats 5]
    pytest -m benchmark tests/benchmarks/bench_root_cause.py   # a smaller run

The dump is synthetic (`DumpWriter`, FULL_HEALTH): eager ops, with a `tf.function`
call every 50th execution whose 50 graph traces (one each of 50 ops) ran in it, so
1M executions come with about 1M traces. Every call has an attention mask written as
-inf (``mask/Const``, carried on by ``mask/Select`` into a finite ``Softmax``): two
contained (deliberate) alerts per call from the first, 40,000 at 1M, which the harm
classification (`reader.analysis.hunt.harm`) must see past. The first harmful NaN is a
graph trace of the op ``culprit/Log`` three fifths of the way in; the program then
keeps going NaN, as real runs do (every later call alerts), so the alerts and root
cause have work to do.

Each repeat starts ``tfdbg-tui LOGDIR`` (the installed entry point's module, in a new
Python process: imports included, from bytecode as an installed package has it: the
packages are byte-compiled first, since a checkout run with PYTHONDONTWRITEBYTECODE
would compile ~100 modules from source at every start, ~0.2 s) in a detached tmux
session at 120x40, and polls the pane every 10 ms until the culprit's op name is on
screen: the time from starting the process to that frame is "start to root cause";
the time to the first frame with a pane title on it is "start to first frame".
Requires tmux.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from instrument.dump.writer import DumpWriter
from reader import format as fmt

CALL_EVERY = 50
OPS = 50
CULPRIT = "culprit/Log"
SIZE = (120, 40)


def write_dump(logdir: str, executions: int, nan_from: float = 0.6) -> str:
    """A finished FULL_HEALTH run whose culprit goes NaN ``nan_from`` of the way in;
    returns its path."""
    writer = DumpWriter(
        logdir, {"tensor_debug_mode": fmt.FULL_HEALTH, "eager_mode": True}, flush_interval_s=None
    )
    device = writer.add_device("/job:localhost/replica:0/task:0/device:CPU:0")
    user = writer.add_source_file(
        "/home/me/train.py",
        [
            "import tensorflow as tf",
            "",
            "@tf.function",
            "def train_step(x):",
            "    y = tf.math.log(x, name='culprit')",
            "    return y * 2",
        ],
        library=False,
    )
    stack = writer.add_stack([writer.add_frame(user, 5, "train_step")])
    graph = writer.add_graph("train_step", None, function_name="__inference_train_step_7")
    mask = {
        1: ("Const", "mask/Const", []),
        2: ("SelectV2", "mask/Select", ["layer_0/op:0", "mask/Const:0", "layer_0/op:0"]),
        3: ("Softmax", "layer_3/op", ["mask/Select:0"]),
    }
    for op in range(OPS):
        name = CULPRIT if op == OPS // 2 else f"layer_{op}/op"
        op_type, name, inputs = mask.get(
            op,
            ("Log" if op == OPS // 2 else "MatMul", name, [f"layer_{op - 1}/op:0"] if op else []),
        )
        writer.add_op(
            graph_id=graph,
            op_type=op_type,
            op_name=name,
            inputs=inputs,
            num_outputs=1,
            output_dtypes=[1],
            device_id=None,
            stack_id=stack,
            trace_points=[op],
        )
    finite = [1.0, 2.0, 4096.0, 0.0, 0.0, 0.0, 1000.0, 96.0, 3000.0]
    nan_row = finite[:5] + [1.0] + finite[6:]
    rows = np.tile(np.array(finite), (OPS, 1))
    rows[1:3, 3] = 64.0  # the mask's -inf, contained
    first_nan_call = int(executions * nan_from) // CALL_EVERY
    op_types = ["MatMul", "AddV2", "Relu", "Mul", "Cast", "ReadVariableOp", "Sum"]
    tensor = 0
    for i in range(executions):
        if i % CALL_EVERY == CALL_EVERY - 1:
            call = i // CALL_EVERY
            step_rows = rows
            if call >= first_nan_call:
                step_rows = rows.copy()
                step_rows[OPS // 2 :] = nan_row  # the culprit, then what it feeds
            writer.add_traces(np.arange(OPS, dtype=np.int32), summaries=step_rows, step=i)
            writer.add_execution(
                op_type="__inference_train_step_7",
                graph_id=graph,
                input_ids=[tensor - 1],
                output_ids=[tensor],
                device_ids=[device],
                output_dtypes=[1],
                stack_id=stack,
                summaries=[nan_row if call >= first_nan_call else finite],
                call_ordinal=call,
            )
        else:
            writer.add_execution(
                op_type=op_types[i % len(op_types)],
                graph_id=None,
                input_ids=[tensor - 1] if tensor else [],
                output_ids=[tensor],
                device_ids=[device],
                output_dtypes=[1],
                stack_id=stack,
                summaries=[finite],
            )
        tensor += 1
    writer.close()
    return writer.path


# A pane title: the app's first frame is on screen (the six panes, "opening…" or
# already the landing).
FIRST_FRAME = "Graph Execution"


def start_to_root_cause(logdir: str, timeout: float = 60.0) -> tuple[float, float]:
    """Seconds from starting ``tfdbg-tui LOGDIR`` in tmux until its first frame is on
    screen, and until the culprit is."""
    session = f"bench_root_cause_{os.getpid()}"
    command = f"{sys.executable} -m tfdbg_tui.cli {logdir}"
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    start = time.perf_counter()
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            str(SIZE[0]),
            "-y",
            str(SIZE[1]),
            command,
        ],
        check=True,
    )
    first_frame = None
    try:
        while time.perf_counter() - start < timeout:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
            ).stdout
            now = time.perf_counter() - start
            if first_frame is None and FIRST_FRAME in screen:
                first_frame = now
            if CULPRIT in screen:
                return first_frame if first_frame is not None else now, now
            time.sleep(0.01)
        raise TimeoutError(f"{CULPRIT} not on screen after {timeout} s:\n{screen}")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def compile_packages() -> None:
    """Byte-compile the app's packages, as installing them does (pip compiles a
    wheel's modules; ``compileall`` writes even under PYTHONDONTWRITEBYTECODE)."""
    import reader
    import tfdbg_tui

    for package in (reader, tfdbg_tui):
        assert package.__file__ is not None
        compileall.compile_dir(os.path.dirname(package.__file__), quiet=1)


def measure(executions: int, repeats: int) -> dict:
    workdir = tempfile.mkdtemp(prefix="bench_root_cause_")
    try:
        started = time.perf_counter()
        path = write_dump(workdir, executions)
        written = time.perf_counter() - started
        import reader

        started = time.perf_counter()
        dump = reader.DumpReader(path)
        opened = time.perf_counter() - started
        started = time.perf_counter()
        harm = dump.harm()
        classified = time.perf_counter() - started
        started = time.perf_counter()
        cause = dump.root_cause()
        analysed = time.perf_counter() - started
        assert cause is not None and cause.op is not None and cause.op.name == CULPRIT, cause
        contained = harm.counts["deliberate"]
        counts = (dump.num_executions, dump.num_traces)
        dump.close()
        compile_packages()
        frames, times = zip(*(start_to_root_cause(workdir) for _ in range(repeats)))
        return {
            "executions": counts[0],
            "traces": counts[1],
            "write_s": written,
            "reader_open_s": opened,
            "harm_s": classified,
            "harm_share_of_open": classified / opened,
            "contained": contained,
            "harmful": harm.harmful,
            "root_cause_s": analysed,
            "start_to_first_frame_s": list(frames),
            "first_frame_median_s": statistics.median(frames),
            "start_to_root_cause_s": list(times),
            "median_s": statistics.median(times),
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.executions, args.repeats), indent=1))
    return 0


@pytest.mark.benchmark
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_root_cause_on_screen():
    result = measure(100_000, repeats=2)
    assert result["traces"] == 100_000 // CALL_EVERY * OPS
    assert result["contained"] == 2 * 100_000 // CALL_EVERY
    assert result["median_s"] < 10


if __name__ == "__main__":
    sys.exit(main())
