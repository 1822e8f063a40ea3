"""The first alert's window survives a circular buffer; steps and gaps (no TensorFlow).

Synthetic runs of the graph x -> Log -> Neg (`synthetic.flight_step`): one call per
step, three traces per call. A Log of 0 at step ALERT_STEP makes -inf, and from then on
every step is NaN, as when weights have turned NaN.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

import reader
from instrument.dump.flight_recorder import PINNED_SEGMENT_LIMIT, FirstAlert
from instrument.non_finite import NonFiniteError, first_alert_error
from reader import format as fmt
from tests.present import present
from tests.synthetic import (
    FINITE,
    FLIGHT_ALERT_STEP,
    FLIGHT_BUFFER,
    FLIGHT_STEPS,
    NAN,
    NEG_INF,
    flight_step,
    make_run,
    segment_path,
    write_long_run,
)

N = FLIGHT_BUFFER
ALERT_STEP = FLIGHT_ALERT_STEP
STEPS = FLIGHT_STEPS


def test_the_first_alert_survives_and_the_dump_ends_with_the_latest(logdir):
    run = write_long_run(logdir)
    with reader.open_run(run.path) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.alert.op_type == "Log" and cause.alert.neg_inf == 1
        steps = dump.steps()
        assert steps.function == "step"
        assert steps.first_alert_step == ALERT_STEP
        assert steps.of_execution(cause.alert.step) == ALERT_STEP
        # Two runs of each stream: the pinned window (with the N records before the
        # alert), then at least the latest N.
        (pinned, tail), (pinned_t, tail_t) = dump.kept_executions(), dump.kept_traces()
        assert pinned[0] <= ALERT_STEP - N and pinned[1] > ALERT_STEP
        assert tail[1] == STEPS and tail[1] - tail[0] >= N
        assert pinned_t[0] <= 3 * ALERT_STEP - N and pinned_t[1] >= 3 * (ALERT_STEP + 1)
        assert tail_t[1] == 3 * STEPS and tail_t[1] - tail_t[0] >= N
        (gap,) = steps.gaps
        assert gap.executions == (pinned[1], tail[0])
        assert gap.traces == (pinned_t[1], tail_t[0])
        first_lost, last_lost = present(gap.steps)
        assert first_lost > ALERT_STEP and last_lost < tail[0]
        assert gap.describe() == f"steps {first_lost}-{last_lost} not kept"
        assert gap.after_execution == pinned[1] - 1
        # Indices in the gap are not on disk; ranges skip them.
        assert [e.index for e in dump.executions(pinned[1] - 1, tail[0] + 1)] == [
            pinned[1] - 1,
            tail[0],
        ]
        assert len(dump.execution_op_types(0, STEPS)) == sum(
            e - b for b, e in dump.kept_executions()
        )
        assert steps.of_execution(pinned[1]) is None


def test_alerts_per_step_count_every_alerting_tensor(logdir):
    run = write_long_run(logdir)
    with reader.open_run(run.path) as dump:
        steps = dump.steps()
        counts = dict(zip(steps.alert_steps.tolist(), steps.alert_counts.tolist()))
        # Step 40: -inf and NaN traces and the NaN output of the call.
        assert counts[ALERT_STEP] == 3
        assert min(counts) == ALERT_STEP
        assert counts[STEPS - 1] == 4
        kept = steps.kept_steps()
        assert set(counts) <= {s for a, b in kept for s in range(a, b + 1)}


def test_disk_use_is_bounded_and_old_segments_leave(logdir):
    run = write_long_run(logdir, steps=400)
    traces = sorted(glob.glob(os.path.join(run.path, "graph_traces.*")))
    executions = sorted(glob.glob(os.path.join(run.path, "executions.*")))
    assert len(traces) <= 4 and len(executions) <= 4
    with reader.open_run(run.path) as dump:
        kept = sum(e - b for b, e in dump.kept_traces())
        assert kept <= (PINNED_SEGMENT_LIMIT + 1) * N + 2 * N + 6
        assert present(dump.root_cause()).alert.op_type == "Log"


def test_a_long_alert_step_is_pinned_up_to_the_limit(logdir):
    run = make_run(logdir, circular_buffer_size=N)
    for step in range(ALERT_STEP):
        flight_step(run, step)
    # The alert step's call (all NaN), then a flood of its traces arriving late.
    flight_step(run, ALERT_STEP)
    w = run.writer
    for _ in range(30):
        w.add_traces(
            np.zeros(3, np.int32),
            summaries=np.array([NAN] * 3, np.float64),
            step=w.num_executions - 1,
        )
    for step in range(ALERT_STEP + 1, STEPS):
        flight_step(run, step)
    w.close()
    with reader.open_run(run.path) as dump:
        pinned = dump.kept_traces()[0]
        # The segment before the alert (N and a chunk), the pinned one (up to the limit
        # and a chunk).
        assert pinned[1] - pinned[0] <= (PINNED_SEGMENT_LIMIT + 1) * N + 2 * 3
        assert present(dump.root_cause()).alert.op_type == "Log"


@pytest.mark.parametrize("lag", [3, 30], ids=["lag-3-steps", "lag-past-the-pin-limit"])
def test_traces_that_arrive_after_their_call_are_pinned_with_it(logdir, lag):
    """Graph traces reach the writer up to a second (under load, more) after their
    call's execution: the traces' window is pinned when the alert step's arrive."""
    run = make_run(logdir, circular_buffer_size=N)
    w = run.writer
    base = 5000
    for step in range(STEPS):
        index = w.add_execution(
            op_type="__inference_step_7",
            graph_id=run.graph,
            input_ids=[base + step],
            output_ids=[base + 10_000 + step],
            device_ids=[run.device],
            output_dtypes=[1],
            stack_id=run.user_stack,
            summaries=[FINITE if step < ALERT_STEP else NAN],
            call_ordinal=step,
        )
        if step >= lag:  # the traces of the call `lag` steps back arrive now
            late = step - lag
            rows = [FINITE, NEG_INF, NAN] if late == ALERT_STEP else [FINITE] * 3
            if late > ALERT_STEP:
                rows = [NAN] * 3
            w.add_traces(
                np.arange(3, dtype=np.int32), summaries=np.array(rows, np.float64), step=index - lag
            )
    w.close()
    with reader.open_run(run.path) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.alert.op_type == "Log" and cause.alert.kind == "graph"
        assert dump.steps().first_alert_step == ALERT_STEP
        assert dump.execution(cause.alert.step).op_type == "__inference_step_7"


