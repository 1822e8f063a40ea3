"""Opening a dump in a bucket against opening it on disk: a million graph traces.

    python tests/benchmarks/bench_bucket.py [--traces 1000000] [--rounds 8] [--before TREE]
        [--shape identical|varied|paced]
        # prints a Markdown table of medians; --before: that tree against this one
    pytest -m benchmark tests/benchmarks/bench_bucket.py         # 200,000 traces, asserts

The same synthetic FULL_HEALTH run (`tests.synthetic.write_big_dump`, a million traces
over 100 ops, an execution per 50,000-trace chunk) is written by `DumpWriter` twice:
into a local directory, and into a bucket of moto's S3 server on 127.0.0.1 (through
s3fs: the writer puts one part object per flush), by each tree's own writer (the
format may differ). ``--shape``: every row the same (the default), rows that vary
(`varied`: they deflate some 5x, real runs' 9-15x), or varied rows written as a
training job writes them (`paced`: 1,200 steps 10 ms apart, the writer flushing by
itself every 0.5 s). Each open runs in a fresh subprocess and is timed to the first
`root_cause()`: local; the bucket with an empty object cache (every part fetched);
the bucket again (the cache holds every part: only the listings go to the server).
For the bucket the fixed set-up is timed apart first: importing fsspec and s3fs,
making the client, and its first listing (of the logdir), which every process pays
once whatever the dump's size. "process" is the subprocess's wall time, start to
exit (the interpreter, imports, the open, the exit). The target: the cold open at
most 3x the local one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

_OPEN = """
import json, sys, time
import reader
from reader import storage
for name in reader.__all__:  # (reader imports a module when its name is first used)
    getattr(reader, name)
t0 = time.perf_counter()
store = storage.store_for(sys.argv[1])
if store.remote:
    store.list_dir(sys.argv[1])
t1 = time.perf_counter()
dump = reader.open_run(sys.argv[1])
t2 = time.perf_counter()
cause = dump.root_cause()
t3 = time.perf_counter()
print(json.dumps({"traces": dump.num_traces, "setup_s": t1 - t0, "open_s": t2 - t1,
                  "cause_s": t3 - t2, "cause": cause.trace.index if cause else None}))
"""


# A paced run: `PACED_STEPS` steps (an execution and its traces), one every 10 ms, the
# writer flushing every 0.5 s by itself, as a training job writes: some 15 s.
PACED_STEPS = 1200
PACED_S = 0.01
# This tree's `write_big_dump`, with the writer of the tree on PYTHONPATH; arguments:
# the logdir, traces, synthetic.py's path, the shape, the chunk, the pace.
_WRITE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("bench_synthetic", sys.argv[3])
synthetic = sys.modules["bench_synthetic"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(synthetic)
synthetic.write_big_dump(sys.argv[1], int(sys.argv[2]), alert_every=int(sys.argv[2]) // 2,
                         varied=sys.argv[4] != "identical", chunk=int(sys.argv[5]),
                         paced_s=float(sys.argv[6]))
"""
SHAPES = ("identical", "varied", "paced")


def _open(url: str, env: dict[str, str], tree: str = ROOT) -> dict:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _OPEN, url],
        env=dict(env, PYTHONPATH=tree),
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    found = json.loads(done.stdout)
    found["process_s"] = time.perf_counter() - started
    found["load"] = os.getloadavg()[0]
    return found


