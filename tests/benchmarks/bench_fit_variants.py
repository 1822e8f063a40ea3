"""Where a mode's overhead goes on one of the suite's Keras fits: variants side by side.

    python -m tests.benchmarks.bench_fit_variants lstm FULL_HEALTH \\
        --variants tf current kernels_only constant_rows
    python -m tests.benchmarks.bench_fit_variants transformer CURT_HEALTH \\
        --variants tf current read_floor no_tensor
    python -m tests.benchmarks.bench_fit_variants conv FULL_TENSOR --buffer 1000 \\
        --variants tf current flush_2s flush_2s_no_scan

One process fits a fresh model of `bench_suite.MODELS` per variant and round (the
variants take turns, `--rounds` times), each after `--steps` plain steps of a model
traced before any dumper was enabled; a cell is its CPU time per step (all threads)
minus that of the plain steps just before it, as in `bench_suite`. The variants patch
the summary builders of ``instrument.summaries`` or the writer while their model is
traced, so each undoes one choice of docs/instrument.md, "How summaries are computed":

- ``tf``: TensorFlow's dumper in the same mode; ``current``: ours as it is;
  ``no_tensor``: ours in NO_TENSOR (the records, no value read);
- ``v1_rows``: FULL_HEALTH's small tensors by ``DebugNumericSummary`` (counts, min and
  max in one op), cut and joined to the trace point;
- ``kernels_only``: FULL_HEALTH's small tensors by ``DebugNumericSummaryV2`` alone (no
  magnitude); ``constant_rows``: no summary op at all (the stack, the enqueue, the
  records);
- ``read_floor``: one read (a ``Sum``) of every traced tensor whose result its row
  takes, and nothing else: no kernel, no check, no ``cond``;
- ``body_kernels`` / ``body_stock``: control-flow bodies take every tensor's kernel /
  the batch's stock route in every mode;
- ``bytes_each``: FULL_TENSOR batches of 4-byte words (float32, int32, int64...) and
  bools packed as the others are, each tensor bitcast to bytes and flattened (two ops a
  tensor), not seen as float32 words (`value_batches._concat_bytes`);
- ``flush_2s`` (the writer's flush every 2 s, not `writer.FLUSH_INTERVAL_S`),
  ``no_scan`` (FULL_TENSOR values not looked at for the first alert), and the two
  joined by ``_`` (``flush_2s_no_scan``);
- ``capture_floor``: FULL_TENSOR values packed in the graph, queued and dequeued onto
  the host as they are, and dropped there: no scan, no record, nothing written (what
  taking every value out of the graph costs by this route, and nothing else).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.benchmarks.bench_instrument import TF_THREADS, WARMUP_STEPS, enable_dumper
from tests.benchmarks.bench_suite import MODELS, fresh_program

VARIANTS = (
    "tf",
    "current",
    "no_tensor",
    "v1_rows",
    "kernels_only",
    "constant_rows",
    "read_floor",
    "body_kernels",
    "body_stock",
    "bytes_each",
    "flush_2s",
    "no_scan",
    "flush_2s_no_scan",
    "capture_floor",
)


def bytes_each(tensors: list[Any], words: bool) -> Any:
    """`value_batches._concat_bytes` with every tensor seen as bytes (two ops each)."""
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import array_ops, math_ops

    from instrument.tf_internals.graph_edits import defer_variable_writes

    if not tensors:
        return array_ops.zeros([0], dtypes.uint8)
    # A batch of words carries its bools as float32 words (`value_batches.as_words`).
    bools = dtypes.float32 if words else dtypes.uint8
    values = array_ops.concat(
        [
            array_ops.reshape(
                array_ops.bitcast(
                    math_ops.cast(t, bools) if t.dtype == dtypes.bool else t, dtypes.uint8
                ),
                [-1],
            )
            for t in tensors
        ],
        0,
    )
    if values.op.type == "ConcatV2":
        defer_variable_writes(values.op, tensors)
    return values


@contextlib.contextmanager
def patched(variant: str) -> Iterator[None]:
    """Ours with ``variant``'s change, while the block runs."""
    from instrument import summaries
    from instrument.dump import writer
    from instrument.summaries import raw_rows, summary_ops
    from instrument.tracing import trace_queue, value_batches, value_drain
    from reader import format as fmt

    saved = [
        (summary_ops, "exact_row", summary_ops.exact_row),
        (summary_ops, "tensor_summary", summary_ops.tensor_summary),
        (trace_queue.TraceQueue, "batch_row", trace_queue.TraceQueue.batch_row),
        (value_batches.PackedBatch, "holds_nonfinite", value_batches.PackedBatch.holds_nonfinite),
        (writer, "values_alert", writer.values_alert),
        (value_batches, "_concat_bytes", value_batches._concat_bytes),
        (value_drain.ValueDrain, "drain", value_drain.ValueDrain.drain),
        (
            writer.DumpWriter.__init__,
            "__kwdefaults__",
            dict(writer.DumpWriter.__init__.__kwdefaults__ or {}),
        ),
    ]
    exact_row, tensor_summary = summary_ops.exact_row, summary_ops.tensor_summary
    batch_row = trace_queue.TraceQueue.batch_row

    def constant(mode: str, trace_point: int) -> Any:
        return raw_rows.float64_constant(
            [float(trace_point)] + [0.0] * (raw_rows.RAW_WIDTH[mode] - 1)
        )

    def other_rows(mode: str, tensor: Any, trace_point: int) -> Any:
        if mode != fmt.FULL_HEALTH:
            return exact_row(mode, tensor, trace_point)
        if variant == "v1_rows":
            return raw_rows._v1_row(tensor, trace_point)
        if variant == "kernels_only":
            return raw_rows._concat(
                [
                    raw_rows._kernel(tensor, mode, trace_point),
                    raw_rows.float64_constant([float("nan")] + [0.0] * 4),
                ]
            )
        return constant(mode, trace_point)

    def read_floor(mode: str, tensor: Any, trace_point: int, *, batched: bool = False) -> Any:
        from tensorflow.python.framework import dtypes, ops
        from tensorflow.python.ops import math_ops

        del batched
        with ops.name_scope("tfdbg_tui_floor"):
            read = math_ops.cast(math_ops.reduce_sum(raw_rows.as_wide(tensor)), dtypes.float64)
            return summary_ops.TensorSummary(constant(mode, trace_point) + 0.0 * read)

    def body_rows(self: Any, tensor: Any, trace_point: int, *, in_body: bool = False) -> Any:
        from tensorflow.python.framework import ops

        if self.mode not in summaries.SUMMARY_MODES or not in_body:
            return batch_row(self, tensor, trace_point, in_body=in_body)
        with ops.control_dependencies(None):
            return tensor_summary(self.mode, tensor, trace_point, batched=variant == "body_stock")

    if variant in ("v1_rows", "kernels_only", "constant_rows"):
        summary_ops.exact_row = other_rows
    if variant == "read_floor":
        summary_ops.tensor_summary = read_floor
    if variant in ("body_kernels", "body_stock"):
        trace_queue.TraceQueue.batch_row = body_rows  # type: ignore[method-assign]  # the variant
    if variant == "bytes_each":
        value_batches._concat_bytes = bytes_each
    if "flush_2s" in variant:
        writer.DumpWriter.__init__.__kwdefaults__ = {
            **(writer.DumpWriter.__init__.__kwdefaults__ or {}),
            "flush_interval_s": 2.0,
        }
    if "no_scan" in variant:
        value_batches.PackedBatch.holds_nonfinite = lambda self: False  # type: ignore[method-assign]
        writer.values_alert = lambda values: False
    if variant == "capture_floor":
        drain = value_drain.ValueDrain.drain

        def drain_to_nothing(self: Any, count: int, sink: Any) -> int:
            del sink
            self._seeking_alert = lambda: False
            return drain(self, count, lambda *values: None)

        value_drain.ValueDrain.drain = drain_to_nothing  # type: ignore[method-assign]
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def measure(
    model: str,
    mode: str,
    variants: list[str],
    rounds: int,
    steps: int,
    buffer_size: int,
    report: Callable[[str], None],
) -> dict[str, list[float]]:
    """Each variant's overhead per round, CPU ms a step over the plain step."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(TF_THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(TF_THREADS)
    plain = fresh_program(model)
    plain(WARMUP_STEPS, 0)
    workdir = tempfile.mkdtemp(prefix="tfdbg-variants-")
    overheads: dict[str, list[float]] = {v: [] for v in variants}
    try:
        for round_ in range(rounds):
            for variant in variants:
                start = plain(0, steps)
                plain_cpu = (time.process_time() - start[1]) / steps * 1e3
                logdir = os.path.join(workdir, f"{variant}-{round_}")
                tool = "tf" if variant == "tf" else "ours"
                run_mode = "NO_TENSOR" if variant == "no_tensor" else mode
                with patched(variant):
                    program = fresh_program(model)
                    finish = enable_dumper(tool, run_mode, logdir, buffer_size)
                    start = program(WARMUP_STEPS, steps)
                    closing = time.process_time()
                    finish()
                end = time.process_time()
                cpu = (end - start[1]) / steps * 1e3
                shutil.rmtree(logdir, ignore_errors=True)
                overheads[variant].append(cpu - plain_cpu)
                report(
                    f"# round {round_} {variant}: {cpu - plain_cpu:+.2f} ms "
                    f"(plain {plain_cpu:.2f}; the disable "
                    f"{(end - closing) / steps * 1e3:.2f} a step of it)"
                )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return overheads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", choices=[m for m in MODELS if m != "mlp"])
    parser.add_argument("mode")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=["tf", "current"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument(
        "--buffer",
        type=int,
        default=-1,
        help="circular_buffer_size of every variant (default: keep all)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    overheads = measure(
        args.model,
        args.mode,
        args.variants,
        args.rounds,
        args.steps,
        args.buffer,
        report=lambda line: print(line, flush=True),
    )
    print(
        f"# {args.model}, {args.mode}, buffer {args.buffer}, {args.rounds} rounds of "
        f"{args.steps} steps, load average {os.getloadavg()[0]:.2f}"
    )
    print("| variant | overhead, CPU ms a step (median) | rounds |")
    print("| --- | ---: | --- |")
    for variant, values in overheads.items():
        print(
            f"| {variant} | {statistics.median(values):+.2f} | "
            f"{', '.join(f'{v:+.2f}' for v in values)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
