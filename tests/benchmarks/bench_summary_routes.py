"""How a health mode's summary routes cost, compared within one process.

Each variant undoes one of the choices instrument/summaries/summary_ops.py and
instrument/summaries/check_elision.py make (docs/instrument.md, "How summaries are computed"):
the benchmark program's step (bench_instrument's MLP) is traced once per variant under
one enabled dump, and the variants' ``tf.function`` calls alternate in blocks of
`BLOCK_CALLS`. Between processes the same program's speed drifts by as much as the
differences measured here (docs/performance.md, "Method", "Fresh memory"); within
one process neighbouring blocks share the machine's state.

Each variant's cost is its median block's CPU time per call minus that of the same
step traced before the dump was enabled (which pays the per-call record but has no
trace ops)::

    python tests/benchmarks/bench_summary_routes.py --mode CONCISE_HEALTH
    python tests/benchmarks/bench_summary_routes.py --mode CURT_HEALTH --blocks 25 \\
        --variants current kernels

Variants: ``current``; ``lowered_cond`` (the segment's cond lowered to Switch/Merge);
``no_recompute`` (the exact branch reads covered tensors); ``no_elision`` (every tensor
on the stock route keeps its check); ``kernels`` (CURT_HEALTH and CONCISE_HEALTH take
the fused kernel in a batch, CONCISE_HEALTH's stock route only from 16,384 elements);
``shared_reads`` (the ops that write a variable the batch's ``If`` holds do not wait for
it, and copy the variable); ``before`` (all five: the summaries as they were before
checks covered one another).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_instrument import BATCH, SIZES, TF_THREADS, training_program  # noqa: E402

BLOCK_CALLS = 100
WARMUP_CALLS = 5
VARIANTS = (
    "current",
    "lowered_cond",
    "no_recompute",
    "no_elision",
    "kernels",
    "shared_reads",
    "before",
)


def _patches(variant: str) -> list[tuple[object, str, object]]:
    """(object, attribute, value) to set while ``variant``'s graph is traced."""
    from instrument.summaries import check_elision, summary_ops
    from instrument.tf_internals import graph_edits

    class ReadCovered(check_elision.Recomputer):
        def tensor(self, tensor: Any, depth: int = 0) -> Any:
            return tensor

    def no_cover(tensors: list[Any]) -> list[bool]:
        return [False] * len(tensors)

    single: dict[str, list[tuple[Any, str, Any]]] = {
        "lowered_cond": [(graph_edits, "keep_functional_if", lambda op: None)],
        "no_recompute": [(check_elision, "Recomputer", ReadCovered)],
        "no_elision": [(check_elision, "covered_checks", no_cover)],
        "kernels": [(summary_ops, "BATCHED_STOCK_MODES", frozenset())],
        "shared_reads": [(graph_edits, "defer_variable_writes", lambda holder, held: 0)],
    }
    if variant == "before":
        return [patch for patches in single.values() for patch in patches]
    return single.get(variant, [])


def _traced(variant: str, step: Callable[..., Any], x: Any, y: Any) -> Any:
    import tensorflow as tf

    saved = []
    for obj, name, value in _patches(variant):
        saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)
    try:
        function = tf.function(step)
        for _ in range(WARMUP_CALLS):
            function(x, y).numpy()
    finally:
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)
    return function


def compare(mode: str, variants: tuple[str, ...], blocks: int) -> dict[str, dict[str, float]]:
    """Median and quartiles of each variant's cost over the untraced step, ms a call."""
    import tensorflow as tf

    import instrument

    step, x, y = training_program(SIZES, BATCH, TF_THREADS)
    untraced = tf.function(step)
    for _ in range(WARMUP_CALLS):
        untraced(x, y).numpy()
    with tempfile.TemporaryDirectory(prefix="bench-summary-routes-") as logdir:
        instrument.enable_dump_debug_info(logdir, tensor_debug_mode=mode, circular_buffer_size=-1)
        try:
            functions = {"untraced": untraced}
            functions.update({v: _traced(v, step, x, y) for v in variants})
            times: dict[str, list[float]] = {name: [] for name in functions}
            for _ in range(blocks):
                for name, function in functions.items():
                    start = time.process_time()
                    for _ in range(BLOCK_CALLS):
                        function(x, y).numpy()
                    times[name].append((time.process_time() - start) / BLOCK_CALLS * 1e3)
        finally:
            instrument.disable_dump_debug_info()
    base = statistics.median(times["untraced"])
    results = {}
    for name in variants:
        q1, median, q3 = statistics.quantiles(times[name], n=4)
        results[name] = {"median": median - base, "q1": q1 - base, "q3": q3 - base}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mode",
        default="CONCISE_HEALTH",
        choices=("CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "FULL_STATS"),
    )
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument(
        "--blocks",
        type=int,
        default=15,
        help=f"blocks of {BLOCK_CALLS} calls per variant (default 15)",
    )
    args = parser.parse_args(argv)
    results = compare(args.mode, tuple(args.variants), args.blocks)
    print(f"| {args.mode}: variant | summaries' cost, ms a call (median) | quartiles |")
    print("| --- | --- | --- |")
    for name, r in results.items():
        print(f"| {name} | {r['median']:+.3f} | {r['q1']:+.3f} to {r['q3']:+.3f} |")
    return 0


@pytest.mark.benchmark
def test_current_routes_cost_no_more_than_before() -> None:
    """The current routes against the summaries before checks covered one another."""
    results = compare("CONCISE_HEALTH", ("current", "before"), 10)
    assert results["current"]["median"] <= results["before"]["q3"], results


if __name__ == "__main__":
    sys.exit(main())
