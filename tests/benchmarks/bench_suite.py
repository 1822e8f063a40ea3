"""The overhead suite: real Keras fits, plain vs TensorFlow's dumper vs ours, per mode.

    python -m tests.benchmarks.bench_suite                       # every model and mode
    python -m tests.benchmarks.bench_suite --models conv --modes CURT_HEALTH FULL_HEALTH
    python -m tests.benchmarks.bench_suite --rounds 5 --json results.json

Models (`MODELS`), each trained on one repeated random batch (a ``tf.data`` input)
with one TensorFlow thread (`bench_instrument.TF_THREADS`):

- ``conv``: two Conv2D(3x3, relu) + BatchNormalization + MaxPooling blocks (32, 64
  filters), Flatten, Dropout(0.5), Dense(10); Adam; batch 32 of 28x28x1;
- ``lstm``: LSTM(32) over 20 steps of 16 features (the recurrent loop, not cuDNN),
  Dense(10); Adam; batch 32;
- ``transformer``: one encoder block over 32 tokens of 64 features: MultiHeadAttention
  (4 heads of 16), residual + LayerNormalization, Dense(128, relu) + Dense(64), residual
  + LayerNormalization, average pooling, Dense(10); Adam; batch 32;
- ``mlp``: bench_instrument.py's acceptance program (784-256-256-128-10, batch 256, a
  custom training loop in ``tf.function``, SGD; the same layers under Keras' ``fit``:
  ``bench_instrument.py --program keras``).

The method is bench_instrument.py's: each process measures the plain program and then
the instrumented one, so an overhead is a difference within one process. Here one
process runs one model under one dumper for every mode: for each mode, `--steps` plain
steps of a model traced before any dumper was enabled, then the dumper is enabled, a
fresh model fits `WARMUP_STEPS` + `--steps` steps (the time counts from the first step
after the warm-up, which includes the tracing, until ``disable_dump_debug_info``
returns, so work a dumper defers counts), and the dumper is disabled. Processes of the
two dumpers alternate, `--rounds` each; every number in the table is the median over
the rounds of process CPU time per step (all threads), and each ratio is the median
of the rounds' ratios of our overhead to TensorFlow's (a round's two processes are
neighbours in time). TensorFlow's dumper has no FULL_STATS: that row compares with its
FULL_HEALTH (the target). ``FULL_TENSOR/1000`` is FULL_TENSOR under the API's default
``circular_buffer_size=1000`` (for both dumpers); every other row keeps everything
(``-1``).

The cells are short (tens of steps): the suite is for comparisons within one run; the
machine's load moves whole rounds, so read ratios and medians, not single numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import pytest

from tests.benchmarks.bench_instrument import (
    TF_THREADS,
    WARMUP_STEPS,
    dir_bytes,
    enable_dumper,
    training_program,
)

# Each mode's row: the mode, and the circular buffer both dumpers run with.
MODES = (
    "NO_TENSOR",
    "CURT_HEALTH",
    "CONCISE_HEALTH",
    "FULL_HEALTH",
    "SHAPE",
    "FULL_STATS",
    "FULL_TENSOR",
    "FULL_TENSOR/1000",
)
MODELS = ("conv", "lstm", "transformer", "mlp")
# Measured steps per cell: about a quarter to half a second of plain work each.
STEPS = {"conv": 30, "lstm": 30, "transformer": 30, "mlp": 150}
# The targets (DESIGN section 5): our overhead at most this times TensorFlow's in the
# same mode (FULL_STATS: against TensorFlow's FULL_HEALTH).
RATIO_TARGETS = {
    "NO_TENSOR": 1.0,
    "CURT_HEALTH": 0.5,
    "CONCISE_HEALTH": 0.5,
    "FULL_HEALTH": 0.5,
    "SHAPE": 1.0,
    "FULL_STATS": 1.0,
    "FULL_TENSOR": 1.0,
    "FULL_TENSOR/1000": 1.0,
}
# CURT_HEALTH, the always-on tier: at most this fraction of the plain step.
CURT_HEALTH_STEP_TARGET = 0.10


def split_mode(row_mode: str) -> tuple[str, int]:
    """``FULL_TENSOR/1000`` -> (``FULL_TENSOR``, 1000); a bare mode keeps everything."""
    mode, _, buffer = row_mode.partition("/")
    return mode, int(buffer) if buffer else -1


def tf_row_mode(row_mode: str) -> str:
    """The row TensorFlow's dumper runs for ``row_mode`` (it has no FULL_STATS)."""
    return "FULL_HEALTH" if row_mode == "FULL_STATS" else row_mode


