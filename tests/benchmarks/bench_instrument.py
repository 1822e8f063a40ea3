"""Instrumentation overhead and dump size: plain vs TensorFlow's dumper vs ours.

One training program (an MLP, by default 784-256-256-128-10 at batch 256, custom
training loop in ``tf.function``) runs under
``tf.debugging.experimental.enable_dump_debug_info`` and under
``instrument.enable_dump_debug_info``, for each tensor debug mode, each run in its own
subprocess that first runs the same program plain (`run_training`), all in one
invocation. For each run the time per step (after warm-up steps that include tracing;
the measured steps' total time, up to the dumper's ``disable_dump_debug_info``
returning, over their number), the process's CPU time per step over the same span
(all threads), and the bytes of the dump are reported, side by side; the overheads
are differences within each process, and each number is the median over the rounds.
TensorFlow runs on one intra-op and one inter-op thread unless ``--tf-threads`` says
otherwise (`TF_THREADS`).

Run it alone on the machine (other heavy processes skew step times)::

    python tests/benchmarks/bench_instrument.py            # every mode
    # the acceptance configuration (docs/performance.md): 200 steps, five rounds
    python tests/benchmarks/bench_instrument.py --steps 200 --rounds 5
    # the smaller model of the earlier measurements
    python tests/benchmarks/bench_instrument.py --sizes 128 128 128 128 10 --batch 128
    python tests/benchmarks/bench_instrument.py --steps 100 --modes NO_TENSOR FULL_HEALTH
    # the same layers trained by Keras' fit (Adam, a tf.data input) instead of the loop
    python tests/benchmarks/bench_instrument.py --program keras --modes CURT_HEALTH
    # the rotating steady state (circular buffer), ours only, with stop_on_alert:
    python tests/benchmarks/bench_instrument.py --circular-buffer-size 1000 \
        --tools ours --stop-on-alert

or through pytest: ``pytest -m benchmark tests/benchmarks/bench_instrument.py``.
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

MODES = (
    "NO_TENSOR",
    "CURT_HEALTH",
    "CONCISE_HEALTH",
    "FULL_HEALTH",
    "FULL_STATS",
    "SHAPE",
    "FULL_TENSOR",
)
# TensorFlow's dumper has no FULL_STATS: its run in that row is FULL_HEALTH, the mode
# FULL_STATS must cost no more than.
TF_MODE = {"FULL_STATS": "FULL_HEALTH"}
# FULL_TENSOR writes every tensor of every step (~1 MB a step here): fewer steps keep
# its dumps small; the per-step numbers stay comparable.
FULL_TENSOR_STEPS = 100
WARMUP_STEPS = 5
TOOLS = ("plain", "tf", "ours")
# The acceptance configuration: layer widths, input first, and the batch size.
SIZES = (784, 256, 256, 128, 10)
BATCH = 256
# TensorFlow's intra- and inter-op threads (0: its defaults, one per core each). Idle
# pool threads spin before they sleep, and that spinning is process CPU time: with
# the defaults on a 2-core VM the same plain program measured 9.9-12.3 ms of CPU a step
# across five runs, with one thread each 8.2-8.8 ms. One thread measures the work.
TF_THREADS = 1
# The measured programs: a custom training loop (the acceptance configuration), or the
# same layers trained by Keras' `fit` with Adam, as users write it (Keras runs the step
# in a while loop, and Adam's updates cut it at their conds: see docs/performance.md).
PROGRAMS = ("mlp", "keras")


def training_program(
    sizes: tuple[int, ...] = SIZES, batch: int = BATCH, tf_threads: int = TF_THREADS
) -> tuple[Any, Any, Any]:
    """The measured program: its training step (a plain function, for ``tf.function``)
    and its input batch ``x``, ``y``."""
    import numpy as np
    import tensorflow as tf

    if tf_threads:
        tf.config.threading.set_intra_op_parallelism_threads(tf_threads)
        tf.config.threading.set_inter_op_parallelism_threads(tf_threads)

    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(batch, sizes[0])).astype(np.float32))
    y = tf.constant(rng.integers(0, sizes[-1], size=batch).astype(np.int64))
    weights = [
        tf.Variable(tf.random.normal([a, b], stddev=0.05, seed=i))
        for i, (a, b) in enumerate(zip(sizes, sizes[1:]))
    ]
    biases = [tf.Variable(tf.zeros([b])) for b in sizes[1:]]
    variables = weights + biases

    def train_step(x, y):
        with tf.GradientTape() as tape:
            h = x
            for i, (w, b) in enumerate(zip(weights, biases)):
                h = tf.matmul(h, w) + b
                if i < len(weights) - 1:
                    h = tf.nn.relu(h)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h)
            )
        grads = tape.gradient(loss, variables)
        for v, g in zip(variables, grads):
            v.assign_sub(0.01 * g)
        return loss

    return train_step, x, y


def keras_program(
    sizes: tuple[int, ...] = SIZES,
    batch: int = BATCH,
    tf_threads: int = TF_THREADS,
    jit: bool = False,
) -> Any:
    """The Keras program: ``run(n)`` trains a fresh model's ``fit`` for ``n`` steps of
    one repeated batch (a ``tf.data`` input); the model and its traced functions are
    made by the first call of the function this returns, and reused by later ones."""
    import numpy as np
    import tensorflow as tf

    if tf_threads:
        tf.config.threading.set_intra_op_parallelism_threads(tf_threads)
        tf.config.threading.set_inter_op_parallelism_threads(tf_threads)
    import keras

    rng = np.random.default_rng(0)
    data = tf.data.Dataset.from_tensors(
        (
            rng.normal(size=(batch, sizes[0])).astype(np.float32),
            rng.integers(0, sizes[-1], size=batch).astype(np.int64),
        )
    ).repeat()

    def new_model() -> Any:
        layers = [keras.layers.Input((sizes[0],))]
        layers += [keras.layers.Dense(width, activation="relu") for width in sizes[1:-1]]
        model = keras.Sequential(layers + [keras.layers.Dense(sizes[-1])])
        model.compile(
            optimizer="adam",
            jit_compile=jit,
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )

        def run(steps: int) -> None:
            model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)

        return run

    return new_model


def run_training(
    config: str,
    logdir: str,
    steps: int,
    buffer_size: int = -1,
    stop_on_alert: bool = False,
    jit: bool = False,
    sizes: tuple[int, ...] = SIZES,
    batch: int = BATCH,
    tf_threads: int = TF_THREADS,
    program: str = "mlp",
) -> dict[str, float]:
    """The measured program; ``config`` is ``plain``, ``tf:<MODE>`` or ``ours:<MODE>``.

    An instrumented config first runs the plain program in the same process (its own
    ``tf.function``, traced and timed before the dumper is enabled), then enables the
    dumper and runs a fresh ``tf.function`` of the same step: the overhead is the
    difference within one process. Processes differ in speed (the same plain program
    measured 8.2-8.8 ms a step across five processes on the benchmark VM, pure Python
    loops up to 1.8x), and that difference was as large as the overheads measured.
    """
    import tensorflow as tf

    if program == "keras":
        new_model = keras_program(sizes, batch, tf_threads, jit)

        def fresh() -> Any:
            return new_model()
    else:
        train_step, x, y = training_program(sizes, batch, tf_threads)

        def fresh() -> Any:
            step_function = tf.function(train_step, jit_compile=jit or None)

            def run(n: int) -> None:
                for _ in range(n):
                    step_function(x, y).numpy()

            return run

    def timed(run, finish=None) -> tuple[float, float]:
        run(WARMUP_STEPS)
        # The measured time runs until the dump is complete: work a dumper defers (a
        # background drain that falls behind) counts, as its memory would.
        start, cpu_start = time.perf_counter(), time.process_time()
        run(steps)
        if finish is not None:
            finish()
        return ((time.perf_counter() - start) / steps, (time.process_time() - cpu_start) / steps)

    plain_s, plain_cpu_s = timed(fresh())
    result = {"plain_step_s": plain_s, "plain_cpu_step_s": plain_cpu_s, "steps": steps}
    if config == "plain":
        return result
    tool, mode = config.split(":")
    finish = enable_dumper(tool, mode, logdir, buffer_size, stop_on_alert)
    step_s, cpu_s = timed(fresh(), finish)
    result.update(step_s=step_s, cpu_step_s=cpu_s)
    return result


def enable_dumper(
    tool: str, mode: str, logdir: str, buffer_size: int = -1, stop_on_alert: bool = False
) -> Any:
    """Enable TensorFlow's dumper (``tool`` ``tf``) or ours (``ours``); return the
    function that disables it (the measured time runs until it returns)."""
    import tensorflow as tf

    if tool == "tf":
        tf.debugging.experimental.enable_dump_debug_info(
            logdir, tensor_debug_mode=mode, circular_buffer_size=buffer_size
        )
        return tf.debugging.experimental.disable_dump_debug_info
    import instrument

    # Only when asked: a checkout from before the argument existed runs too.
    kwargs: dict[str, Any] = {"stop_on_alert": True} if stop_on_alert else {}
    instrument.enable_dump_debug_info(
        logdir, tensor_debug_mode=mode, circular_buffer_size=buffer_size, **kwargs
    )
    return instrument.disable_dump_debug_info


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def measure(
    config: str,
    steps: int,
    workdir: str,
    buffer_size: int = -1,
    stop_on_alert: bool = False,
    jit: bool = False,
    sizes: tuple[int, ...] = SIZES,
    batch: int = BATCH,
    tf_threads: int = TF_THREADS,
    program: str = "mlp",
) -> dict[str, float]:
    """Run one config in a fresh interpreter; return its step time and dump bytes."""
    logdir = os.path.join(workdir, config.replace(":", "_"))
    os.makedirs(logdir)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            config,
            "--logdir",
            logdir,
            "--steps",
            str(steps),
            "--circular-buffer-size",
            str(buffer_size),
            "--batch",
            str(batch),
            "--tf-threads",
            str(tf_threads),
            "--program",
            program,
            "--sizes",
            *map(str, sizes),
        ]
        + (["--stop-on-alert"] if stop_on_alert else [])
        + (["--jit"] if jit else []),
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["dump_bytes"] = dir_bytes(logdir)
    # Measured, then deleted: kept dumps (a FULL_TENSOR run writes ~800 MB) would make
    # every later run write into memory the machine has not touched yet, which on a VM
    # cost ~15x the CPU per byte (docs/performance.md, "Method", "Fresh memory").
    shutil.rmtree(logdir, ignore_errors=True)
    return result


def benchmark(
    modes: tuple[str, ...],
    steps: int,
    rounds: int = 3,
    *,
    tools: tuple[str, ...] = TOOLS,
    buffer_size: int = -1,
    stop_on_alert: bool = False,
    jit: bool = False,
    sizes: tuple[int, ...] = SIZES,
    batch: int = BATCH,
    tf_threads: int = TF_THREADS,
    program: str = "mlp",
) -> list[dict[str, Any]]:
    """Measure every mode; each dumper runs ``rounds`` times, the two alternating.

    Each run measures its overhead within its own process (`run_training`); a mode's
    overhead is the median over its rounds, the plain time the median of every run's
    plain block. A tool left out of ``tools`` shows as nan.
    """
    rows = []
    dumpers = [t for t in tools if t != "plain"]
    with tempfile.TemporaryDirectory(prefix="bench-instrument-") as workdir:
        for mode in modes:
            mode_steps = min(steps, FULL_TENSOR_STEPS) if mode == "FULL_TENSOR" else steps
            results: dict[str, list[dict[str, float]]] = {t: [] for t in ("tf", "ours")}
            for round_index in range(rounds):
                for tool in dumpers:
                    tool_mode = TF_MODE.get(mode, mode) if tool == "tf" else mode
                    run_dir = os.path.join(workdir, f"{mode}-{round_index}")
                    os.makedirs(run_dir, exist_ok=True)
                    results[tool].append(
                        measure(
                            f"{tool}:{tool_mode}",
                            mode_steps,
                            run_dir,
                            buffer_size,
                            stop_on_alert,
                            jit,
                            sizes,
                            batch,
                            tf_threads,
                            program,
                        )
                    )
            row: dict[str, object] = {"mode": mode, "steps": mode_steps}
            plains = [r for runs in results.values() for r in runs]
            for key, field in (("plain_ms", "plain_step_s"), ("plain_cpu_ms", "plain_cpu_step_s")):
                row[key] = _median([r[field] for r in plains]) * 1e3
            for tool in ("tf", "ours"):
                runs = results[tool]
                row[f"{tool}_ms"] = _median([r["step_s"] for r in runs]) * 1e3
                row[f"{tool}_cpu_ms"] = _median([r["cpu_step_s"] for r in runs]) * 1e3
                row[f"{tool}_overhead_pct"] = 100 * _median(
                    [r["step_s"] / r["plain_step_s"] - 1 for r in runs]
                )
                row[f"{tool}_cpu_overhead_ms"] = 1e3 * _median([_overhead(r) for r in runs])
                row[f"{tool}_cpu_overhead_pct"] = 100 * _median(
                    [r["cpu_step_s"] / r["plain_cpu_step_s"] - 1 for r in runs]
                )
                row[f"{tool}_bytes"] = runs[0]["dump_bytes"] if runs else 0
                row[f"{tool}_cpu_overhead_range"] = _range([1e3 * _overhead(r) for r in runs])
            # Each round's ratio: the two runs of a round are neighbours in time, so a
            # machine whose costs drift (a VM's memory, docs/performance.md) moves
            # both; the ratio of the medians mixes rounds far apart.
            paired = [
                _overhead(o) / _overhead(t)
                for t, o in zip(results["tf"], results["ours"])
                if _overhead(t) > 0
            ]
            row["paired_ratio"] = _median(paired)
            row["paired_ratio_range"] = _range(paired)
            rows.append(row)
            print(format_row(row), flush=True)
    return rows


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _range(values: list[float]) -> tuple[float, float]:
    return (min(values), max(values)) if values else (math.nan, math.nan)


def _overhead(run: dict[str, float]) -> float:
    return run["cpu_step_s"] - run["plain_cpu_step_s"]


HEADER = (
    "| mode | steps | CPU ms/step plain / TF / ours | CPU overhead ms/step TF / ours "
    "(ratio) | overhead range TF; ours | ratio per round: median (range) "
    "| wall ms/step plain / TF / ours | TF dump bytes | our dump bytes (ratio) |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def format_row(row: dict[str, Any]) -> str:
    """One row of the results table; the targets are on the CPU overhead (docs/performance.md)."""
    tf_ms, ours_ms = row["tf_cpu_overhead_ms"], row["ours_cpu_overhead_ms"]
    ratio = ours_ms / tf_ms if tf_ms > 0 else math.nan
    return (
        f"| {row['mode']} | {row['steps']} | "
        f"{row['plain_cpu_ms']:.2f} / {row['tf_cpu_ms']:.2f} / {row['ours_cpu_ms']:.2f} | "
        f"{tf_ms:+.2f} / {ours_ms:+.2f} ({ratio:.2f}) | "
        f"{_span(row.get('tf_cpu_overhead_range'))}; "
        f"{_span(row.get('ours_cpu_overhead_range'))} | "
        f"{row.get('paired_ratio', math.nan):.2f} "
        f"({_span(row.get('paired_ratio_range'))}) | "
        f"{row['plain_ms']:.2f} / {row['tf_ms']:.2f} / {row['ours_ms']:.2f} | "
        f"{row['tf_bytes']:,} | {row['ours_bytes']:,} "
        f"({row['ours_bytes'] / max(row['tf_bytes'], 1):.2f}) |"
    )


def _span(bounds: object) -> str:
    low, high = bounds if isinstance(bounds, tuple) else (math.nan, math.nan)
    return f"{low:.2f}-{high:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=list(SIZES),
        help="layer widths, input first (default: %(default)s)",
    )
    parser.add_argument(
        "--batch", type=int, default=BATCH, help="batch size (default: %(default)s)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="runs per dumper; the median counts")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument(
        "--tools",
        nargs="+",
        default=list(TOOLS),
        choices=TOOLS,
        help="which dumpers to run (default: both; plain runs in each)",
    )
    parser.add_argument(
        "--circular-buffer-size",
        type=int,
        default=-1,
        help="for both dumpers (default -1: keep everything)",
    )
    parser.add_argument(
        "--stop-on-alert",
        action="store_true",
        help="ours with stop_on_alert=True (drains after every call)",
    )
    parser.add_argument(
        "--jit",
        action="store_true",
        help="compile the step with XLA (jit_compile=True); TensorFlow's "
        "dumper fails on it: use --tools plain ours",
    )
    parser.add_argument(
        "--tf-threads",
        type=int,
        default=TF_THREADS,
        help="TensorFlow's intra- and inter-op threads; 0: its defaults "
        "(default: %(default)s, see TF_THREADS)",
    )
    parser.add_argument(
        "--program",
        default="mlp",
        choices=PROGRAMS,
        help="the training loop (mlp, the acceptance configuration) or "
        "Keras' fit with Adam (keras); default: %(default)s",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--logdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(
            json.dumps(
                run_training(
                    args.worker,
                    args.logdir,
                    args.steps,
                    args.circular_buffer_size,
                    args.stop_on_alert,
                    args.jit,
                    tuple(args.sizes),
                    args.batch,
                    args.tf_threads,
                    args.program,
                )
            )
        )
        return 0
    print(
        f"# {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}: MLP {'-'.join(map(str, args.sizes))}"
        f"{' (Keras fit, Adam)' if args.program == 'keras' else ''}, batch "
        f"{args.batch}; median of {args.rounds} runs per dumper, alternating, each "
        f"{args.steps} plain steps then {args.steps} instrumented ones in one process "
        f"(after {WARMUP_STEPS} warm-up steps each), timed until the dump is complete; "
        f"circular_buffer_size={args.circular_buffer_size}; TensorFlow "
        f"threads: {args.tf_threads or 'default'}"
        + (", ours with stop_on_alert" if args.stop_on_alert else "")
        + (", step compiled with XLA" if args.jit else "")
    )
    print(HEADER, flush=True)
    benchmark(
        tuple(args.modes),
        args.steps,
        args.rounds,
        tools=tuple(args.tools),
        buffer_size=args.circular_buffer_size,
        stop_on_alert=args.stop_on_alert,
        jit=args.jit,
        sizes=tuple(args.sizes),
        batch=args.batch,
        tf_threads=args.tf_threads,
        program=args.program,
    )
    return 0


@pytest.mark.benchmark
def test_overhead_and_size_against_tf_dumper() -> None:
    """Our overhead and dump size are at most TF's in NO_TENSOR and FULL_HEALTH."""
    rows = benchmark(("NO_TENSOR", "FULL_HEALTH"), 100, rounds=2)
    for row in rows:
        assert row["ours_overhead_pct"] <= max(row["tf_overhead_pct"], 5.0), row
        assert row["ours_bytes"] <= row["tf_bytes"] / 2, row


if __name__ == "__main__":
    sys.exit(main())
