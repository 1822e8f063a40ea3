"""Gradient-tape function calls get their graphs; lost TF internals fall back safely."""

from __future__ import annotations

import pytest

from reader import format as fmt
from tests.instrument.conftest import dumps_and_last_lines, runs_per_part
from tests.prefetch import made, prefetchable
from tests.program_runs import PROGRAMS

PROGRAM = PROGRAMS / "tape_and_fallback.py"


@pytest.fixture(scope="module")
def tape_dumps(request):
    """{variant: (dump, printed JSON)} for the normal and the forced-fallback run."""
    return dumps_and_last_lines(*made(request, "tape_dumps"))


@prefetchable("tape_dumps")
def _run_variants(root):
    return root, runs_per_part(
        root,
        ("normal", "fallback"),
        lambda logdir, variant: [str(PROGRAM), str(logdir), fmt.FULL_HEALTH, variant],
    )


def _function_calls(dump):
    return [
        e
        for e in dump.executions
        if e["op"].startswith(("__inference_", "__forward_", "__backward_"))
    ]


@pytest.mark.parametrize("variant", ["normal", "fallback"])
def test_forward_and_backward_calls_have_their_graphs(tape_dumps, variant):
    dump, _ = tape_dumps[variant]
    calls = _function_calls(dump)
    names = [c["op"] for c in calls]
    assert sum(n.startswith(("__forward_f_", "__forward_h_")) for n in names) == 2, names
    assert any(n.startswith("__forward___backward_h_") for n in names), names
    assert sum("__backward_" in n for n in names) >= 3, names
    assert all(c["graph"] is not None for c in calls), [(c["op"], c["graph"]) for c in calls]
    assert calls[0]["op"].startswith("__inference_nested_")
    (plain,) = [c for c in calls if c["op"].startswith("__inference_f_")]
    f_graph = dump.graphs[plain["graph"]]
    assert f_graph["name"] == "f" and f_graph["function"] == plain["op"]  # the first name
    for call in calls:
        graph = dump.graphs[call["graph"]]
        if call["op"].startswith("__forward_f_"):
            assert graph is f_graph  # the forward function runs f's graph
        elif call["op"].startswith("__inference___backward_f_"):
            assert graph["name"].startswith("__backward_f_")
        elif call["op"].startswith("__forward___backward_h_"):
            assert graph["name"].startswith("__backward_h_")
        # Every call's graph has ops, and the traces of the call are of its graph's ops
        # or of graphs nested in it.
        assert any(op["graph"] == graph["id"] for op in dump.ops.values())


def _traces_by_call(dump):
    """Per function call, in order: [(graph name, op name, summary)] of its traces."""
    points = dump.trace_point_ops()
    out = []
    for call in _function_calls(dump):
        out.append(
            (
                call["op"].rsplit("_", 1)[0],
                [
                    (
                        dump.graphs[points[t.trace_point][0]["graph"]]["name"],
                        points[t.trace_point][0]["name"],
                        list(t.summary),
                    )
                    for t in dump.traces
                    if t.step == call["i"]
                ],
            )
        )
    return out


def test_forced_fallback_is_logged_once_and_traces_are_unchanged(tape_dumps):
    normal, normal_info = tape_dumps["normal"]
    fallback, fallback_info = tape_dumps["fallback"]
    assert normal_info == {"batching": True, "messages": []}
    assert fallback_info["batching"] is False
    # Said once each; the normal run, whose function `next_of` takes a resource argument
    # (an iterator) that is no capture, says nothing.
    messages = fallback_info["messages"]
    (batching,) = [m for m in messages if "_a_renamed_tracing_function" in m]
    (capture,) = [m for m in messages if "_a_renamed_capture_helper" in m]
    assert len(messages) == 2 and "one enqueue per tensor" in batching
    assert "own captures are recorded" in capture
    assert fallback.end is not None and len(fallback.traces) == len(normal.traces) > 0
    # Same traces, same summaries, in the same order, call by call (graph names drop
    # the run-specific uid suffixes).
    strip = lambda name: name.rstrip("0123456789_")  # noqa: E731
    by_call = [
        [(strip(g), op, s) for g, op, s in traces] for _, traces in _traces_by_call(fallback)
    ]
    expected = [[(strip(g), op, s) for g, op, s in traces] for _, traces in _traces_by_call(normal)]
    assert by_call == expected
    nested_call = _traces_by_call(fallback)[0][1]
    ops = [op for _, op, _ in nested_call]
    assert ops[:2] == ["x", "Log"] and "mul" in ops
    assert {strip(g) for g, _, _ in nested_call} >= {"nested", "cond_true", "while_body"}
