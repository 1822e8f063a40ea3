"""What the watch tier's replay of a hit step costs, and what it stores: the replay
alone (FULL_HEALTH summaries, before the values replay existed), with its values
replay (FULL_TENSOR of the root cause's op and its inputs' ops: what `instrument.
watch` does), and one FULL_TENSOR replay of the whole step (the alternative).

    python -m tests.benchmarks.bench_replay                      # every program, 3 rounds
    python -m tests.benchmarks.bench_replay --programs fit_saturated --rounds 5
    pytest -m benchmark tests/benchmarks/bench_replay.py         # the big step, once

Each cell runs tests/programs/watched.py PROGRAM in a process of its own (its step 5
saturates the softmax: Log of exact zeros) and times `replay.replay_hit`, from the hit
handled to the verdict (and the values) read back: the step traced and called once
per recording, each run written and read. ``fit_wide_saturated`` is the big step: two
hidden layers of 2,048. "bytes" is what the replay's directory holds after it.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import pytest

from tests.program_runs import PROGRAMS, ROOT, program_env

WATCHED = PROGRAMS / "watched.py"
VARIANTS = ("summaries", "values", "full_tensor")
PROGRAMS_MEASURED = (
    "fit_saturated",
    "loop_saturated",
    "override_saturated",
    "mirrored_saturated",
    "fit_xla_saturated",
    "fit_wide_saturated",
)


def child(variant: str, logdir: str, program: str) -> None:
    """Run watched.py PROGRAM with the replay made as ``variant`` says; print one
    ``REPLAY`` line: its seconds and its directory's bytes."""
    from instrument import api
    from instrument.watch import replay

    if variant != "values":
        verdict = replay._verdict
        # No values replay: the replay's root cause named, no op to keep.
        replay._verdict = lambda run_path: (verdict(run_path)[0], [])
    if variant == "full_tensor":

        def whole_step(
            logdir: str, replay_of: dict[str, Any], values: Sequence[str] | None = None
        ) -> str:
            # The replay itself in FULL_TENSOR: every tensor of the step.
            arguments = (logdir, "FULL_TENSOR", -1, None, None, False, None)
            with api._lock:
                api._active = api._start(arguments, None, run_info={"replay_of": dict(replay_of)})
                return str(api._active.callback.writer.path)

        api.enable_for_replay = whole_step
    timed = replay.replay_hit

    def replay_hit(hit, watched_path, kept_state):
        started = time.perf_counter()
        outcome = timed(hit, watched_path, kept_state)
        seconds = time.perf_counter() - started
        size = 0
        for root, _, files in os.walk(outcome.run_path or os.devnull):
            size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        print(f"REPLAY {json.dumps({'seconds': seconds, 'bytes': size})}", flush=True)
        return outcome

    replay.replay_hit = replay_hit
    sys.argv = [str(WATCHED), logdir, program]
    runpy.run_path(str(WATCHED), run_name="__main__")


def measure(program: str, variant: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_replay_") as logdir:
        done = subprocess.run(
            [sys.executable, "-m", "tests.benchmarks.bench_replay", "--child", variant]
            + [logdir, program],
            cwd=ROOT,
            env=program_env(),
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        line = next(x for x in done.stdout.splitlines() if x.startswith("REPLAY "))
        return json.loads(line.split(" ", 1)[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=3, metavar=("VARIANT", "LOGDIR", "PROGRAM"))
    parser.add_argument("--programs", nargs="+", default=list(PROGRAMS_MEASURED))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    load = os.getloadavg()[0]
    print(f"load {load:.2f}; medians of {args.rounds} rounds, variants in turn")
    print(f"{'program':22} " + " ".join(f"{v + ' s':>14} {'bytes':>12}" for v in args.variants))
    for program in args.programs:
        cells: dict[str, list[dict]] = {v: [] for v in args.variants}
        for _ in range(args.rounds):
            for variant in args.variants:
                cells[variant].append(measure(program, variant))
        row = []
        for variant in args.variants:
            seconds = statistics.median(c["seconds"] for c in cells[variant])
            size = statistics.median(c["bytes"] for c in cells[variant])
            row.append(f"{seconds:14.2f} {size:12,.0f}")
        print(f"{program:22} " + " ".join(row), flush=True)
    return 0


@pytest.mark.benchmark
def test_the_values_replay_keeps_a_fraction_of_a_big_step():
    values = measure("fit_wide_saturated", "values")
    whole = measure("fit_wide_saturated", "full_tensor")
    assert values["seconds"] > 0 and values["bytes"] * 10 < whole["bytes"]


if __name__ == "__main__":
    sys.exit(main())