def keras_model(name: str) -> tuple[Any, Any]:
    """A fresh compiled Keras model of ``name`` and its input (a repeated batch)."""
    import keras
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    layers = keras.layers
    if name == "conv":
        x = rng.normal(size=(32, 28, 28, 1)).astype(np.float32)
        model = keras.Sequential(
            [
                layers.Input((28, 28, 1)),
                layers.Conv2D(32, 3, activation="relu"),
                layers.BatchNormalization(),
                layers.MaxPooling2D(),
                layers.Conv2D(64, 3, activation="relu"),
                layers.BatchNormalization(),
                layers.MaxPooling2D(),
                layers.Flatten(),
                layers.Dropout(0.5),
                layers.Dense(10),
            ]
        )
    elif name == "lstm":
        x = rng.normal(size=(32, 20, 16)).astype(np.float32)
        model = keras.Sequential(
            [layers.Input((20, 16)), layers.LSTM(32, use_cudnn=False), layers.Dense(10)]
        )
    elif name == "transformer":
        x = rng.normal(size=(32, 32, 64)).astype(np.float32)
        tokens = layers.Input((32, 64))
        attended = layers.MultiHeadAttention(num_heads=4, key_dim=16)(tokens, tokens)
        h = layers.LayerNormalization()(tokens + attended)
        ffn = layers.Dense(64)(layers.Dense(128, activation="relu")(h))
        h = layers.LayerNormalization()(h + ffn)
        logits = layers.Dense(10)(layers.GlobalAveragePooling1D()(h))
        model = keras.Model(tokens, logits)
    else:
        raise ValueError(f"unknown model {name!r}")
    y = rng.integers(0, 10, size=len(x)).astype(np.int64)
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model, tf.data.Dataset.from_tensors((x, y)).repeat()


def fresh_program(name: str) -> Any:
    """``run(warmup, steps) -> (wall, cpu)`` of a freshly built program: trains
    ``warmup`` + ``steps`` steps and returns the clocks read after the warm-up."""
    if name == "mlp":
        import tensorflow as tf

        train_step, x, y = training_program(tf_threads=0)
        step_function = tf.function(train_step)

        def run_loop(warmup: int, steps: int) -> tuple[float, float]:
            for _ in range(warmup):
                step_function(x, y).numpy()
            clocks = time.perf_counter(), time.process_time()
            for _ in range(steps):
                step_function(x, y).numpy()
            return clocks

        return run_loop
    import keras

    model, data = keras_model(name)

    class StartClock(keras.callbacks.Callback):
        clocks = (math.nan, math.nan)

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            if batch == self.warmup:
                self.clocks = time.perf_counter(), time.process_time()

    def run_fit(warmup: int, steps: int) -> tuple[float, float]:
        clock = StartClock()
        clock.warmup = warmup
        model.fit(data, steps_per_epoch=warmup + steps, epochs=1, verbose=0, callbacks=[clock])
        return clock.clocks

    return run_fit


def run_worker(
    model: str, tool: str, row_modes: list[str], steps: int, workdir: str
) -> list[dict[str, Any]]:
    """One process's cells: for each mode, plain then instrumented (`tool`)."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(TF_THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(TF_THREADS)
    plain = fresh_program(model)
    plain(WARMUP_STEPS, 0)
    cells = []
    for row_mode in row_modes:
        start = plain(0, steps)
        plain_wall, plain_cpu = time.perf_counter() - start[0], time.process_time() - start[1]
        mode, buffer_size = split_mode(row_mode)
        logdir = os.path.join(workdir, f"{tool}-{row_mode.replace('/', '-')}")
        program = fresh_program(model)
        finish = enable_dumper(tool, mode, logdir, buffer_size)
        start = program(WARMUP_STEPS, steps)
        finish()
        wall, cpu = time.perf_counter() - start[0], time.process_time() - start[1]
        cells.append(
            {
                "mode": row_mode,
                "plain_cpu_ms": plain_cpu / steps * 1e3,
                "plain_ms": plain_wall / steps * 1e3,
                "cpu_ms": cpu / steps * 1e3,
                "ms": wall / steps * 1e3,
                "dump_bytes": dir_bytes(logdir),
            }
        )
        # Measured, then deleted (bench_instrument.measure says why).
        shutil.rmtree(logdir, ignore_errors=True)
    return cells


def measure(
    model: str, tool: str, row_modes: list[str], steps: int, workdir: str
) -> list[dict[str, Any]]:
    """`run_worker` in a fresh interpreter."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.benchmarks.bench_suite",
            "--worker",
            tool,
            "--models",
            model,
            "--steps",
            str(steps),
            "--workdir",
            workdir,
            "--modes",
            *row_modes,
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    cells: list[dict[str, Any]] = json.loads(out.stdout.strip().splitlines()[-1])
    return cells


