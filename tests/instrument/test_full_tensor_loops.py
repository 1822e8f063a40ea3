"""FULL_TENSOR in loops (programs/full_tensor_loops.py): a while loop's batch an iteration,
drained many a dequeue, and a Keras LSTM's recurrent loop, every value exact and in order."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reader.values import decode_value
from tests.instrument.conftest import run_program
from tests.instrument.dump_loader import Dump, load_run, run_dirs
from tests.present import present
from tests.program_runs import PROGRAMS

ITERATIONS, CALLS = 40, 3
TIMESTEPS, BATCH, FIT_STEPS = 6, 4, 3


@pytest.fixture(scope="module")
def loops(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dump, np.ndarray]:
    logdir = tmp_path_factory.mktemp("full_tensor_loops")
    stdout = run_program([str(PROGRAMS / "full_tensor_loops.py"), str(logdir)])
    x = np.array(json.loads(stdout.strip().splitlines()[-1])["x"], np.float32)
    return load_run(run_dirs(str(logdir))[0]), x


def values_of(dump: Dump, op_name: str) -> list[np.ndarray]:
    """Decoded values of the op named ``op_name`` exactly, in trace order."""
    return [
        present(decode_value(t.value)) for t in dump.traces if dump.trace_op(t)["name"] == op_name
    ]


def test_every_iteration_of_a_while_loop_is_exact_and_in_order(loops):
    """Each iteration's values (float vectors and matrices, a bool, its counter as text)
    are those the loop computed (recomputed here in float32, IEEE like TensorFlow's
    kernels), three calls of 40 iterations each, in iteration order."""
    dump, _ = loops
    got = {
        name: values_of(dump, f"while/{name}")
        for name in ("scaled", "grown", "big", "label", "wide", "folded", "chosen", "quarter")
    }
    assert all(len(values) == ITERATIONS * CALLS for values in got.values())
    at = 0
    for call in range(CALLS):
        v = np.full(5, call, np.float32)
        for i in range(ITERATIONS):
            scaled = v * np.float32(0.5)
            grown = scaled + np.float32(i)
            folded = (grown + grown) + grown
            want = {
                "scaled": scaled,
                "grown": grown,
                "big": grown > 3,
                # Text decodes as a flat array of its elements (reader.values).
                "label": np.array([str(i)], object),
                "wide": np.tile(grown, (3, 1)),
                "folded": folded,
                "chosen": folded,
                "quarter": folded * np.float32(0.25),
            }
            for name, value in want.items():
                assert got[name][at].shape == value.shape, (name, call, i)
                np.testing.assert_array_equal(got[name][at], value, err_msg=f"{name} {i}")
            v = want["quarter"]
            at += 1


def test_an_lstm_fits_inputs_arrive_exact_at_each_timestep(loops):
    """Each fit step's batch, and each iteration of the LSTM's recurrent loop reads its
    timestep of it: every one of the 3 x 6 iterations' values is that slice of the
    data, in step and timestep order, under its step's execution."""
    dump, x = loops
    batches = [v for v in values_of(dump, "IteratorGetNext") if v.dtype == np.float32]
    assert len(batches) == FIT_STEPS
    for step, batch in enumerate(batches):
        np.testing.assert_array_equal(batch, x[step * BATCH : (step + 1) * BATCH])
    name = "sequential_1/lstm_1/while/TensorArrayV2Read/TensorListGetItem"
    traces = [t for t in dump.traces if dump.trace_op(t)["name"] == name]
    assert len(traces) == FIT_STEPS * TIMESTEPS
    for n, trace in enumerate(traces):
        step, t = divmod(n, TIMESTEPS)
        np.testing.assert_array_equal(
            present(decode_value(trace.value)), x[step * BATCH : (step + 1) * BATCH, t, :]
        )
    steps = [trace.step for trace in traces]
    assert steps == sorted(steps) and len(set(steps)) == FIT_STEPS
    assert dump.end is not None and dump.end["num_traces"] == len(dump.traces)