def test_without_a_circular_buffer_nothing_is_pinned(logdir):
    run = write_long_run(logdir, buffer_size=0, steps=60)
    assert os.listdir(run.path) and not glob.glob(os.path.join(run.path, "*.000001.tfdbg"))
    with reader.open_run(run.path) as dump:
        assert dump.kept_executions() == [(0, 60)] and dump.kept_traces() == [(0, 180)]
        assert dump.steps().gaps == [] and dump.steps().kept_steps() == [(0, 59)]


def test_a_live_reader_follows_the_pinning(logdir):
    run = make_run(logdir, circular_buffer_size=N)
    dump = reader.open_run(run.path)
    dropped = 0
    for step in range(STEPS):
        flight_step(run, step)
        run.writer.flush()
        if step % 7 == 0:
            dropped += dump.update().dropped_executions
    run.writer.close()
    report = dump.update()
    dropped += report.dropped_executions
    with reader.open_run(run.path) as fresh:
        assert dump.kept_executions() == fresh.kept_executions()
        assert dump.kept_traces() == fresh.kept_traces()
        assert present(dump.root_cause()).alert.index == present(fresh.root_cause()).alert.index
        assert dump.steps().gaps == fresh.steps().gaps
    kept = sum(e - b for b, e in dump.kept_executions())
    assert dropped == STEPS - kept
    dump.close()


def test_killed_while_the_window_is_pinned_the_dump_opens(logdir):
    """A SIGKILL leaves the open pinned segment cut short: everything before it reads."""
    run = make_run(logdir, circular_buffer_size=N)
    for step in range(ALERT_STEP + 1):
        flight_step(run, step)
    run.writer.flush()  # the periodic flush: the alert's traces are on disk
    # More traces of the alert's step: the pinned segment is still open.
    run.writer.add_traces(
        np.zeros(3, np.int32),
        summaries=np.array([NAN] * 3, np.float64),
        step=run.writer.num_executions - 1,
    )
    run.writer.flush()  # no close: the process died, its last record cut short
    open_segment = max(glob.glob(os.path.join(run.path, "graph_traces.*")))
    with open(open_segment, "r+b") as f:
        f.truncate(os.path.getsize(open_segment) - 5)
    with reader.open_run(run.path) as dump:
        assert not dump.finished and not dump.damage
        assert present(dump.root_cause()).alert.op_type == "Log"
        assert dump.steps().first_alert_step == ALERT_STEP


def test_a_dump_without_call_ordinals_counts_steps_from_the_first_call(logdir):
    """Format 1.0 dumps have no `c`: steps count from the first call on disk."""
    run = make_run(logdir)
    for step in range(5):
        w = run.writer
        w.add_execution(
            op_type="__inference_step_7",
            graph_id=run.graph,
            input_ids=[],
            output_ids=[step],
            device_ids=[run.device],
            output_dtypes=[1],
            stack_id=None,
            summaries=[FINITE if step < 3 else NAN],
        )
    run.writer.close()
    with reader.open_run(run.path) as dump:
        assert dump.steps().first_alert_step == 3
        assert fmt.step_function_name("__inference_step_7") == "step"
    assert segment_path(run.path, fmt.STREAM_EXECUTIONS)