def suite(
    models: list[str],
    row_modes: list[str],
    rounds: int,
    steps: int | None = None,
    report: Any = print,
) -> list[dict[str, Any]]:
    """Measure every model in every mode; ``report`` is given each row when done."""
    tf_modes = list(dict.fromkeys(tf_row_mode(m) for m in row_modes))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as workdir:
        for model in models:
            model_steps = steps or STEPS[model]
            runs: dict[str, list[dict[str, dict[str, Any]]]] = {"tf": [], "ours": []}
            for round_index in range(rounds):
                order = ("tf", "ours") if round_index % 2 == 0 else ("ours", "tf")
                for tool in order:
                    cells = measure(
                        model, tool, tf_modes if tool == "tf" else row_modes, model_steps, workdir
                    )
                    runs[tool].append({cell["mode"]: cell for cell in cells})
            for row_mode in row_modes:
                row = summarise(
                    model,
                    row_mode,
                    model_steps,
                    [r[tf_row_mode(row_mode)] for r in runs["tf"]],
                    [r[row_mode] for r in runs["ours"]],
                )
                rows.append(row)
                report(format_row(row))
    return rows


def summarise(
    model: str,
    row_mode: str,
    steps: int,
    tf_cells: list[dict[str, Any]],
    our_cells: list[dict[str, Any]],
) -> dict[str, Any]:
    """One row: medians over the rounds; overheads within each process."""

    def overhead(cell: dict[str, Any]) -> float:
        return float(cell["cpu_ms"] - cell["plain_cpu_ms"])

    def median(values: list[float]) -> float:
        return statistics.median(values) if values else math.nan

    plain = median([c["plain_cpu_ms"] for c in tf_cells + our_cells])
    tf_ms, ours_ms = (
        median([overhead(c) for c in tf_cells]),
        median([overhead(c) for c in our_cells]),
    )
    ratios = [overhead(o) / overhead(t) for t, o in zip(tf_cells, our_cells) if overhead(t) > 0]
    ours_pct = median([overhead(c) / c["plain_cpu_ms"] for c in our_cells]) * 100
    tf_pct = median([overhead(c) / c["plain_cpu_ms"] for c in tf_cells]) * 100
    ratio = median(ratios)
    met = ratio <= RATIO_TARGETS[row_mode]
    if row_mode == "CURT_HEALTH":
        met = met and ours_pct <= CURT_HEALTH_STEP_TARGET * 100
    return {
        "model": model,
        "mode": row_mode,
        "steps": steps,
        "plain_cpu_ms": plain,
        "tf_overhead_ms": tf_ms,
        "ours_overhead_ms": ours_ms,
        "tf_pct": tf_pct,
        "ours_pct": ours_pct,
        "ratio": ratio,
        "ratio_range": (min(ratios), max(ratios)) if ratios else (math.nan, math.nan),
        "target": RATIO_TARGETS[row_mode],
        "met": met,
        "tf_bytes": median([c["dump_bytes"] for c in tf_cells]),
        "ours_bytes": median([c["dump_bytes"] for c in our_cells]),
    }


HEADER = (
    "| model | mode | plain CPU ms/step | overhead TF | overhead ours | ratio "
    "(per round) | target | met | dump MB TF / ours |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def format_row(row: dict[str, Any]) -> str:
    low, high = row["ratio_range"]
    target = f"<= {row['target']:g}"
    if row["mode"] == "CURT_HEALTH":
        target += f", <= +{CURT_HEALTH_STEP_TARGET:.0%}"
    if row["mode"] == "FULL_STATS":
        target += " of TF's FULL_HEALTH"
    return (
        f"| {row['model']} | {row['mode']} | {row['plain_cpu_ms']:.2f} | "
        f"{row['tf_overhead_ms']:+.2f} ms ({row['tf_pct']:+.0f}%) | "
        f"{row['ours_overhead_ms']:+.2f} ms ({row['ours_pct']:+.0f}%) | "
        f"{row['ratio']:.2f} ({low:.2f}-{high:.2f}) | {target} | "
        f"{'yes' if row['met'] else 'NO'} | "
        f"{row['tf_bytes'] / 1e6:.1f} / {row['ours_bytes'] / 1e6:.1f} |"
    )


def describe_machine() -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    return (
        f"{platform.node()}, {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument(
        "--rounds", type=int, default=3, help="processes per dumper and model; medians count"
    )
    parser.add_argument(
        "--steps", type=int, help="measured steps per cell (default: per model, STEPS)"
    )
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(
            json.dumps(
                run_worker(args.models[0], args.worker, args.modes, args.steps, args.workdir)
            )
        )
        return 0
    start = time.perf_counter()
    print(
        f"# {describe_machine()}; median of {args.rounds} rounds, process CPU time "
        f"per step, one TensorFlow thread"
    )
    print(HEADER, flush=True)
    rows = suite(
        args.models,
        args.modes,
        args.rounds,
        args.steps,
        report=lambda line: print(line, flush=True),
    )
    print(
        f"# {time.perf_counter() - start:.0f} s; load average at the end {os.getloadavg()[0]:.2f}"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


@pytest.mark.benchmark
def test_suite_curt_health() -> None:
    """CURT_HEALTH on every model: at most half TensorFlow's overhead and +10% a step."""
    rows = suite(list(MODELS), ["CURT_HEALTH"], rounds=2)
    for row in rows:
        assert row["met"], row


if __name__ == "__main__":
    sys.exit(main())
