"""`tfdbg-tui diff` on big runs: aligning and comparing two dumps of N graph traces.

    python -m tests.benchmarks.bench_diff [--executions 200000]   # from the repository root
    pytest -m benchmark tests/benchmarks/bench_diff.py   # a smaller run

Two synthetic FULL_HEALTH dumps (`bench_root_cause.write_dump`: eager ops with a
`tf.function` call every 50th execution, 50 graph traces per call, so N executions
come with about N graph traces), identical but for B's culprit going non-finite a few
calls before A's: the first divergence is B's first NaN. Measured: opening both, then
`compare_runs` (the first divergence) and `align_runs` (every counterpart, for the
TUI's ``--compare``), each in the same process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time

import pytest

from tests.benchmarks.bench_root_cause import CULPRIT, write_dump


def measure(executions: int) -> dict:
    import reader
    from reader.analysis.compare.diff import align_runs, compare_runs

    workdir = tempfile.mkdtemp(prefix="bench_diff_")
    try:
        path_a = write_dump(f"{workdir}/a", executions, nan_from=0.7)
        path_b = write_dump(f"{workdir}/b", executions, nan_from=0.6)
        started = time.perf_counter()
        a, b = reader.DumpReader(path_a), reader.DumpReader(path_b)
        opened = time.perf_counter() - started
        started = time.perf_counter()
        diff = compare_runs(a, b)
        compared = time.perf_counter() - started
        started = time.perf_counter()
        alignment = align_runs(a, b)
        aligned = time.perf_counter() - started
        first = diff.first_divergence
        assert first is not None and first.op_name == CULPRIT, first
        return {
            "executions": executions,
            "traces": b.num_traces,
            "open_both_s": opened,
            "compare_runs_s": compared,
            "align_runs_s": aligned,
            "aligned": diff.aligned,
            "divergent_traces": int(alignment.divergent.size),
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=200_000)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.executions), indent=1))
    return 0


@pytest.mark.benchmark
def test_diff_of_big_runs():
    result = measure(20_000)
    assert result["aligned"] >= result["traces"]


if __name__ == "__main__":
    sys.exit(main())
