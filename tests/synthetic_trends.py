"""A synthetic FULL_STATS run shaped like a Keras fit, for the Trends view's snapshots
and the trends benchmark (no TensorFlow): `layers` Dense+ReLU layers built inside a
Keras layer's ``__call__``, each step reading each kernel, its gradient handed to SGD
and the update subtracted from the variable. The gradients grow tenfold a step from
`explode` on, and the step `nan` makes NaN gradients.
"""

from __future__ import annotations

import numpy as np

from instrument.dump.writer import DumpWriter
from reader import format as fmt

FLOAT32 = 1
USER_FILE = "/home/user/project/train.py"
LAYER_FILE = "/usr/lib/python3/site-packages/keras/src/layers/layer.py"
LEARNING_RATE = 0.01
# Traces per layer and step: kernel read, MatMul, Relu, kernel gradient, update.
TRACES_PER_LAYER = 5


def _row(size: int, norm: float, *, nan: int = 0, zero: int = 0) -> list[float]:
    """A FULL_STATS row of a float32 tensor of ``size`` elements whose finite ones have
    mean 0 and the L2 norm ``norm`` (std = norm / sqrt(finite)); ``zero`` of them 0."""
    finite = size - nan
    std = norm / np.sqrt(finite) if finite else float("nan")
    spread = norm if finite else float("nan")
    rest = finite - zero
    return [
        FLOAT32,
        2,
        size,
        0,
        0,
        nan,
        rest // 2,
        zero,
        rest - rest // 2,
        -spread,
        spread,
        0.0,
        std,
    ]


def write_trends_dump(
    logdir,
    *,
    layers: int = 3,
    steps: int = 16,
    explode: int = 6,
    nan: int | None = 9,
    run_id: str | None = None,
) -> str:
    """Write the run; returns its path."""
    w = DumpWriter(
        str(logdir),
        {
            "run": run_id,
            "start_time": 1_700_000_000.0,
            "host": "gpu",
            "tensor_debug_mode": fmt.FULL_STATS,
            "argv": ["train.py"],
            "tf_version": "2.21.0",
        },
        circular_buffer_size=-1,
        flush_interval_s=None,
    )
    user = w.add_source_file(USER_FILE, ["model.fit(x, y)"], library=False)
    library = w.add_source_file(LAYER_FILE, None, library=True, omitted="library")
    outer = w.add_frame(user, 1, "<module>")
    stack = w.add_stack([outer, w.add_frame(library, 900, "__call__")])
    plain = w.add_stack([outer])
    graph = w.add_graph("train_step", None)
    tp = 0
    tps = []

    def op(op_type: str, name: str, inputs: list[str], traced: bool, on_stack: int) -> None:
        nonlocal tp
        w.add_op(
            graph_id=graph,
            op_type=op_type,
            op_name=name,
            inputs=inputs,
            num_outputs=1 if traced or op_type == "Placeholder" else 0,
            output_dtypes=[FLOAT32] if traced else [],
            device_id=None,
            stack_id=on_stack,
            trace_points=[tp] if traced else [],
        )
        if traced:
            tps.append(tp)
            tp += 1

    op("Placeholder", "x", [], False, plain)
    op("Placeholder", "sgd/lr", [], False, plain)
    previous = "x:0"
    for layer in range(layers):
        scope = f"model/dense_{layer}"
        resource = f"{scope}/ReadVariableOp/resource"
        w.add_op(
            graph_id=graph,
            op_type="Placeholder",
            op_name=resource,
            inputs=[],
            num_outputs=1,
            output_dtypes=[20],
            device_id=None,
            stack_id=stack,
            trace_points=[None],
        )
        op("ReadVariableOp", f"{scope}/ReadVariableOp", [f"{resource}:0"], True, stack)
        op("MatMul", f"{scope}/MatMul", [previous, f"{scope}/ReadVariableOp:0"], True, stack)
        op("Relu", f"{scope}/Relu", [f"{scope}/MatMul:0"], True, stack)
        previous = f"{scope}/Relu:0"
    for layer in reversed(range(layers)):
        scope = f"model/dense_{layer}"
        op("MatMul", f"gradient_tape/{scope}/MatMul/MatMul_1", [f"{scope}/MatMul:0"], True, plain)
        op(
            "Mul",
            f"sgd/Mul_{layer}",
            [f"gradient_tape/{scope}/MatMul/MatMul_1:0", "sgd/lr:0"],
            True,
            plain,
        )
        op(
            "AssignSubVariableOp",
            f"sgd/AssignSubVariableOp_{layer}",
            [f"{scope}/ReadVariableOp/resource:0", f"sgd/Mul_{layer}:0"],
            False,
            plain,
        )
    w.set_graph_function_name(graph, "__inference_train_step_7")
    order = np.array(tps, dtype=np.int32)
    size = 64
    for step in range(steps):
        rows = []
        for layer in range(layers):
            weight = 2.0 + layer + 0.01 * step
            rows += [
                _row(size, weight),
                _row(size, 1.5 * (layer + 1)),
                _row(size, 1.5 * (layer + 1), zero=size // 2),
            ]
        for layer in reversed(range(layers)):
            grad = (1.0 + 0.1 * ((step * 7 + layer) % 5)) * (layer + 1)
            if step >= explode:
                grad *= 10.0 ** (2 * (step - explode + 1))
            bad = size if nan is not None and step >= nan else 0
            rows += [_row(size, grad, nan=bad), _row(size, LEARNING_RATE * grad, nan=bad)]
        w.add_traces(order, summaries=np.array(rows, dtype=np.float64))
        w.add_execution(
            op_type="__inference_train_step_7",
            graph_id=graph,
            input_ids=[],
            output_ids=[],
            device_ids=[],
            output_dtypes=[],
            stack_id=plain,
            call_ordinal=step,
        )
    w.close()
    return w.path
