"""Conformance with TensorFlow's own dumper, on the scenarios of its test suite.

programs/conformance.py runs each scenario of TensorFlow's dumper tests (eager ops,
bad values per mode, booleans, nested functions, two graphs of one function, op and
dtype filters, a while loop, threads, a Keras LSTM, MobileNetV2, the circular buffer)
once under ``tf.debugging.experimental.enable_dump_debug_info`` and once under
`instrument.enable_dump_debug_info`. TensorFlow's dump is read with its own
``DebugDataReader``, ours with `reader`; the tests compare what TensorFlow's suite
asserts: executed op types, traced graph op types, health values per mode,
FULL_TENSOR values, the user's line, filters, circular-buffer semantics. Where we
differ on purpose the test says so (docs/instrument.md, "Conformance with
TensorFlow's dumper").
"""

from __future__ import annotations

import collections
import json
import re
import shutil
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import reader
from tests.instrument.conftest import run_program
from tests.prefetch import in_background, made, prefetchable
from tests.program_runs import PROGRAMS, line_of

tf = pytest.importorskip("tensorflow")
from tensorflow.python.debug.lib import debug_events_reader  # noqa: E402

from tests.present import present  # noqa: E402

PROGRAM = PROGRAMS / "conformance.py"
SUMMARY_MODES = ("CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE")
FILTERS = (
    "float",
    "float_only_sum",
    "float_no_sum",
    "int",
    "int_via_lambda",
    "exclude_sum",
    "regex_addv2",
    "regex_log",
    "regex_addv2_log",
)
PLAN = (
    [f"eager_collatz:{m}" for m in ("NO_TENSOR", *SUMMARY_MODES, "FULL_TENSOR")]
    + [f"bad_values:{m}" for m in SUMMARY_MODES]
    + [f"training_nan:{m}" for m in ("CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH")]
    + ["booleans:SHAPE"]
    + [f"nested:{m}" for m in ("NO_TENSOR", *SUMMARY_MODES, "FULL_TENSOR")]
    + ["two_compilations:NO_TENSOR", "duplicate_names:NO_TENSOR"]
    + [f"{name}:FULL_TENSOR" for name in FILTERS]
    + ["while_doubling:NO_TENSOR", "while_doubling:FULL_TENSOR"]
    + [
        f"threads:{m}"
        for m in ("NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "SHAPE", "FULL_TENSOR")
    ]
    + [
        "keras_recurrent:NO_TENSOR",
        "keras_recurrent:FULL_TENSOR",
        "mobilenet:NO_TENSOR",
        "mobilenet:FULL_TENSOR",
        "circular:CURT_HEALTH",
    ]
    + [f"call_inputs:{m}" for m in ("NO_TENSOR", "CURT_HEALTH", "FULL_TENSOR")]
    + [
        f"{scenario}:{m}"
        for scenario in ("mirrored_fit", "mirrored_loop_function")
        for m in ("NO_TENSOR", *SUMMARY_MODES, "FULL_TENSOR")
    ]
    + [
        f"{scenario}:{m}"
        for scenario in ("mirrored_fit_in_scope", "mirrored_loop")
        for m in ("NO_TENSOR", "FULL_TENSOR")
    ]
    + [f"mirrored_loop_average:{m}" for m in ("CURT_HEALTH", "FULL_HEALTH")]
)
DEVICES = ("CPU:0", "CPU:1")

# Where the two dumps differ on purpose (docs/instrument.md says why):
# - we also trace the inputs of functions (their Placeholders);
# - we do not trace IdentityN (TensorFlow makes it depend on every stateful op of a
#   function, our trace ops included: tracing it would close a cycle);
# - we do not trace the Shape ops that while_v2's gradient adds to an already built
#   forward loop body (trace ops built there would capture into the wrong graph).
OURS_ONLY = {"Placeholder"}
TF_ONLY = {"IdentityN"}


@dataclass(frozen=True)
class Exec:
    op_type: str  # function calls without their numeric suffix
    graph_id: Any
    summaries: tuple | None  # per output, normalised (`_tf_summary`, `_our_summary`)
    values: tuple | None  # FULL_TENSOR: per output
    inputs: int = 0
    device: str | None = None  # of the first output


@dataclass(frozen=True)
class Trace:
    op_type: str
    op_name: str
    slot: int
    summary: dict | None
    value: np.ndarray | None
    device: str | None = None


@dataclass
class Facts:
    executions: list[Exec]
    traces: list[Trace]
    log_line: int | None = None  # nested: the line that created the Log op
    # Ours: the types of the traceable graph ops never traced, nothing using their results.
    unused: frozenset[str] = frozenset()
    # Ours: the names of those ops.
    unused_names: frozenset[str] = frozenset()

    def trace_types(self, *, drop=frozenset()) -> list[str]:
        return [t.op_type for t in self.traces if t.op_type not in drop]

    def traces_of(self, op_type: str) -> list[Trace]:
        return [t for t in self.traces if t.op_type == op_type]


def _function_name(op_type: str) -> str:
    return re.sub(r"_\d+$", "", op_type)


def _tf_summary(mode: str, row) -> dict | None:
    """TensorFlow's DebugNumericSummaryV2 row (tensor id first), normalised."""
    if row is None or len(row) == 0 or any(x is None for x in row):
        return None
    v = [float(x) for x in row]
    if mode == "CURT_HEALTH":
        return {"alert": bool(v[1])}
    if mode == "CONCISE_HEALTH":
        return dict(zip(("size", "neg_inf", "pos_inf", "nan"), map(int, v[1:5])))
    if mode == "FULL_HEALTH":
        out = dict(
            zip(
                ("rank", "size", "neg_inf", "pos_inf", "nan", "neg", "zero", "pos"),
                map(int, v[3:11]),
            )
        )
        return {**out, "dtype": tf.as_dtype(int(v[2])).name}
    rank = int(v[2])  # SHAPE: dtype, rank, size, then the shape padded to 6
    return {
        "dtype": tf.as_dtype(int(v[1])).name,
        "rank": rank,
        "size": int(v[3]),
        "shape": tuple(int(x) for x in v[4 : 4 + min(rank, 6)]),
    }


def _our_summary(mode: str, s) -> dict | None:
    if s is None:
        return None
    if mode == "CURT_HEALTH":
        return {"alert": s.is_alert}
    if mode == "CONCISE_HEALTH":
        return {"size": s.size, "neg_inf": s.neg_inf, "pos_inf": s.pos_inf, "nan": s.nan}
    if mode == "FULL_HEALTH":
        return {
            "rank": s.rank,
            "size": s.size,
            "neg_inf": s.neg_inf,
            "pos_inf": s.pos_inf,
            "nan": s.nan,
            "neg": s.neg,
            "zero": s.zero,
            "pos": s.pos,
            "dtype": s.dtype,
        }
    return {
        "dtype": s.dtype,
        "rank": s.rank,
        "size": s.size,
        "shape": tuple(s.shape[:6]) if s.shape is not None else None,
    }


def _no_summaries(summaries) -> tuple | None:
    """Outputs without a summary (resources, or none at all) read alike."""
    summaries = tuple(summaries or ())
    return None if all(s is None for s in summaries) else summaries


def _tf_trace_value(dump, trace):
    """A FULL_TENSOR trace's value in TensorFlow's dump; None for the variant tensors
    of tf.data's iterators, which TensorFlow's own reader cannot turn into arrays."""
    try:
        return dump.graph_execution_trace_to_tensor_value(trace)
    except ValueError:
        return None


def tf_facts(path, mode: str) -> Facts:
    with debug_events_reader.DebugDataReader(str(path)) as dump:
        dump.update()
        executions = []
        for e in dump.executions():
            values = sums = None
            if mode == "FULL_TENSOR":
                values = tuple(dump.execution_to_tensor_values(e))
            elif mode != "NO_TENSOR":
                sums = _no_summaries(_tf_summary(mode, v) for v in e.debug_tensor_values or ())
            device_ids = e.output_tensor_device_ids or ()
            device = dump.device_name_by_id(device_ids[0]) if device_ids else None
            executions.append(
                Exec(
                    _function_name(e.op_type),
                    e.graph_id,
                    sums,
                    values,
                    len(e.input_tensor_ids or ()),
                    device,
                )
            )
        traces, log_line = [], None
        for t in dump.graph_execution_traces():
            digest = dump.graph_by_id(t.graph_id).get_op_creation_digest(t.op_name)
            value = _tf_trace_value(dump, t) if mode == "FULL_TENSOR" else None
            summary = _tf_summary(mode, t.debug_tensor_value) if mode in SUMMARY_MODES else None
            traces.append(
                Trace(digest.op_type, t.op_name, t.output_slot, summary, value, t.device_name)
            )
            if digest.op_type == "Log":
                _, frames = dump.read_graph_op_creation_stack_trace(digest)
                user = [line for path, line, _ in frames if path.endswith("conformance.py")]
                log_line = user[-1] if user else None
    return Facts(executions, traces, log_line)


def our_facts(path, mode: str) -> Facts:
    with reader.open_run(str(path)) as dump:
        executions = []
        for begin, end in dump.kept_executions():
            for index in range(begin, end):
                e = dump.execution(index)
                values = sums = None
                if mode == "FULL_TENSOR":
                    values = tuple(
                        dump.execution_value(index, slot) for slot in range(len(e.output_ids))
                    )
                elif mode != "NO_TENSOR":
                    sums = _no_summaries(_our_summary(mode, s) for s in present(e.summaries))
                executions.append(
                    Exec(
                        _function_name(e.op_type),
                        e.graph_id,
                        sums,
                        values,
                        len(e.input_ids),
                        e.devices[0] if e.devices else None,
                    )
                )
        traces, log_line = [], None
        for begin, end in dump.kept_traces():
            for t in dump.traces(begin, end):
                op = dump.op(present(t.op_id))
                value = dump.trace_value(t.index) if mode == "FULL_TENSOR" else None
                summary = _our_summary(mode, t.summary) if mode in SUMMARY_MODES else None
                traces.append(Trace(op.op_type, op.name, t.slot, summary, value, op.device))
                if op.op_type == "Log":
                    user = [
                        f.line
                        for f in dump.stack(present(op.stack_id))
                        if f.path.endswith("conformance.py")
                    ]
                    log_line = user[-1] if user else None
        traced_ops = {(t.op_type, t.op_name) for t in traces}
        untraced = [
            op
            for graph in dump.graphs()
            for op in _unused_ops(dump, graph.id)
            if (op.op_type, op.name) not in traced_ops
            and any(tp is not None for tp in op.trace_points)
        ]
    return Facts(
        executions,
        traces,
        log_line,
        frozenset(op.op_type for op in untraced),
        frozenset(op.name for op in untraced),
    )


# Ops that nothing consumes and still count: function outputs go through these.
_SINKS = frozenset({"Identity", "IdentityN", "NoOp"})


def _unused_ops(dump, graph_id: int) -> list:
    """The ops of a graph whose outputs no op uses, directly or through other such
    ops (TensorFlow prunes them from the function it runs; a stateful one among them,
    a variable read, is taken as unused too, which only leaves it out of a comparison)."""
    ops = dump.graph_ops(graph_id)
    used: dict[int, bool] = {}
    for op in sorted(ops, key=lambda o: o.id, reverse=True):  # consumers come later
        consumers = [c for c, _ in dump.consumers(op.id)]
        used[op.id] = (
            op.num_outputs == 0
            or op.op_type in _SINKS
            or any(used.get(c.id, True) for c in consumers)
        )
    return [op for op in ops if not used[op.id]]


def _unused_kinds(ours: Facts) -> set[str]:
    """The types of the ops we recorded and never traced because nothing uses their
    results (TensorFlow prunes them from the function it runs; its dumper's debug ops
    make the program compute them): TensorFlow's traces of such types may outnumber
    ours (docs/instrument.md, "What is recorded")."""
    return set(ours.unused)


class Conformance:
    """Both dumps of every scenario, decoded on first use."""

    def __init__(self, root, seen: dict[str, dict]) -> None:
        self.root, self.seen = root, seen
        self._facts: dict[tuple[str, str], Facts] = {}

    def facts(self, dumper: str, name: str) -> Facts:
        key = (dumper, name)
        if key not in self._facts:
            mode = name.rsplit("-", 1)[1]
            path = self.root / dumper / name
            self._facts[key] = (tf_facts if dumper == "tf" else our_facts)(path, mode)
        return self._facts[key]

    def both(self, name: str) -> tuple[Facts, Facts]:
        return self.facts("tf", name), self.facts("ours", name)


@pytest.fixture(scope="module")
def conformance(request) -> Conformance:
    return made(request, "conformance")


@prefetchable("conformance")
def _run_scenarios(root) -> Conformance:
    """The scenarios run under each dumper, one process each, the two at once (a
    process is mostly TensorFlow on one core) unless the tests run beside them."""
    from concurrent.futures import ThreadPoolExecutor

    def run(dumper: str) -> dict:
        try:
            stdout = run_program([str(PROGRAM), dumper, str(root / dumper), *PLAN])
        except AssertionError as hung:
            if "(most recent call first)" not in str(hung):
                raise
            # Once in about ten runs of the whole suite the program hung (faulthandler
            # printed its stacks): kept visible as a warning while it is diagnosed, and
            # the scenarios run again into a fresh directory.
            warnings.warn(
                f"conformance.py hung under {dumper!r}: {str(hung)[-3000:]}", stacklevel=1
            )
            again = root / f"{dumper}-again"
            stdout = run_program([str(PROGRAM), dumper, str(again), *PLAN])
            shutil.rmtree(root / dumper, ignore_errors=True)
            again.rename(root / dumper)
        return json.loads(stdout.strip().splitlines()[-1])

    dumpers = ("tf", "ours")
    # In the background the tests run beside it: one process at a time.
    with ThreadPoolExecutor(max_workers=1 if in_background() else len(dumpers)) as pool:
        seen = dict(zip(dumpers, pool.map(run, dumpers)))
    return Conformance(root, seen)


def _same_values(tf_values, our_values) -> None:
    assert len(tf_values) == len(our_values)
    for theirs, ours in zip(tf_values, our_values):
        theirs, ours = np.asarray(theirs), np.asarray(ours)
        assert theirs.shape == ours.shape and theirs.dtype == ours.dtype
        np.testing.assert_array_equal(theirs, ours)


def _paired(tf_facts: Facts, our_facts: Facts) -> list[tuple[Trace, Trace]]:
    """Traces of both dumps paired in order, ours without the traces only we make."""
    ours = [t for t in our_facts.traces if t.op_type not in OURS_ONLY]
    theirs = [t for t in tf_facts.traces if t.op_type not in TF_ONLY]
    assert [(t.op_type, t.op_name, t.slot) for t in theirs] == [
        (t.op_type, t.op_name, t.slot) for t in ours
    ]
    return list(zip(theirs, ours))


# -- eager ops ----------------------------------------------------------------------------

COLLATZ = [
    "Greater",
    "FloorMod",
    "Equal",
    "RealDiv",
    "Greater",
    "FloorMod",
    "Equal",
    "Mul",
    "AddV2",
    *["Greater", "FloorMod", "Equal", "RealDiv"] * 4,
    "Greater",
]


@pytest.mark.parametrize("mode", ["NO_TENSOR", *SUMMARY_MODES, "FULL_TENSOR"])
def test_eager_ops_are_recorded_alike(conformance, mode):
    theirs, ours = conformance.both(f"eager_collatz-{mode}")
    assert [e.op_type for e in theirs.executions] == COLLATZ
    assert [e.op_type for e in ours.executions] == COLLATZ
    assert not theirs.traces and not ours.traces
    if mode in SUMMARY_MODES:
        assert [e.summaries for e in ours.executions] == [e.summaries for e in theirs.executions]
        divisions = [e.summaries for e in ours.executions if e.op_type == "RealDiv"]
        assert len(divisions) == 5 and all(s is not None for s in divisions)
    if mode == "FULL_TENSOR":
        for t, o in zip(theirs.executions, ours.executions):
            _same_values(t.values, o.values)
        assert [float(e.values[0]) for e in ours.executions if e.op_type == "RealDiv"] == [
            5,
            8,
            4,
            2,
            1,
        ]


# -- graph traces and their summaries --------------------------------------------------------


@pytest.mark.parametrize("mode", SUMMARY_MODES)
def test_summaries_of_bad_values_match_per_mode(conformance, mode):
    """(x + y) / (x - y) in float16: RealDiv holds -inf 1, +inf 3, NaN 2."""
    theirs, ours = conformance.both(f"bad_values-{mode}")
    pairs = _paired(theirs, ours)
    assert [t.op_type for t, _ in pairs] == ["AddV2", "Sub", "RealDiv"]
    for t, o in pairs:
        assert o.summary == t.summary, o.op_type
    division = pairs[-1][1].summary
    expected = {
        "CURT_HEALTH": {"alert": True},
        "CONCISE_HEALTH": {"size": 8, "neg_inf": 1, "pos_inf": 3, "nan": 2},
        "FULL_HEALTH": {
            "rank": 1,
            "size": 8,
            "neg_inf": 1,
            "pos_inf": 3,
            "nan": 2,
            "neg": 1,
            "zero": 0,
            "pos": 1,
            "dtype": "float16",
        },
        "SHAPE": {"dtype": "float16", "rank": 1, "size": 8, "shape": (8,)},
    }[mode]
    assert division == expected
    # On purpose: we also trace the function's two inputs.
    assert [t.op_type for t in ours.traces].count("Placeholder") == 2


@pytest.mark.parametrize("mode", ["CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH"])
def test_summaries_of_a_training_step_that_turns_nan_match(conformance, mode):
    """Every trace of two training steps, the second one NaN from an inf * 0 inside the
    first MatMul: where our checks cover one another (instrument/summaries/check_elision.py) the
    NaN step's rows are recomputed exactly, and equal TensorFlow's."""
    theirs, ours = conformance.both(f"training_nan-{mode}")
    pairs = _paired(theirs, ours)
    assert len(pairs) > 40
    for t, o in pairs:
        assert o.summary == t.summary, (o.op_type, o.op_name)
    second = pairs[len(pairs) // 2 :]
    matmul = next(o for _, o in second if o.op_type == "MatMul")
    if mode == "CURT_HEALTH":
        assert matmul.summary == {"alert": True}
    else:
        assert present(matmul.summary)["nan"] == 5  # the input's row, times every column
    assert not any(
        (o.summary or {}).get("alert") or (o.summary or {}).get("nan")
        for _, o in pairs[: len(pairs) // 2]
    )


def test_boolean_tensors_have_shapes(conformance):
    theirs, ours = conformance.both("booleans-SHAPE")
    pairs = _paired(theirs, ours)
    assert [t.op_type for t, _ in pairs] == ["LogicalAnd", "LogicalNot"]
    for t, o in pairs:
        assert o.summary == t.summary == {"dtype": "bool", "rank": 2, "size": 4, "shape": (2, 2)}


@pytest.mark.parametrize("mode", ["NO_TENSOR", *SUMMARY_MODES, "FULL_TENSOR"])
def test_nested_functions(conformance, mode):
    theirs, ours = conformance.both(f"nested-{mode}")
    for facts in (theirs, ours):
        assert [e.op_type for e in facts.executions] == ["__inference_sin1p_log_sum"]
        assert facts.trace_types(drop=OURS_ONLY) == ["AddV2", "Log", "Const", "AddV2", "Sin"]
        assert facts.log_line == line_of(PROGRAM, "NESTED_LOG_LINE")
    pairs = _paired(theirs, ours)
    if mode in SUMMARY_MODES:
        assert [o.summary for _, o in pairs] == [t.summary for t, _ in pairs]
    if mode == "FULL_TENSOR":
        _same_values([t.value for t, _ in pairs], [o.value for _, o in pairs])
        assert float(present(pairs[1][1].value)) == pytest.approx(np.log(5.0))
        assert float(present(pairs[-1][1].value)) == pytest.approx(np.sin(1.0 + np.log(5.0)))


@pytest.mark.parametrize("scenario", ["two_compilations", "duplicate_names"])
def test_two_graphs_of_one_python_function(conformance, scenario):
    """Four calls alternating between two graphs: graph ids a, b, a, b."""
    for facts in conformance.both(f"{scenario}-NO_TENSOR"):
        assert [e.op_type for e in facts.executions] == ["__inference_ceil_times_two"] * 4
        a, b, c, d = (e.graph_id for e in facts.executions)
        assert a == c and b == d and a != b


# What TensorFlow 2.21's dumper and ours trace: its suite's lists, plus the int32
# Const (the reduction axis of `reduce_sum`) that both now trace.
FILTERED = {
    "float": ["Unique", "Sum"],
    "float_only_sum": ["Sum"],
    "float_no_sum": ["Unique"],
    "int": ["Unique", "Const"],
    "int_via_lambda": ["Unique", "Const"],
    "exclude_sum": ["Unique", "Unique", "Const"],
    "regex_addv2": ["AddV2", "AddV2"],
    "regex_log": ["Log"],
    "regex_addv2_log": ["AddV2", "Log", "AddV2"],
}


@pytest.mark.parametrize("name", FILTERS)
def test_op_regex_and_tensor_dtypes_filters(conformance, name):
    theirs, ours = conformance.both(f"{name}-FULL_TENSOR")
    pairs = _paired(theirs, ours)
    assert [t.op_type for t, _ in pairs] == FILTERED[name]
    _same_values([t.value for t, _ in pairs], [o.value for _, o in pairs])


@pytest.mark.parametrize("mode", ["NO_TENSOR", "FULL_TENSOR"])
def test_while_loop_in_a_function(conformance, mode):
    theirs, ours = conformance.both(f"while_doubling-{mode}")
    for facts in (theirs, ours):
        types = facts.trace_types(drop=OURS_ONLY)
        assert types.count("Less") == 5 and types.count("Mul") == 4 and "AddV2" in types
    assert conformance.seen["ours"]["while_doubling"] == 8.0
    if mode == "FULL_TENSOR":
        for facts in (theirs, ours):
            assert [float(t.value) for t in facts.traces_of("Mul")] == [1.0, 2.0, 4.0, 8.0]
            assert [bool(t.value) for t in facts.traces_of("Less")] == [True] * 4 + [False]


@pytest.mark.parametrize(
    "mode", ["NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "SHAPE", "FULL_TENSOR"]
)
def test_calls_from_several_threads(conformance, mode):
    """One call on the enabling thread, three on other threads: all four traced."""
    theirs, ours = conformance.both(f"threads-{mode}")
    # The three calls run at once: their traces interleave differently in each dump, so
    # the traces are compared as multisets, not in order.
    ours_traces = [t for t in ours.traces if t.op_type not in OURS_ONLY]
    theirs_traces = [t for t in theirs.traces if t.op_type not in TF_ONLY]

    def kinds(traces):
        return collections.Counter(
            (
                t.op_type,
                t.op_name,
                t.slot,
                tuple(sorted(t.summary.items())) if mode in SUMMARY_MODES and t.summary else None,
            )
            for t in traces
        )

    assert kinds(ours_traces) == kinds(theirs_traces)
    types = [t.op_type for t in ours_traces]
    assert types.count("Mul") == 4 and types.count("ReadVariableOp") == 8
    if mode == "FULL_TENSOR":
        assert [float(t.value) for t in ours_traces if t.op_type == "Mul"] == [6.0] * 4
    assert conformance.seen["tf"]["threads"] == conformance.seen["ours"]["threads"] == 34.0
    # On purpose: we record every eager op, the Identity of `read_value()` included,
    # and the three calls made from other threads (TensorFlow's op callbacks are per
    # thread: its dumper does not see them).
    ours_types = collections.Counter(e.op_type for e in ours.executions)
    theirs_types = collections.Counter(e.op_type for e in theirs.executions)
    assert ours_types - theirs_types == {"__inference_increase_x": 3, "Identity": 1}
    assert not theirs_types - ours_types


# -- Keras models ---------------------------------------------------------------------------


def _traced_kinds(facts: Facts) -> collections.Counter:
    return collections.Counter((t.op_type, t.slot) for t in facts.traces)


def _assert_untraced_inputs_are_dataset_elements(theirs: Facts, ours: Facts) -> None:
    """The inputs TensorFlow traces and we do not are tf.data functions' (``args_N``):
    Keras' fit hands its data maps the whole arrays at every step."""
    untraced = {t.op_name for t in theirs.traces if t.op_type == "Placeholder"} - {
        t.op_name for t in ours.traces if t.op_type == "Placeholder"
    }
    assert all(name.startswith("args_") for name in untraced), untraced


@pytest.mark.parametrize("mode", ["NO_TENSOR", "FULL_TENSOR"])
def test_keras_recurrent_model_predict_and_fit(conformance, mode):
    theirs, ours = conformance.both(f"keras_recurrent-{mode}")
    # The instrumented run computes what TensorFlow's suite expects.
    for dumper in ("tf", "ours"):
        losses = conformance.seen[dumper]["keras_recurrent"]["loss"]
        assert losses == pytest.approx([1.0, 0.9603999853134155, 0.9223681688308716])
    for facts in (theirs, ours):
        types = set(facts.trace_types())
        assert {"MatMul", "BiasAdd", "Sigmoid", "Tanh", "SigmoidGrad", "TanhGrad"} <= types
    assert [e.op_type for e in ours.executions] == [e.op_type for e in theirs.executions]
    only_theirs = _traced_kinds(theirs) - _traced_kinds(ours)
    only_ours = _traced_kinds(ours) - _traced_kinds(theirs)
    # On purpose: IdentityN, and while_v2's gradient's Shape ops hoisted into the
    # forward loop body, are not traced by us; function inputs are, but for tf.data
    # functions' (Keras' fit hands its data maps the whole arrays at every step).
    # Keras' RNN runs a first step outside its loop and throws it away: not traced.
    assert {op for op, _ in only_theirs} <= TF_ONLY | {"Shape", "Placeholder"} | _unused_kinds(ours)
    _assert_untraced_inputs_are_dataset_elements(theirs, ours)
    allowed = OURS_ONLY | ({"Const", "TensorListPopBack"} if mode == "FULL_TENSOR" else set())
    assert {op for op, _ in only_ours} <= allowed


@pytest.mark.parametrize("mode", ["NO_TENSOR", "FULL_TENSOR"])
def test_mobilenet_v2_fit(conformance, mode):
    theirs, ours = conformance.both(f"mobilenet-{mode}")
    for facts in (theirs, ours):
        assert {"Conv2D", "Relu6", "Conv2DBackpropFilter", "Relu6Grad"} <= set(facts.trace_types())
    assert [e.op_type for e in ours.executions] == [e.op_type for e in theirs.executions]
    only_theirs = _traced_kinds(theirs) - _traced_kinds(ours)
    only_ours = _traced_kinds(ours) - _traced_kinds(theirs)
    # The gradient with respect to the input data, which nothing uses: not traced.
    assert {op for op, _ in only_theirs} <= TF_ONLY | {"Placeholder"} | _unused_kinds(ours)
    _assert_untraced_inputs_are_dataset_elements(theirs, ours)
    assert {op for op, _ in only_ours} <= OURS_ONLY
    if mode == "FULL_TENSOR":
        convolutions = [t.value for t in ours.traces_of("Conv2D")]
        assert convolutions and all(v.ndim == 4 and v.shape[0] == 2 for v in convolutions)
        _same_values([t.value for t in theirs.traces_of("Conv2D")], convolutions)


# -- circular buffer and arguments -----------------------------------------------------------


def test_circular_buffer_keeps_the_latest_and_also_the_first_alert(conformance):
    """A buffer of 5: both keep the latest 5 executions; we also keep the first
    alert's window (the Log of 0 and the 5 executions before it)."""
    theirs, ours = conformance.both("circular-CURT_HEALTH")
    latest = [(e.op_type, e.summaries) for e in theirs.executions]
    assert latest == [("Mul", ({"alert": True},))] * 5
    kept = [(e.op_type, e.summaries) for e in ours.executions]
    assert kept[-5:] == latest
    window = [op for op, _ in kept[:-5]]
    assert window[-2:] == ["Sub", "Log"] and window.count("Mul") >= 5
    log = kept[len(window) - 1]
    assert log == ("Log", ({"alert": True},))


def test_bad_arguments_raise_value_error_as_in_tensorflow(conformance):
    """The same error class; the message names what TensorFlow's names: the offending
    value and the valid options."""
    theirs, ours = conformance.seen["tf"]["errors"], conformance.seen["ours"]["errors"]
    assert (
        {k: v[0] for k, v in theirs.items()}
        == {k: v[0] for k, v in ours.items()}
        == {"mode": "ValueError", "dtypes_dict": "ValueError", "dtypes_str": "ValueError"}
    )
    mode_message = ours["mode"][1]
    assert "NONSENSICAL" in mode_message and "tensor_debug_mode" in mode_message
    for valid in (
        "NO_TENSOR",
        "CURT_HEALTH",
        "CONCISE_HEALTH",
        "FULL_HEALTH",
        "SHAPE",
        "FULL_TENSOR",
    ):
        assert valid in theirs["mode"][1] and valid in mode_message
    for label, offending in (("dtypes_dict", "{}"), ("dtypes_str", "float32")):
        message = ours[label][1]
        assert offending in message and "tensor_dtypes" in message
        assert all(word in message for word in ("list", "tuple", "callable"))


# -- what the dumper adds, and distribution (TensorFlow's distributed_callbacks_test) ------


@pytest.mark.parametrize("mode", ["NO_TENSOR", "CURT_HEALTH", "FULL_TENSOR"])
def test_calls_are_recorded_with_the_program_s_inputs(conformance, mode):
    """A call of ``outer(x, y)`` has the inputs TensorFlow's dumper records (the two
    arguments and the captured variable of the function it calls), ``single(x)`` one:
    not the dumper's own queue and counter; nor are they ops of the graphs."""
    theirs, ours = conformance.both(f"call_inputs-{mode}")

    def calls(facts):
        return [
            (e.op_type, e.inputs) for e in facts.executions if e.op_type.startswith("__inference_")
        ]

    assert calls(ours) == calls(theirs)
    assert [n for _, n in calls(ours)] == [3, 1]
    with reader.open_run(str(conformance.root / "ours" / f"call_inputs-{mode}")) as dump:
        # Each graph's inputs: its arguments, then the capture of ``scale`` (a resource
        # placeholder), and nothing of the dumper's.
        inputs = {
            graph.name: [
                op.output_dtypes[0]
                for op in dump.graph_ops(graph.id)
                if op.op_type == "Placeholder"
            ]
            for graph in dump.graphs()
        }
        assert inputs == {
            "outer": ["float32", "float32", "resource"],
            "inner": ["float32", "resource"],
            "single": ["float32"],
        }


def _per_device(facts: Facts, op_types) -> dict[str, collections.Counter]:
    counts: dict[str, collections.Counter] = {device: collections.Counter() for device in DEVICES}
    for t in facts.traces:
        for device in DEVICES:
            if t.op_type in op_types and (t.device or "").endswith(device):
                counts[device][t.op_type] += 1
    return counts


FIT_OPS = ("MatMul", "BiasAdd", "Relu", "ReluGrad")


@pytest.mark.parametrize(
    "scenario,mode",
    [
        *(("mirrored_fit", m) for m in ("NO_TENSOR", *SUMMARY_MODES, "FULL_TENSOR")),
        ("mirrored_fit_in_scope", "NO_TENSOR"),
        ("mirrored_fit_in_scope", "FULL_TENSOR"),
    ],
)
def test_keras_fit_under_mirrored_strategy_on_two_devices(conformance, scenario, mode):
    """Keras fit on two replicas runs in every mode, enabled before or inside the
    strategy's scope; its ops are traced on both devices equally, as TensorFlow's
    dumper traces them, and the step is one function call (one epoch of one batch)."""
    theirs, ours = conformance.both(f"{scenario}-{mode}")
    assert (
        conformance.seen["ours"][scenario.replace("_in_scope", "")]
        == conformance.seen["tf"][scenario.replace("_in_scope", "")]
    )

    def calls(facts):
        return [e for e in facts.executions if e.op_type.startswith("__inference_")]

    assert len(calls(ours)) == len(calls(theirs)) == 1
    ours_by_device, theirs_by_device = _per_device(ours, FIT_OPS), _per_device(theirs, FIT_OPS)
    assert ours_by_device == theirs_by_device
    assert ours_by_device["CPU:0"] == ours_by_device["CPU:1"]
    assert set(ours_by_device["CPU:0"]) >= {"MatMul", "Relu", "ReluGrad"}
    if mode == "FULL_TENSOR":
        for device in DEVICES:
            relus = [
                (t.value, o.value)
                for t, o in zip(
                    [t for t in theirs.traces if t.op_type == "Relu" and t.device.endswith(device)],
                    [o for o in ours.traces if o.op_type == "Relu" and o.device.endswith(device)],
                )
            ]
            assert relus
            for their_value, our_value in relus:
                np.testing.assert_array_equal(their_value, our_value)


@pytest.mark.parametrize("mode", ["NO_TENSOR", *SUMMARY_MODES, "FULL_TENSOR"])
def test_custom_loop_under_mirrored_strategy_in_a_function(conformance, mode):
    """``strategy.run(train_step)`` in a tf.function, twice: MatMul and BiasAdd traced
    on both devices as TensorFlow's dumper traces them, and the weights reach what
    two SGD steps on summed gradients give."""
    theirs, ours = conformance.both(f"mirrored_loop_function-{mode}")
    assert (
        conformance.seen["ours"]["mirrored_loop_function"]
        == conformance.seen["tf"]["mirrored_loop_function"]
    )
    by_device = _per_device(ours, ("MatMul", "BiasAdd"))
    assert by_device == _per_device(theirs, ("MatMul", "BiasAdd"))
    assert by_device["CPU:0"]["BiasAdd"] == by_device["CPU:1"]["BiasAdd"] == 2
    if mode == "FULL_TENSOR":
        first_bias_adds = [o.value for o in ours.traces if o.op_type == "BiasAdd"][:2]
        assert [v.tolist() for v in first_bias_adds] == [[[11.0]], [[11.0]]]


@pytest.mark.parametrize("mode", ["NO_TENSOR", "FULL_TENSOR"])
def test_custom_loop_under_mirrored_strategy_run_eagerly(conformance, mode):
    """``strategy.run(train_step)`` outside a function: a thread per replica runs the
    step's ops eagerly; both dumpers record MatMul and BiasAdd on both devices."""
    theirs, ours = conformance.both(f"mirrored_loop-{mode}")
    assert conformance.seen["ours"]["mirrored_loop"] == conformance.seen["tf"]["mirrored_loop"]

    def executed(facts):
        return collections.Counter(
            (e.op_type, (e.device or "")[-5:])
            for e in facts.executions
            if e.op_type in ("MatMul", "BiasAdd")
        )

    assert executed(ours) == executed(theirs)
    assert executed(ours)[("BiasAdd", "CPU:0")] == executed(ours)[("BiasAdd", "CPU:1")] == 1


def _non_finite(facts: Facts, mode: str) -> set[tuple[str, str]]:
    """(op name, device) of each traced tensor that held NaN or infinity, but those of
    the ops only one dumper traces."""
    found = set()
    for t in facts.traces:
        s = t.summary or {}
        bad = s.get("alert") if mode == "CURT_HEALTH" else s["nan"] + s["neg_inf"] + s["pos_inf"]
        if bad and t.op_type not in OURS_ONLY | TF_ONLY:
            found.add((t.op_name, (t.device or "")[-5:]))
    return found


@pytest.mark.parametrize("mode", ["CURT_HEALTH", "FULL_HEALTH"])
def test_a_mirrored_loop_gone_nan_alerts_alike_but_for_values_never_computed(conformance, mode):
    """TensorFlow's tutorial loop (``strategy.run``, ``compute_average_loss``) on two
    CPUs, its second step NaN. Every op we find non-finite TensorFlow's dumper does too,
    on the same device. TensorFlow's dumper also reports the ``Neg`` (and the
    ``DivNoNan``s and ``Mul``) of the loss's gradient with respect to the global batch
    size: nothing uses them, so the program never computes them (TensorFlow prunes them
    from the function it runs; its dumper's debug ops keep them alive). We record their
    creation and trace points, and no trace: they are not misclassified, they are not
    run (docs/instrument.md, "Conformance with TensorFlow's dumper")."""
    theirs, ours = conformance.both(f"mirrored_loop_average-{mode}")
    seen = conformance.seen
    assert seen["ours"]["mirrored_loop_average"] == seen["tf"]["mirrored_loop_average"]
    assert [nan for _, nan in seen["ours"]["mirrored_loop_average"]] == [True, True]
    ours_bad, theirs_bad = _non_finite(ours, mode), _non_finite(theirs, mode)
    assert {device for _, device in ours_bad} == set(DEVICES)
    assert ours_bad <= theirs_bad
    only_theirs = {name for name, _ in theirs_bad - ours_bad}
    negs = {name for name in only_theirs if name.endswith("/Neg")}
    assert negs == {"gradient_tape/div_no_nan/Neg", "gradient_tape/replica_1/div_no_nan/Neg"}
    assert only_theirs <= ours.unused_names
    assert not any(t.op_name in negs for t in ours.traces)
