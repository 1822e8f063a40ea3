"""The call counter: traces queued together keep their own calls, on every route of it."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from reader.values import decode_value
from tests.instrument.conftest import runs_per_part
from tests.instrument.dump_loader import load_single_run
from tests.prefetch import made, prefetchable
from tests.program_runs import PROGRAMS

PROGRAM = PROGRAMS / "call_counter.py"
VARIANTS = ("view", "eager", "async")
MODES = ("FULL_HEALTH", "FULL_TENSOR", "NO_TENSOR")
CALLS = 6  # as in the program


@pytest.fixture(scope="module")
def counted(request):
    """{variant: (printed JSON, {mode: dump})}."""
    root, printed = made(request, "counted")
    return {
        variant: (
            info,
            {mode: load_single_run(os.path.join(root, variant, mode)) for mode in MODES},
        )
        for variant, info in printed.items()
    }


@prefetchable("counted")
def _run_variants(root):
    printed = runs_per_part(
        root, VARIANTS, lambda logdir, variant: [str(PROGRAM), str(logdir), variant]
    )
    return root, {variant: json.loads(out.splitlines()[-1]) for variant, out in printed.items()}


def _calls(dump, prefix):
    return [e for e in dump.executions if e["op"].startswith(prefix)]


def _traces_of(dump, call):
    points = dump.trace_point_ops()
    return [(points[t.trace_point][0], t) for t in dump.traces if t.step == call["i"]]


def test_the_view_is_used_where_it_can_be(counted):
    assert counted["view"][0]["view_before"] == counted["view"][0]["view_after"] == [True] * 3
    assert counted["eager"][0]["view_before"] == [False] * 3
    # The first call on an asynchronous executor leaves the view for the eager op.
    assert counted["async"][0]["view_before"] == [True] * 3
    assert counted["async"][0]["view_after"] == [False] * 3


@pytest.mark.parametrize("variant", VARIANTS)
def test_stores_change_nothing_but_the_counter(counted, variant):
    info, _ = counted[variant]
    # TensorFlow caches the int64 zero the counter is assigned from: it stays zero,
    # and a Keras predict then fit (its step counters start from it) runs its epochs.
    assert info["int64_zero"] == [0, 0, 0]
    assert info["keras_losses"] == 2


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_call_keeps_its_own_traces(counted, variant):
    _, dumps = counted[variant]
    health = dumps["FULL_HEALTH"]
    calls = _calls(health, "__inference_f_")
    assert len(calls) == CALLS
    for k, call in enumerate(calls):
        traces = _traces_of(health, call)
        negatives = {op["name"]: t.summary[6] for op, t in traces if op["type"] == "Placeholder"}
        # x in f's graph and in its while body: k negative elements in call k.
        assert set(negatives.values()) == {k}, (k, negatives)
        assert any(op["type"] == "AddV2" and "while" in op["name"] for op, _ in traces)
    values = dumps["FULL_TENSOR"]
    for k, call in enumerate(_calls(values, "__inference_f_")):
        xs = [
            decode_value(t.value)
            for op, t in _traces_of(values, call)
            if op["type"] == "Placeholder" and op["name"] == "x"
        ]
        assert xs, k
        for x in xs:
            np.testing.assert_array_equal(x, np.where(np.arange(8) < k, -1.0, 1.0))
    # The gradient of g's while loop (graphs that look the counter up by name): every
    # backward call has traces, as many as the others.
    for mode in MODES:
        backward = _calls(dumps[mode], "__inference___backward_g_")
        assert len(backward) == CALLS, mode
        counts = {len(_traces_of(dumps[mode], call)) for call in backward}
        assert len(counts) == 1 and counts != {0}, (mode, counts)


def test_variants_record_the_same_traces(counted):
    def by_call(dump):  # f's and g's calls (Keras' initial weights are random)
        points = dump.trace_point_ops()
        calls = [
            e
            for e in dump.executions
            if e["op"].startswith(("__inference_f_", "__forward_g_", "__inference___"))
        ]
        return [
            [
                (points[t.trace_point][0]["name"], t.summary)
                for t in dump.traces
                if t.step == call["i"]
            ]
            for call in calls
        ]

    for mode in ("FULL_HEALTH", "NO_TENSOR"):
        expected = by_call(counted["view"][1][mode])
        for variant in ("eager", "async"):
            assert by_call(counted[variant][1][mode]) == expected, (mode, variant)
