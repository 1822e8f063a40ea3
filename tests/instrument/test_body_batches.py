"""Control-flow bodies enqueue their traces in batches: a while body (cut at the cond it
holds) once an iteration per segment, a cond branch once when taken; the traces keep
their order and every iteration's."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from reader import format as fmt
from reader.values import decode_value
from tests.instrument.conftest import run_program
from tests.instrument.dump_loader import load_run, run_dirs
from tests.present import present
from tests.program_runs import PROGRAMS

ITERATIONS = 4
X = np.array([0.5, -1.0, 2.0], np.float32)


@pytest.mark.parametrize("mode", [fmt.NO_TENSOR, fmt.CURT_HEALTH, fmt.FULL_TENSOR])
def test_a_loop_body_enqueues_once_a_segment(tmp_path, mode):
    out = run_program([str(PROGRAMS / "body_batches.py"), str(tmp_path), mode])
    enqueues = json.loads(out.strip().splitlines()[-1])

    def counts(pattern: str) -> list[int]:
        return sorted(n for name, n in enqueues.items() if re.fullmatch(pattern, name))

    # f's body: two segments around the nested cond; g's: one. One batch in each
    # branch, each loop condition, and the gradient loop's body and condition.
    assert counts(r"while_body_\d+") == [1, 2]
    assert counts(r"while_cond_(true|false)_\d+") == [1, 1]
    assert counts(r"while_cond_\d+") == [1, 1]
    assert counts(r"while_(body|cond)_\d+_grad_\d+") == [1, 1]

    dump = load_run(run_dirs(str(tmp_path))[0])
    points = dump.trace_point_ops()

    def call_traces(prefix: str) -> list:
        (call,) = [e["i"] for e in dump.executions if e["op"].startswith(prefix)]
        return [(points[t.trace_point][0], t) for t in dump.traces if t.step == call]

    backward = [
        op["type"]
        for op, _ in call_traces("__inference_g_")
        if "_grad_" in dump.graphs[op["graph"]]["name"]
    ]
    assert backward.count("Cos") == ITERATIONS, backward
    traced = call_traces("__inference_f_")
    types = [op["type"] for op, _ in traced]
    assert types.count("Tanh") == ITERATIONS and types.count("Sin") == ITERATIONS
    # Per iteration: the body's first segment, then the branch taken, then Tanh.
    sins = [i for i, t in enumerate(types) if t == "Sin"]
    tanhs = [i for i, t in enumerate(types) if t == "Tanh"]
    branches = [
        i
        for i, (op, _) in enumerate(traced)
        if dump.graphs[op["graph"]]["name"].startswith("while_cond_")
    ]
    for k in range(ITERATIONS):
        assert sins[k] < tanhs[k] and (k == 0 or tanhs[k - 1] < sins[k])
        assert any(sins[k] < b < tanhs[k] for b in branches), k
    if mode == fmt.FULL_TENSOR:
        y = X
        for _, trace in [traced[i] for i in tanhs]:
            y = np.sin(y) * np.float32(0.5) + np.cos(y)
            y = np.sqrt(y * y) * np.float32(2.0) if y.sum() > 0 else np.abs(y) - np.float32(1)
            y = np.tanh(y)
            np.testing.assert_allclose(present(decode_value(trace.value)), y, rtol=1e-5)