def test_the_stop_on_alert_error_names_the_root_cause_from_the_dump(logdir):
    run = write_long_run(logdir)
    error = first_alert_error(run.path)
    assert isinstance(error, NonFiniteError) and isinstance(error, FloatingPointError)
    assert (error.op_type, error.tensor_name, error.graph_name, error.step) == (
        "Log",
        "Log:0",
        "step",
        ALERT_STEP,
    )
    assert (error.file, error.line) == ("/home/me/project/train.py", 4)
    message = str(error)
    assert f"Log 'Log:0' in graph 'step' at step {ALERT_STEP} (-inf 1)" in message
    assert "/home/me/project/train.py:4 in step" in message and "tf.math.log(x)" in message
    assert run.path in message


def test_the_stop_on_alert_error_survives_an_unreadable_dump(tmp_path):
    error = first_alert_error(str(tmp_path / "gone"))
    assert isinstance(error, NonFiniteError) and error.op_type is None
    assert "NaN or infinity" in str(error) and "gone" in str(error)


@pytest.mark.parametrize(
    "buffer_size, watch_alerts, watched",
    [(0, None, False), (-1, None, False), (N, None, True), (0, True, True), (N, False, False)],
)
def test_alerts_are_looked_for_only_when_something_needs_them(
    logdir, buffer_size, watch_alerts, watched
):
    """The first alert serves the flight recorder (a circular buffer) and stop_on_alert:
    a run that keeps everything and does not stop does not read every FULL_TENSOR value
    for it."""
    from instrument.dump.value_encoding import tensor_value_record
    from instrument.dump.writer import DumpWriter

    writer = DumpWriter(
        logdir,
        {"tensor_debug_mode": fmt.FULL_TENSOR},
        circular_buffer_size=buffer_size,
        watch_alerts=watch_alerts,
        flush_interval_s=None,
    )
    assert writer.watches_alerts is watched and writer.seeking_alert is watched
    nan = tensor_value_record(np.array([1.0, np.nan], np.float32))
    writer.add_traces(np.array([0], np.int32), values=[nan], step=0)
    if watched:
        assert writer.first_alert == FirstAlert(fmt.STREAM_GRAPH_TRACES, 0, 0)
        assert not writer.seeking_alert
    else:
        assert writer.first_alert is None
    writer.close()


def test_records_the_buffer_drops_before_a_flush_are_never_written(logdir, monkeypatch):
    """Under a circular buffer, segments that rotate out between two flushes are never
    created, nor their chunks packed (FULL_TENSOR values encoded); a flush writes the
    segment before the open one and the open one, then deletes the older files. Until
    it does, the disk holds what the last flush wrote: a kill loses no more."""
    from instrument.dump import columnar_chunks
    from instrument.dump.value_encoding import tensor_value_record

    packed: list[int] = []
    pack = columnar_chunks.TraceChunk.pack_into

    def counting_pack(chunk, record):
        packed.append(chunk.count)
        pack(chunk, record)

    monkeypatch.setattr(columnar_chunks.TraceChunk, "pack_into", counting_pack)
    run = make_run(logdir, mode=fmt.FULL_TENSOR, circular_buffer_size=N)
    value = tensor_value_record(np.arange(4, dtype=np.float32))

    def steps(count: int) -> None:
        for _ in range(count):
            run.writer.add_traces(np.zeros(3, np.int32), values=[value] * 3)
            run.writer.add_execution(
                op_type="__inference_step_7",
                graph_id=run.graph,
                input_ids=[1],
                output_ids=[2],
                device_ids=[run.device],
                output_dtypes=[1],
                stack_id=run.user_stack,
                values=[value],
            )

    def on_disk(stream: str) -> list[str]:
        return sorted(os.path.basename(p) for p in glob.glob(os.path.join(run.path, f"{stream}.*")))

    steps(4)
    run.writer.flush()
    assert on_disk("graph_traces") == [fmt.segment_filename("graph_traces", s) for s in (0, 1)]
    packed.clear()
    steps(40)  # 12 traces fill a segment: 132 fill 0-10, and 11 is open at the flush
    # No flush yet: the disk is as the last flush left it, its N latest traces readable.
    assert on_disk("graph_traces") == [fmt.segment_filename("graph_traces", s) for s in (0, 1)]
    with reader.open_run(run.path) as dump:
        begin, end = dump.kept_traces()[-1]
        assert end == 12 and end - begin >= N
    run.writer.flush()
    assert on_disk("graph_traces") == [fmt.segment_filename("graph_traces", s) for s in (10, 11)]
    assert on_disk("executions") == [fmt.segment_filename("executions", s) for s in (3, 4)]
    assert sum(packed) <= 2 * N + 3  # only the kept segments' traces were packed
    run.writer.close()
    with reader.open_run(run.path) as dump:
        (kept,) = dump.kept_traces()
        assert kept[1] == 132 and kept[1] - kept[0] >= N
        assert present(dump.trace_value(kept[1] - 1)).tolist() == [0.0, 1.0, 2.0, 3.0]
