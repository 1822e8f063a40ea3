"""Opening TensorFlow's own dumps: `reader` (no TensorFlow) against `DebugDataReader`.

    python tests/benchmarks/bench_tf_dumps.py [--tf-traces 1000000] [--workdir DIR]
    pytest -m benchmark tests/benchmarks/bench_tf_dumps.py   # 60,000 traces, with asserts

One dump, written by `tf.debugging.experimental.enable_dump_debug_info` (FULL_HEALTH,
no circular buffer) from the while-loop program of bench_reader.py (12 traced tensors
per iteration), opened in fresh subprocesses: by TensorFlow's `DebugDataReader`
(`update()` and the trace digests, as bench_reader.py measures it) and by
`reader.open_run` with TensorFlow made unimportable.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import textwrap
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_reader import _MEASURE_TF, _PRELUDE, _WRITE_TF, _dir_mb, _run  # noqa: E402

_MEASURE_OURS = _PRELUDE + textwrap.dedent("""
    import random
    sys.modules["tensorflow"] = None  # reading needs no TensorFlow
    import reader
    path = sys.argv[1]
    base = rss_mb()
    t = time.perf_counter()
    r = reader.open_run(path)
    out = {"n": r.num_traces, "index_s": time.perf_counter() - t,
           "rss_mb": peak_mb() - base}
    picks = [random.randrange(r.num_traces) for _ in range(10000)]
    t = time.perf_counter()
    for i in picks:
        r.trace(i)
    out["fetch_us"] = (time.perf_counter() - t) / len(picks) * 1e6
    t = time.perf_counter()
    r.traces(r.num_traces // 2, r.num_traces // 2 + 50)
    out["screenful_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    out["num_alerts"] = r.alerts().total
    r.root_cause()
    out["alerts_and_root_cause_ms"] = (time.perf_counter() - t) * 1e3
    print(json.dumps(out))
""")


def bench(workdir: str, traces: int) -> dict:
    """Write a TF dump of about ``traces`` graph traces; open it both ways."""
    path = os.path.join(workdir, "tf")
    out: dict = {"write": _run(_WRITE_TF, path, str(max(traces // 12, 1)), "tf")}
    out["dump_mb"] = _dir_mb(path)
    out["tf"] = _run(_MEASURE_TF, path)
    out["ours"] = _run(_MEASURE_OURS, path)
    out["speedup"] = out["tf"]["index_s"] / out["ours"]["index_s"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-traces", type=int, default=1_000_000)
    parser.add_argument("--workdir", default=None, help="keep the dump here")
    args = parser.parse_args(argv)
    report = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, "
              f"{os.cpu_count()} cores, Python {platform.python_version()}",
              "tensorflow_dump": bench(args.workdir or tempfile.mkdtemp(prefix="bench_tf_"),
                                       args.tf_traces)}
    print(json.dumps(report, indent=1))
    return 0


@pytest.mark.benchmark
def test_opens_tensorflow_dumps_faster_than_debug_data_reader(tmp_path):
    """At least 4x: 5-15x measured on the shared 2-core box (docs/performance.md)."""
    pytest.importorskip("tensorflow")
    result = bench(str(tmp_path), 60_000)
    assert result["ours"]["n"] == result["tf"]["n"]
    assert result["ours"]["index_s"] * 4 <= result["tf"]["index_s"]


if __name__ == "__main__":
    sys.exit(main())
