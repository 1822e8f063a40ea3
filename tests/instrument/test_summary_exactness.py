"""Summaries are exact on every route: counts equal DebugNumericSummaryV2's, FULL_STATS's
statistics equal numpy's to float64-accumulation accuracy.

Routes (instrument/summaries/summary_ops.py, raw_rows.py): the fused kernels, the stock
route (forced on small tensors by lowering its size threshold), a batch of stock rows
whose ``cond`` falls back to the kernels, one tensor in a graph, eager, graph constants
(rows computed on the host while the graph is built), XLA, shapes known only at run
time, and tensors of more than 2**24 elements. The summary ops run in this process:
they need no op callback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.python.ops import gen_debug_ops  # noqa: E402

from instrument import summaries  # noqa: E402
from instrument.summaries import raw_rows, summary_ops  # noqa: E402
from reader import format as fmt  # noqa: E402
from tests.present import present  # noqa: E402

DTYPES = ("float16", "bfloat16", "float32", "float64")
MODES = (fmt.CURT_HEALTH, fmt.CONCISE_HEALTH, fmt.FULL_HEALTH, fmt.FULL_STATS)
BIG = (1 << 24) + 3  # past float32's exact integers


def cases(dtype: str) -> dict[str, np.ndarray]:
    """Random and adversarial values (float64 arrays, cast to ``dtype`` by `tensor`)."""
    info = np.finfo(
        np.float16 if dtype == "float16" else np.float64 if dtype == "float64" else np.float32
    )
    rng = np.random.default_rng(sum(map(ord, dtype)))
    tiny = float(info.smallest_subnormal)
    huge = 60000.0 if dtype == "float16" else 1e30
    random = rng.normal(size=(80, 260))  # above the stock route's threshold
    random[random < -1.0] = 0.0
    with_nan = random.copy()
    with_nan[3, 7] = np.nan
    return {
        "mixed": np.array([-2.0, -0.0, 0.0, 1.5, tiny, -tiny, 3 * tiny, huge, -huge / 2]),
        "non_finite": np.array([np.inf, -np.inf, np.nan, 1.0, -1.0, 0.0, -0.0, np.nan]),
        "all_nan": np.full(5, np.nan),
        "infinities": np.array([[np.inf, -np.inf], [np.inf, np.inf]]),
        "empty": np.zeros((0, 3)),
        "scalar": np.array(3.25),
        "scalar_nan": np.array(np.nan),
        "scalar_inf": np.array(np.inf),
        "scalar_neg_inf": np.array(-np.inf),
        "scalar_zero": np.array(-0.0),
        "random": random,
        "offset": 1000.0 + rng.uniform(size=(100, 200)),
        "random_with_nan": with_nan,
    }


def tensor(values: np.ndarray, dtype: str):
    return tf.cast(tf.constant(values, dtype=tf.float64), dtype)


def expected(mode: str, t) -> np.ndarray:
    """The format's columns from DebugNumericSummaryV2, and for FULL_STATS numpy's
    statistics of the finite elements as TensorFlow's CPU kernels see them."""
    full = gen_debug_ops.debug_numeric_summary_v2(
        t, output_dtype=tf.float64, tensor_debug_mode=4
    ).numpy()[2:]
    if mode == fmt.CURT_HEALTH:
        return np.array([float(full[3:6].any())])
    if mode == fmt.CONCISE_HEALTH:
        return full[2:6]
    if mode == fmt.FULL_HEALTH:
        return full
    wide = t if t.dtype in (tf.float32, tf.float64) else tf.cast(t, tf.float32)
    x = wide.numpy().astype(np.float64).ravel()
    # TensorFlow's CPU kernels run with denormals-are-zero: a float32 or float64
    # subnormal counts (and sums) as zero. float16's subnormals are normal float32s.
    x[np.abs(x) < np.finfo(wide.dtype.as_numpy_dtype).tiny] = 0.0
    x = x[np.isfinite(x)]
    if not x.size:
        return np.concatenate([full, [np.nan] * 4])
    mean = x.sum() / x.size
    return np.concatenate(
        [full, [x.min(), x.max(), mean, np.sqrt(((x - mean) ** 2).sum() / x.size)]]
    )