def _write(url: str, traces: int, shape: str, env: dict[str, str], tree: str) -> subprocess.Popen:
    """Start writing the benchmark's run into ``url`` with the writer of ``tree``."""
    synthetic = os.path.join(ROOT, "tests", "synthetic.py")
    chunk, pace = (max(traces // PACED_STEPS, 1), PACED_S) if shape == "paced" else (50_000, 0.0)
    return subprocess.Popen(
        [sys.executable, "-c", _WRITE, url, str(traces), synthetic, shape, str(chunk), str(pace)],
        env=dict(env, PYTHONPATH=tree),
        cwd=tree,
    )


def run(
    traces: int, rounds: int = 1, before: str | None = None, shape: str = "identical"
) -> dict[str, list[dict]]:
    """Each open's results per row, ``rounds`` times; with ``before`` (another tree of
    the code) each row is measured with both trees, which take turns going first, each
    reading the runs its own writer wrote. ``shape``: `write_big_dump`'s identical or
    varied rows, or varied rows paced as a training job writes them (`PACED_STEPS`)."""
    from tests.cloud.conftest import start_server, stop_server

    trees = {"": ROOT} if before is None else {"before": before, "after": ROOT}
    server = start_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = server.env()
            os.environ.update(env)
            import s3fs

            bucket = f"bench-{uuid.uuid4().hex[:8]}"
            s3fs.S3FileSystem(skip_instance_cache=True).mkdir(bucket)
            # Each tree reads the run its own writer wrote (the format may differ).
            dumps = {
                label: (os.path.join(tmp, f"logdir-{label}"), f"s3://{bucket}/logdir-{label}")
                for label in trees
            }
            writers = [
                _write(path, traces, shape, env, trees[label])
                for label, paths in dumps.items()
                for path in paths
            ]
            for writer in writers:
                if writer.wait(timeout=600) != 0:
                    raise RuntimeError("writing the benchmark's runs failed")
            results: dict[str, list[dict]] = {}
            for round_ in range(rounds):
                order = list(trees.items())
                for label, tree in order[::-1] if round_ % 2 else order:
                    local, url = dumps[label]
                    cache = os.path.join(tmp, f"cache-{label}-{round_}")
                    env_tree = dict(env, TFDBG_TUI_CACHE_DIR=cache)
                    for name, found in (
                        ("local", _open(local, env_tree, tree)),
                        ("bucket, cold cache", _open(url, env_tree, tree)),
                        ("bucket, warm cache", _open(url, env_tree, tree)),
                    ):
                        found["tree"] = label
                        results.setdefault(f"{name}, {label}" if label else name, []).append(found)
            first_local = next(iter(results.values()))[0]
            for name, founds in results.items():
                for found in founds:
                    assert found["traces"] == traces, (name, found)
                    assert found["cause"] == first_local["cause"], (name, found)
            return results
    finally:
        stop_server(server)


def _reading(found: dict) -> float:
    """The open and the first root cause, without the store's set-up."""
    return float(found["open_s"] + found["cause_s"])


def markdown(results: dict[str, list[dict]]) -> str:
    """Medians per row; each ratio against the median local open of the same tree."""
    lines = [
        "| open (s) | set-up | reading | total | total vs local | reading vs local | "
        "process | load |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, founds in results.items():
        tree = founds[0]["tree"]
        local = statistics.median(
            _reading(f)
            for row, fs in results.items()
            for f in fs
            if row.startswith("local") and f["tree"] == tree
        )
        setup = statistics.median(f["setup_s"] for f in founds)
        reading = statistics.median(_reading(f) for f in founds)
        total = statistics.median(f["setup_s"] + _reading(f) for f in founds)
        process = statistics.median(f["process_s"] for f in founds)
        loads = [f["load"] for f in founds]
        lines.append(
            f"| {name} | {setup:.2f} | {reading:.2f} | {total:.2f} | "
            f"{total / local:.1f}x | {reading / local:.1f}x | {process:.2f} | "
            f"{min(loads):.1f}-{max(loads):.1f} |"
        )
    return "\n".join(lines)


@pytest.mark.benchmark
def test_a_dump_in_a_bucket_opens_within_three_times_local():
    """The reading: the set-up (imports, client) is a fixed cost of about half a second
    that a 200,000-trace local open (some 0.05 s) cannot be compared with; it is
    printed, not asserted."""
    results = run(200_000)
    print("\n" + markdown(results))
    local = _reading(results["local"][0])
    cold = _reading(results["bucket, cold cache"][0])
    assert cold <= 3 * local + 0.5  # half a second of slack for a busy machine


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--before",
        metavar="TREE",
        help="another checkout of the code, measured taking turns with this one",
    )
    parser.add_argument(
        "--shape",
        choices=SHAPES,
        default="identical",
        help="identical rows; varied rows (deflate some 5x); varied rows "
        "written as a job writes them, a step every 10 ms",
    )
    args = parser.parse_args()
    print(markdown(run(args.traces, args.rounds, args.before, args.shape)))
