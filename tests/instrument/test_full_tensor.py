"""FULL_TENSOR: every dtype's value arrives exact, through packed batches and loops."""

from __future__ import annotations

import numpy as np
import pytest

from reader.values import decode_value
from tests.instrument.conftest import run_program
from tests.instrument.dump_loader import Dump, load_run, run_dirs
from tests.present import present
from tests.program_runs import PROGRAMS

X = np.array([[1.5, -2.0, 0.0], [3.25, -0.5, 7.0]], np.float32)
LOOP_ITERATIONS = 300
BIG = 512


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Dump:
    logdir = tmp_path_factory.mktemp("full_tensor")
    run_program([str(PROGRAMS / "full_tensor.py"), str(logdir)])
    return load_run(run_dirs(str(logdir))[0])


def values_of(dump: Dump, op_name: str) -> list[np.ndarray]:
    """Decoded values of the traces of the op named ``op_name`` (in any name scope, as
    in a loop body), in trace order."""
    out = []
    for trace in dump.traces:
        name = dump.trace_op(trace)["name"]
        if name == op_name or name.endswith("/" + op_name):
            out.append(present(decode_value(trace.value)))
    return out


@pytest.mark.parametrize(
    "name,expected",
    [
        ("f32", X * 2),
        ("f64", X.astype(np.float64)),
        ("f16", X.astype(np.float16)),
        ("bf16", X),  # bfloat16 is stored widened to float32; these values are exact in it
        ("int8", np.abs(X).astype(np.int8)),
        ("uint8", np.abs(X).astype(np.uint8)),
        ("int16", np.abs(X).astype(np.int16)),
        ("uint16", np.abs(X).astype(np.uint16)),
        ("int32", np.abs(X).astype(np.int32)),
        ("uint32", np.abs(X).astype(np.uint32)),
        ("int64", np.abs(X).astype(np.int64)),
        ("uint64", np.abs(X).astype(np.uint64)),
        ("complex64", np.abs(X).astype(np.complex64)),
        ("complex128", np.abs(X).astype(np.complex128)),
        ("bool", X > 0),
        ("scalar", np.float32(X.sum())),
        ("empty", np.zeros((0, 3), np.float32)),
        ("dynamic", X - 1),
    ],
)
def test_value_is_exact_with_dtype_and_shape(dump, name, expected):
    [value] = values_of(dump, name)
    expected = np.asarray(expected)
    assert value.dtype == expected.dtype
    assert value.shape == expected.shape  # a scalar keeps shape ()
    np.testing.assert_array_equal(value, expected)


def test_string_value_is_kept_as_text(dump):
    [value] = values_of(dump, "string")
    assert value.tolist() == ["1.50", "-2.00", "0.00", "3.25", "-0.50", "7.00"]


def test_large_value_round_trips(dump):
    [value] = values_of(dump, "big")
    assert value.shape == (BIG, BIG) and value.dtype == np.float32
    zeros = np.count_nonzero(value == 0)
    assert 0.4 * BIG * BIG < zeros < 0.6 * BIG * BIG  # a ReLU of normal samples
    assert (value >= 0).all() and np.isfinite(value).all()


def test_loop_larger_than_the_queue_keeps_every_iteration_in_order(dump):
    steps = values_of(dump, "step")
    assert len(steps) == LOOP_ITERATIONS
    for i, value in enumerate(steps):
        np.testing.assert_array_equal(value, np.full(4, i + 1, np.float32))
    assert dump.end is not None and dump.end["num_traces"] == len(dump.traces)