def assert_rows(mode: str, rows: np.ndarray, tensors: list, label: str) -> None:
    for row, t in zip(rows, tensors):
        want = expected(mode, t)
        np.testing.assert_array_equal(row[:9], want[:9], err_msg=f"{label}: counts")
        if mode != fmt.FULL_STATS:
            continue
        np.testing.assert_array_equal(row[9:11], want[9:11], err_msg=f"{label}: min, max")
        # Float64 accumulation: each sum is within n * 2**-53 of its terms' magnitude.
        size = max(int(t.shape.num_elements()), 1)
        bound = 2 * size * 2.0**-53 * (abs(want[11]) + want[12]) + 1e-300
        if np.isnan(want[11]):
            assert np.isnan(row[11:]).all(), label
            continue
        assert abs(row[11] - want[11]) <= bound, (label, row[11], want[11])
        assert abs(row[12] - want[12]) <= bound, (label, row[12], want[12])


@pytest.fixture(params=["kernels", "stock"])
def route(request, monkeypatch):
    """The fused kernels for every tensor, or the stock route for every tensor."""
    threshold = 1 << 62 if request.param == "kernels" else 0
    monkeypatch.setattr(summary_ops, "STOCK_ROUTE_MIN_ELEMENTS", threshold)
    return request.param


@pytest.mark.parametrize("dtype", DTYPES)
def test_graph_batches_are_exact(route, dtype):
    """A batch with a non-finite tensor (the cond's kernel branch) and one without."""
    values = cases(dtype)
    for label, names in (
        ("all", list(values)),
        ("finite", [n for n, v in values.items() if np.isfinite(v).all()]),
    ):
        tensors = [tensor(values[n], dtype) for n in names]
        for mode in MODES:

            @tf.function
            def batch(*ts, mode=mode):
                return summary_ops.stack_summaries(
                    [summary_ops.tensor_summary(mode, t, i) for i, t in enumerate(ts)]
                )

            raw = batch(*tensors).numpy()
            np.testing.assert_array_equal(summaries.trace_points_of(raw), range(len(names)))
            assert_rows(
                mode, summaries.format_rows(mode, raw), tensors, f"{route} {dtype} {label} {mode}"
            )


