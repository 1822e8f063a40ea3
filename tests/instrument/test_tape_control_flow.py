"""A GradientTape around eager calls of tf.functions with a while loop and a cond.

TensorFlow differentiates the loop and cond bodies, trace ops included; the program
must complete with the right gradients, and the bodies' traces (forward and gradient)
must be in the dump with their real contents.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from reader import format as fmt
from reader.values import decode_value
from tests.instrument.conftest import dumps_and_last_lines, runs_per_part
from tests.prefetch import made, prefetchable
from tests.present import present
from tests.program_runs import PROGRAMS

PROGRAM = PROGRAMS / "tape_control_flow.py"
MODES = (fmt.NO_TENSOR, fmt.FULL_HEALTH, fmt.FULL_TENSOR)
X = np.array([1.0, 2.0, 4.0], dtype=np.float32)
V = np.array([1.0, 2.0, 3.0], dtype=np.float32)


@pytest.fixture(scope="module")
def tape_runs(request):
    """{mode: (dump, printed gradients)}."""
    return dumps_and_last_lines(*made(request, "tape_runs"))


@prefetchable("tape_runs")
def _run_modes(root):
    return root, runs_per_part(root, MODES, lambda logdir, mode: [str(PROGRAM), str(logdir), mode])


def _loop_states():
    """The loop variable y before each of the 3 iterations, and after the last."""
    ys = [X.astype(np.float64)]
    for _ in range(3):
        ys.append(np.sin(ys[-1]) * V)
    return ys


def _traces_by_op(dump):
    """(graph name, op type) -> the traces of that op's outputs, in dump order."""
    points = dump.trace_point_ops()
    found: dict[tuple[str, str], list[Any]] = {}
    for trace in dump.traces:
        op, _ = points[trace.trace_point]
        found.setdefault((dump.graphs[op["graph"]]["name"], op["type"]), []).append(trace)
    return found


def _one(found, graph_prefix, op_type):
    """The traces of the one forward (not gradient) graph's ``op_type`` op."""
    keys = [
        k
        for k in found
        if k[0].startswith(graph_prefix) and k[1] == op_type and "_grad_" not in k[0]
    ]
    assert len(keys) == 1, (graph_prefix, op_type, sorted(found))
    return found[keys[0]]


def _step(dump, prefix):
    (call,) = [e for e in dump.executions if e["op"].startswith(prefix)]
    return call["i"]


@pytest.mark.parametrize("mode", MODES)
def test_program_completes_with_right_gradients(tape_runs, mode):
    dump, printed = tape_runs[mode]
    assert dump.end is not None
    ys = _loop_states()
    # d/dx sum(y3), y_{k+1} = sin(y_k) * v.
    dx = np.ones(3)
    for y in reversed(ys[:-1]):
        dx = dx * np.cos(y) * V
    np.testing.assert_allclose(printed["loop"][0], dx, rtol=1e-5)
    np.testing.assert_allclose(printed["cond"][0], 0.5 / np.sqrt(X) * V, rtol=1e-5)
    np.testing.assert_allclose(printed["cond"][1], np.sqrt(X), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_while_body_traces_reach_the_dump(tape_runs, mode):
    dump, _ = tape_runs[mode]
    found = _traces_by_op(dump)
    sins = _one(found, "while_body_", "Sin")
    assert len(sins) == 3  # one per iteration
    forward_step = _step(dump, "__forward_looped_")
    assert {t.step for t in sins} == {forward_step}
    # The gradient loop body's ops are traced too, one per iteration, in the backward call.
    coss = [t for k, ts in found.items() if "_grad_" in k[0] and k[1] == "Cos" for t in ts]
    assert len(coss) == 3
    assert {t.step for t in coss} == {_step(dump, "__inference___backward_looped_")}
    ys = _loop_states()
    if mode == fmt.FULL_TENSOR:
        for trace, y in zip(sins, ys[:3]):
            np.testing.assert_allclose(present(decode_value(trace.value)), np.sin(y), rtol=1e-6)
        # The backward loop runs the iterations in reverse.
        for trace, y in zip(coss, reversed(ys[:3])):
            np.testing.assert_allclose(present(decode_value(trace.value)), np.cos(y), rtol=1e-6)
    if mode == fmt.FULL_HEALTH:
        for trace, y in zip(sins, ys[:3]):
            s = np.sin(y)
            assert trace.summary == [
                1.0,
                1.0,
                3.0,
                0.0,
                0.0,
                0.0,
                float((s < 0).sum()),
                float((s == 0).sum()),
                float((s > 0).sum()),
            ]


@pytest.mark.parametrize("mode", MODES)
def test_cond_branch_traces_reach_the_dump(tape_runs, mode):
    dump, _ = tape_runs[mode]
    found = _traces_by_op(dump)
    (sqrt,) = _one(found, "cond_true_", "Sqrt")
    assert sqrt.step == _step(dump, "__forward_branched_")
    assert not any(k[1] == "Square" for k in found)  # the branch not taken
    (sqrt_grad,) = [
        t for k, ts in found.items() if "_grad_" in k[0] and k[1] == "SqrtGrad" for t in ts
    ]
    assert sqrt_grad.step == _step(dump, "__inference___backward_branched_")
    if mode == fmt.FULL_TENSOR:
        np.testing.assert_allclose(present(decode_value(sqrt.value)), np.sqrt(X), rtol=1e-6)
        # SqrtGrad(y, dy) with dy = v (from the Mul by v).
        np.testing.assert_allclose(
            present(decode_value(sqrt_grad.value)), 0.5 / np.sqrt(X) * V, rtol=1e-6
        )
    if mode == fmt.FULL_HEALTH:
        assert sqrt.summary == [1.0, 1.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0]