@pytest.mark.parametrize("dtype", DTYPES)
def test_eager_and_single_graph_rows_are_exact(route, dtype):
    tensors = [tensor(v, dtype) for v in cases(dtype).values()]
    for mode in MODES:
        eager = np.array([summaries.eager_summary(mode, t) for t in tensors])
        assert_rows(mode, eager, tensors, f"eager {route} {dtype} {mode}")
        # Shapes unknown until run time: sizes, ranks and sums take their float64 path.
        single = tf.function(
            lambda t, mode=mode: summary_ops.summary_row(mode, t, 5),
            input_signature=[tf.TensorSpec(None, getattr(tf, dtype))],
        )
        rows = np.stack([single(t).numpy() for t in tensors])
        assert (rows[:, 0] == 5).all()
        assert_rows(
            mode, summaries.format_rows(mode, rows), tensors, f"graph {route} {dtype} {mode}"
        )


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_of_graph_constants_are_exact_and_cost_no_op(dtype):
    """A ``Const`` op's row is computed on the host while the graph is built: equal to
    the kernel's on the same value (subnormals, non-finite values, empty, scalars), and
    the graph holds no summary op for it."""
    values = cases(dtype)
    constants = {n: tensor(v, dtype).numpy() for n, v in values.items()}
    for mode in MODES:

        @tf.function
        def batch(mode=mode):
            ts = [tf.constant(v, dtype=getattr(tf, dtype)) for v in constants.values()]
            return summary_ops.stack_summaries(
                [summary_ops.tensor_summary(mode, t, i) for i, t in enumerate(ts)]
            )

        graph = batch.get_concrete_function().graph
        assert not [
            op
            for op in graph.get_operations()
            if op.type in ("DebugNumericSummaryV2", "DebugNumericSummary", "Sum")
        ]
        raw = batch().numpy()
        np.testing.assert_array_equal(summaries.trace_points_of(raw), range(len(values)))
        tensors = [tf.constant(v, dtype=getattr(tf, dtype)) for v in constants.values()]
        assert_rows(mode, summaries.format_rows(mode, raw), tensors, f"const {dtype} {mode}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_xla_rows_are_exact(dtype):
    tensors = [tensor(v, dtype) for v in cases(dtype).values()]

    # FULL_STATS's counts are FULL_HEALTH's and CONCISE_HEALTH's; compiling fewer modes
    # keeps the test fast (tests/instrument/test_shapes.py runs each mode in a program).
    modes = (fmt.CURT_HEALTH, fmt.FULL_STATS)

    @tf.function(jit_compile=True)
    def rows(*ts):
        return [[raw_rows.xla_row(mode, t, i) for i, t in enumerate(ts)] for mode in modes]

    for mode, mode_rows in zip(modes, rows(*tensors)):
        raw = np.stack([r.numpy() for r in mode_rows])
        assert_rows(mode, summaries.format_rows(mode, raw), tensors, f"xla {dtype} {mode}")


SHAPE_CASES = [
    ((), "float32"),
    ((0, 3), "float16"),
    ((2, 3), "int32"),
    ((4,), "bool"),
    ((2, 3, 4, 5, 6, 7, 8), "float32"),
    ((1, 1, 1, 1, 1, 2), "uint8"),
]


def test_shape_rows_are_the_kernels_eager_and_under_xla():
    """SHAPE's dtype, rank, size and dimensions (the last six past rank 6, as the kernel
    keeps them) from an eager tensor's shape and from XLA's ops, against the kernel."""
    tensors = [tf.zeros(shape, dtype=getattr(tf, dtype)) for shape, dtype in SHAPE_CASES]
    want = [
        gen_debug_ops.debug_numeric_summary_v2(
            t, output_dtype=tf.float64, tensor_debug_mode=5
        ).numpy()[1:]
        for t in tensors
    ]
    for row, t, expected_row in zip(
        (summaries.eager_summary(fmt.SHAPE, t) for t in tensors), tensors, want
    ):
        np.testing.assert_array_equal(row, expected_row, err_msg=f"eager {t.shape}")

    @tf.function(jit_compile=True)
    def rows(*ts):
        return [raw_rows.xla_row(fmt.SHAPE, t, 0) for t in ts]

    for row, t, expected_row in zip(rows(*tensors), tensors, want):
        np.testing.assert_array_equal(row.numpy()[1:], expected_row, err_msg=f"xla {t.shape}")

    # In a graph: static shapes give constant rows, unknown ones take the kernel.
    @tf.function
    def batch(*ts):
        return summary_ops.stack_summaries(
            [summary_ops.tensor_summary(fmt.SHAPE, t, i) for i, t in enumerate(ts)]
        )

    for i, (row, expected_row) in enumerate(zip(batch(*tensors).numpy(), want)):
        assert row[0] == i
        np.testing.assert_array_equal(row[1:], expected_row, err_msg=f"graph {i}")
    for t, expected_row in zip(tensors, want):
        unknown = tf.function(
            lambda x: summary_ops.summary_row(fmt.SHAPE, x, 3),
            input_signature=[tf.TensorSpec(None, t.dtype)],
        )
        np.testing.assert_array_equal(
            unknown(t).numpy()[1:], expected_row, err_msg=f"unknown shape {t.shape}"
        )


def test_eager_rows_of_large_tensors_are_exact():
    """The host route on tensors past the stock route's threshold, with subnormals (zero
    for float32, by sign for float16) and non-finite values among random ones."""
    rng = np.random.default_rng(3)
    for dtype in DTYPES:
        values = rng.normal(size=50_000)
        values[::997] = float(
            np.finfo(np.float16 if dtype == "float16" else np.float32).smallest_subnormal
        ) * rng.choice([-1, 1, 5], size=51)
        with_inf = values.copy()
        with_inf[[5, 600]] = [np.inf, -np.nan]
        tensors = [tensor(values, dtype), tensor(with_inf, dtype)]
        for mode in MODES:
            rows = np.array([summaries.eager_summary(mode, t) for t in tensors])
            assert_rows(mode, rows, tensors, f"eager large {dtype} {mode}")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_counts_past_two_to_the_24th_are_exact(dtype):
    """More elements than float32 counts exactly, on the stock route and the kernels'."""
    rng = np.random.default_rng(7)
    values = rng.integers(-1, 2, size=BIG).astype(np.float64) * 0.5  # -0.5, 0, 0.5
    finite = tensor(values, dtype)
    values[BIG // 2] = -np.inf
    non_finite = tensor(values, dtype)
    del values

    @tf.function
    def rows(a, b):
        return [
            summary_ops.summary_row(mode, t, 0)
            for mode in (fmt.FULL_HEALTH, fmt.FULL_STATS)
            for t in (a, b)
        ]

    got = [r.numpy() for r in rows(finite, non_finite)]
    for index, (mode, t) in enumerate(
        [(m, t) for m in (fmt.FULL_HEALTH, fmt.FULL_STATS) for t in (finite, non_finite)]
    ):
        assert_rows(
            mode,
            summaries.format_rows(mode, got[index][np.newaxis]),
            [t],
            f"big {dtype} {mode} {index}",
        )


def test_a_diverging_training_loop_reads_back_with_its_statistics(tmp_path):
    """programs/full_stats.py in FULL_STATS: each step's MatMul trace, read with the
    reader, has the min, max, mean and std of that step's finite predictions, before,
    during and after their overflow."""
    import json

    import reader
    from tests.instrument.conftest import run_program
    from tests.program_runs import PROGRAMS

    stdout = run_program([str(PROGRAMS / "full_stats.py"), str(tmp_path)])
    predictions = [
        np.array(p, dtype=np.float32).astype(np.float64)
        for p in json.loads(stdout.strip().splitlines()[-1])
    ]
    with reader.open_run(tmp_path) as dump:
        assert dump.metadata.tensor_debug_mode == fmt.FULL_STATS
        traces = [
            t for t in dump.traces(0, dump.num_traces) if dump.op(present(t.op_id)).name == "MatMul"
        ]
        assert len(traces) == len(predictions)
        overflowed = 0
        for trace, values in zip(traces, predictions):
            summary, finite = trace.summary, values[np.isfinite(values)]
            assert summary is not None
            infinities = present(summary.pos_inf) + present(summary.neg_inf)
            assert (summary.size, infinities, summary.nan) == (
                values.size,
                np.isinf(values).sum(),
                np.isnan(values).sum(),
            )
            if not finite.size:
                assert summary.min is None or np.isnan(summary.min)
                continue
            overflowed += finite.size < values.size
            assert (summary.min, summary.max) == (finite.min(), finite.max())
            assert summary.mean == pytest.approx(finite.mean(), rel=1e-12)
            assert summary.std == pytest.approx(finite.std(), rel=1e-9)
        assert overflowed  # a step with both finite and infinite predictions
        # The first infinity is the squared error of predictions past sqrt(float32 max),
        # which the MatMul's max at that step shows.
        cause = dump.root_cause()
        assert cause is not None and cause.alert.op_type == "Square"
        (at_cause,) = [t for t in traces if t.step == cause.alert.step]
        assert at_cause.summary is not None
        assert np.sqrt(np.finfo(np.float32).max) < max(
            -present(at_cause.summary.min), present(at_cause.summary.max)
        )


# -- checks that cover one another (instrument/summaries/check_elision.py) ----------------------


def _chain(x, w, b, w2):
    """A layer and a half, as a model builds them: every tensor a batch would trace."""
    m = tf.matmul(x, w)
    a = m + b  # covers m (same shape) and b (a static, non-empty output)
    r = tf.nn.relu(a)  # swallows -inf: covers nothing
    z = tf.matmul(r, w2)  # covers r and w2
    flat = tf.reshape(z, [-1])  # covers z
    half = flat * 0.5  # covers flat
    total = tf.reduce_sum(half)  # covers half
    e = tf.exp(total)  # exp(-inf) is 0: covers nothing
    return [x, w, b, m, a, r, w2, z, flat, half, total, e]


CHAIN_COVERED = [True, True, True, True, False, True, True, True, True, True, False, False]
CHAIN_SHAPES = ((4, 3), (3, 5), (5,), (5, 2))
CHAIN_RECOMPUTED = ["MatMul", "MatMul", "Mul", "Relu", "Reshape"]


def _chain_of_other_ops(p, q):
    """Each op that carries a NaN or an infinity, other than the layer's."""
    t, qt = tf.transpose(p), tf.transpose(q)  # [3, 4] each
    a = tf.abs(t)
    root = tf.sqrt(a)
    joined = tf.concat([root, qt], axis=0)  # [6, 4]
    # Not + 1: TensorFlow rewrites log(x + 1) as log1p(x) for the reads of a tensor
    # this test also returns (so keeps as it is), and the two differ by an ulp.
    shifted = joined + 2.0
    logs = tf.math.log(shifted)
    squared = tf.math.squared_difference(logs, 0.5)
    bias_grad = tf.raw_ops.BiasAddGrad(out_backprop=squared)  # [4]
    loss = tf.nn.l2_loss(bias_grad)
    twice = loss * 2.0
    stacked = tf.stack([loss, twice])
    return [
        p,
        q,
        t,
        qt,
        a,
        root,
        joined,
        shifted,
        logs,
        squared,
        bias_grad,
        loss,
        twice,
        stacked,
        tf.exp(stacked),
    ]


OTHER_COVERED = [True] * 13 + [False, False]
OTHER_SHAPES = ((4, 3), (4, 3))
OTHER_RECOMPUTED = sorted(
    [
        "Transpose",
        "Transpose",
        "Abs",
        "Sqrt",
        "ConcatV2",
        "AddV2",
        "Log",
        "SquaredDifference",
        "BiasAddGrad",
        "L2Loss",
        "Mul",
    ]
)
CHAINS: dict[str, tuple[Callable[..., Any], Any, Any, Any]] = {
    "layer": (_chain, CHAIN_SHAPES, CHAIN_COVERED, CHAIN_RECOMPUTED),
    "other_ops": (_chain_of_other_ops, OTHER_SHAPES, OTHER_COVERED, OTHER_RECOMPUTED),
}


@pytest.mark.parametrize("chain", CHAINS)
def test_covered_checks_follow_ops_that_carry_non_finite_values(chain):
    from instrument.summaries.check_elision import covered_checks

    build, shapes, want, _ = CHAINS[chain]
    flags = []

    @tf.function
    def trace(*inputs):
        # Called once the graph holds every consumer, as a segment's batch is built.
        flags.extend(covered_checks(build(*inputs)))
        return tf.constant(0)

    trace.get_concrete_function(*[tf.TensorSpec(s, tf.float32) for s in shapes])
    assert flags == want


def test_unknown_batch_dimensions_keep_the_checks_shapes_cannot_prove():
    from instrument.summaries.check_elision import covered_checks

    def layer(x, w, b, v):
        m = tf.matmul(x, w)
        return [m, b, m + b, v, m + v]

    found = []

    @tf.function
    def trace(*inputs):
        m, b, a, v, c = layer(*inputs)
        found.extend(
            [covered_checks([m, b, a]), covered_checks([m, v, c]), covered_checks([m, None, None])]
        )
        return tf.constant(0)

    trace.get_concrete_function(
        *[tf.TensorSpec(s, tf.float32) for s in ((None, 3), (3, 5), (5,), (None, 5))]
    )
    # m reaches a whatever the batch (b cannot broadcast it away); b reaches a only if
    # the batch is not empty, which nothing proves; m + v may broadcast m (batch 1)
    # against v's empty batch.
    assert found[0] == [True, False, False]
    assert found[1] == [False, False, False]
    # One check alone covers nothing (a tensor traced on its own, or eagerly).
    assert found[2] == [False, False, False]


@pytest.mark.parametrize("chain", CHAINS)
@pytest.mark.parametrize("mode", MODES)
def test_rows_stay_exact_when_checks_cover_one_another(mode, chain, monkeypatch):
    """A NaN or an infinity planted in each input of the chain reaches covered tensors
    only: the covering check sends the batch to the kernels, which recompute the covered
    tensors (a zero row of ``w`` turns x's infinity into NaN through inf * 0)."""
    monkeypatch.setattr(summary_ops, "STOCK_ROUTE_MIN_ELEMENTS", 0)
    build, shapes, want_covered, want_recomputed = CHAINS[chain]
    rng = np.random.default_rng(11)
    base = [rng.normal(size=s).astype(np.float32) for s in shapes]
    base[0][base[0] < -0.8] = 0.0

    @tf.function
    def run(*inputs):
        traced = build(*inputs)
        raw = summary_ops.stack_summaries(
            [summary_ops.tensor_summary(mode, t, i, batched=True) for i, t in enumerate(traced)]
        )
        return raw, traced

    concrete = run.get_concrete_function(*[tf.TensorSpec(v.shape, tf.float32) for v in base])
    graph = concrete.graph
    if mode != fmt.FULL_STATS:  # FULL_STATS' check is the sum its row takes anyway
        # The tensors a check reads (its own Sum, or its place in the small tensors'
        # pooled sum); a scalar is its own check, with no op of its own.
        # (The function returns each traced tensor through an Identity of its own.)
        traced = [
            graph.get_tensor_by_name(t.name).op.inputs[0] for t in concrete.structured_outputs[1]
        ]
        read = [any("tfdbg_tui_check" in c.name for c in t.consumers()) for t in traced]
        assert read == [
            not covered and t.shape.rank != 0 for covered, t in zip(want_covered, traced)
        ], "covered tensors: no check"
    # The batch's cond stays a functional If: its exact branch is not visited each step.
    assert [
        op.get_attr("_lower_using_switch_merge")
        for op in graph.get_operations()
        if op.type in ("If", "StatelessIf")
    ] == [False]
    recomputed = [op for op in graph.get_operations() if "tfdbg_tui_recomputed" in op.name]
    assert recomputed == [], "recomputations live in the branch, not the step"
    branches = graph.as_graph_def().library.function
    # Every covered tensor but the inputs is recomputed in the exact branch.
    assert (
        sorted(
            node.op for f in branches for node in f.node_def if "tfdbg_tui_recomputed" in node.name
        )
        == want_recomputed
    )
    plantings = [("finite", base)]
    for which in range(len(shapes)):
        for bad in (np.nan, np.inf, -np.inf):
            values = [v.copy() for v in base]
            values[which][(0,) * base[which].ndim] = bad
            plantings.append((f"{bad} in input {which}", values))
    if chain == "layer":
        values = [v.copy() for v in base]
        values[1][2] = 0.0  # a zero row of w
        values[0][1, 2] = np.inf
        plantings.append(("inf times a zero row", values))
    for label, values in plantings:
        raw, traced = run(*[tf.constant(v) for v in values])
        raw = raw.numpy()
        np.testing.assert_array_equal(summaries.trace_points_of(raw), range(len(traced)))
        assert_rows(mode, summaries.format_rows(mode, raw), traced, f"{mode} {label}")


@pytest.mark.parametrize("mode", MODES)
def test_variables_read_by_a_batch_are_written_after_its_cond(mode, monkeypatch):
    """The batch's If holds the variable values it read until its checks are done; the
    ops that update those variables wait for it (updated in place, not copied), and the
    rows are of the values read, also when the exact branch runs on an infinity."""
    monkeypatch.setattr(summary_ops, "STOCK_ROUTE_MIN_ELEMENTS", 0)
    monkeypatch.setattr(summary_ops, "MIN_STOCK_ROWS", 0)  # a batch of two with its If
    rng = np.random.default_rng(5)
    start = rng.normal(size=(8, 4)).astype(np.float32)
    v = tf.Variable(start)
    bias = tf.Variable(np.ones(4, np.float32))

    @tf.function
    def step(x):
        read = v.read_value()
        out = tf.matmul(x, read) + bias
        update = v.assign_sub(0.5 * read)
        traced = [read, out]
        raw = summary_ops.stack_summaries(
            [summary_ops.tensor_summary(mode, t, i, batched=True) for i, t in enumerate(traced)]
        )
        with tf.control_dependencies([update]):
            return raw, traced

    x = rng.normal(size=(2, 8)).astype(np.float32)
    graph = step.get_concrete_function(tf.TensorSpec(x.shape, tf.float32)).graph
    (if_op,) = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    writers = [op for op in graph.get_operations() if op.type == "AssignSubVariableOp"]
    assert writers and all(if_op in op.control_inputs for op in writers)
    # Only the written variable's ops wait; the bias is read, never written.
    assert not any(if_op in op.control_inputs for op in graph.get_operations() if op not in writers)

    planted = start.copy()
    planted[3, 1] = np.inf
    for label, value in (("finite", start), ("inf in the variable", planted)):
        v.assign(value)
        raw, traced = step(tf.constant(x))
        np.testing.assert_array_equal(traced[0].numpy(), value)
        assert_rows(mode, summaries.format_rows(mode, raw.numpy()), traced, label)
        np.testing.assert_array_equal(v.numpy(), value - np.float32(0.5) * value)


@pytest.mark.parametrize("mode", [fmt.CURT_HEALTH, fmt.CONCISE_HEALTH])
def test_batches_of_few_stock_rows_take_the_kernels(mode):
    """A segment's batch of fewer than MIN_STOCK_ROWS stock rows (Keras' optimizer conds
    cut a step into such segments) takes the fused kernels: no cond, and exact rows,
    non-finite values too. From MIN_STOCK_ROWS on, the stock route and its cond; a
    tensor whose kernel is dear (CONCISE_HEALTH's, from 16,384 elements) keeps it."""
    values = [
        np.array([1.0, np.nan]),
        np.array([[np.inf, 2.0]]),
        np.array(-3.0),
        np.arange(6.0),
        np.array([-np.inf]),
        np.ones(5),
    ]

    def traced(tensors):
        @tf.function
        def batch(*ts):
            return summary_ops.stack_summaries(
                [summary_ops.tensor_summary(mode, t, i, batched=True) for i, t in enumerate(ts)]
            )

        graph = batch.get_concrete_function(*tensors).graph
        return batch(*tensors).numpy(), {op.type for op in graph.get_operations()}

    few = summary_ops.MIN_STOCK_ROWS - 1
    for n in range(1, few + 1):
        tensors = [tensor(v, "float32") for v in values[:n]]
        raw, types = traced(tensors)
        assert not types & {"If", "StatelessIf"}, (n, types)
        assert "DebugNumericSummaryV2" in types
        assert_rows(mode, summaries.format_rows(mode, raw), tensors, f"{mode} {n} tensors")
    tensors = [tensor(v, "float32") for v in values[: summary_ops.MIN_STOCK_ROWS]]
    raw, types = traced(tensors)
    assert types & {"If", "StatelessIf"}
    assert_rows(mode, summaries.format_rows(mode, raw), tensors, f"{mode} stock")
    big = [tensor(np.ones(summary_ops.STOCK_ROUTE_MIN_ELEMENTS), "float32")]
    raw, types = traced(big)
    assert bool(types & {"If", "StatelessIf"}) == (mode == fmt.CONCISE_HEALTH)
    assert_rows(mode, summaries.format_rows(mode, raw), big, f"{mode} big")


@pytest.mark.parametrize("mode", [fmt.CURT_HEALTH, fmt.CONCISE_HEALTH, fmt.FULL_HEALTH])
def test_small_tensors_share_one_check(mode, monkeypatch):
    """The checks of a batch's small tensors are one sum per dtype (Keras' Adam traces
    dozens of them a step), the large ones keep a Sum each; a NaN, +inf or -inf in any
    of them (float16 widened, float64 apart) sends the batch to the kernels, exactly."""
    monkeypatch.setattr(summary_ops, "STOCK_ROUTE_MIN_ELEMENTS", 0)
    rng = np.random.default_rng(13)
    limit = summary_ops.POOLED_CHECK_MAX_ELEMENTS
    shapes = [
        ((3, 4), "float32"),
        ((7,), "float32"),
        ((2, 2, 2), "float16"),
        ((5,), "float64"),
        ((4, 3), "float64"),
        ((limit + 1,), "float32"),
        ((9,), "float32"),
    ]
    base = [rng.normal(size=shape) for shape, _ in shapes]

    @tf.function
    def batch(*ts):
        # Not the inputs themselves (Placeholders): ops whose outputs are checked.
        scaled = [t * tf.constant(1.5, t.dtype) for t in ts]
        return summary_ops.stack_summaries(
            [summary_ops.tensor_summary(mode, t, i, batched=True) for i, t in enumerate(scaled)]
        ), scaled

    specs = [tf.TensorSpec(shape, dtype) for shape, dtype in shapes]
    graph = batch.get_concrete_function(*specs).graph
    sums = [
        op for op in graph.get_operations() if "tfdbg_tui_check" in op.name and op.type == "Sum"
    ]
    # float32 and float16 (widened) pooled, float64 pooled, the large one alone.
    assert len(sums) == 3, [op.name for op in sums]
    plantings = [("finite", base)]
    for which in range(len(shapes)):
        for bad in (np.nan, np.inf, -np.inf):
            values = [v.copy() for v in base]
            values[which].flat[-1] = bad
            plantings.append((f"{bad} in tensor {which}", values))
    for label, values in plantings:
        tensors = [tensor(v, dtype) for v, (_, dtype) in zip(values, shapes)]
        raw, scaled = batch(*tensors)
        assert_rows(mode, summaries.format_rows(mode, raw.numpy()), scaled, f"{mode} {label}")


@pytest.mark.parametrize("mode", [fmt.CURT_HEALTH, fmt.CONCISE_HEALTH])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_scalar_is_its_own_check(mode, dtype):
    """Scalars of a segment's batch (Keras' optimizers trace dozens a step) are checked
    as they are: no Sum, Rank or Range of their own. The rows stay exact, and a
    non-finite scalar among finite ones sends the batch to the kernels."""
    values = [np.array(2.0), np.array(-0.0), np.array(5e-324), np.array(3.0), np.array(-1.0)]

    @tf.function
    def batch(*ts):
        scaled = [t * tf.constant(1.5, t.dtype) for t in ts]  # not constants: stock rows
        return summary_ops.stack_summaries(
            [summary_ops.tensor_summary(mode, t, i, batched=True) for i, t in enumerate(scaled)]
        ), scaled

    tensors = [tensor(v, dtype) for v in values]
    graph = batch.get_concrete_function(*tensors).graph
    types = [op.type for op in graph.get_operations()]
    assert "Sum" not in types and "Range" not in types, types
    assert {"If", "StatelessIf"} & set(types)
    for bad in (None, np.inf, -np.inf, np.nan):
        tensors = [tensor(v, dtype) for v in values]
        if bad is not None:
            tensors[3] = tensor(np.array(bad), dtype)
        raw, scaled = batch(*tensors)
        assert_rows(mode, summaries.format_rows(mode, raw.numpy()), scaled, f"{dtype} {bad}")
