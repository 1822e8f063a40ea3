"""What a decoded record means as a value object: the run's metadata (`RunMetadata`), an
execution, a summary row.

Fields of the wrong type become None (or a default), never an error: the record was
already accepted by the index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from reader import format as fmt
from reader.contract import EndRecord, ExecRecord, ReplayOfMap, RunRecord, TaskMap, ValueMap
from reader.limits import is_id, is_int
from reader.model import DUMPER_TFDBG_TUI, Execution, ReplayOf, RunMetadata, Summary


def run_metadata(
    run: dict[str, Any], end: dict[str, Any] | None, run_id: str, mode: str, devices: dict[int, str]
) -> RunMetadata:
    """The run's description from its ``run`` record, its ``end`` record (None while
    running) and the devices read so far."""
    version = run.get(RunRecord.FORMAT_VERSION)
    argv = run.get(RunRecord.ARGV)
    dtypes = run.get(RunRecord.TENSOR_DTYPES)
    task, cluster = task_of(run)
    end_time = end.get(EndRecord.TIME) if end else None
    return RunMetadata(
        run_id=str(run.get(RunRecord.RUN) or run_id),
        format_version=(
            tuple(version[:2])
            if isinstance(version, list) and len(version) >= 2
            else fmt.FORMAT_VERSION
        ),
        tensor_debug_mode=mode,
        circular_buffer_size=_int_or(run.get(RunRecord.CIRCULAR_BUFFER_SIZE), 0),
        host=_str_or_none(run.get(RunRecord.HOST)),
        pid=run.get(RunRecord.PID) if isinstance(run.get(RunRecord.PID), int) else None,
        start_time=_float_or_none(run.get(RunRecord.START_TIME)),
        tf_version=_str_or_none(run.get(RunRecord.TF_VERSION)),
        python_version=_str_or_none(run.get(RunRecord.PYTHON_VERSION)),
        argv=tuple(str(a) for a in argv) if isinstance(argv, list) else (),
        eager_mode=bool(run.get(RunRecord.EAGER_MODE, True)),
        finished=end is not None,
        devices=tuple(devices[i] for i in sorted(devices)),
        op_regex=_str_or_none(run.get(RunRecord.OP_REGEX)),
        tensor_dtypes=(tuple(str(d) for d in dtypes) if isinstance(dtypes, list) else None),
        end_time=_float_or_none(end_time),
        thread=_str_or_none(run.get(RunRecord.THREAD)),
        task=task,
        cluster=cluster,
        space_reserve=run.get(RunRecord.SPACE_RESERVE) is True,
        dumper=_str_or_none(run.get(RunRecord.DUMPER)) or DUMPER_TFDBG_TUI,
        watched=isinstance(run.get(RunRecord.WATCH), dict),
        replay_of=replay_of(run),
    )


def replay_of(run: dict[str, Any]) -> ReplayOf | None:
    """A replay's watched run and step from its `run` record (format 2.6); None when
    absent or malformed."""
    link = run.get(RunRecord.REPLAY_OF)
    if (
        not isinstance(link, dict)
        or not isinstance(link.get(ReplayOfMap.RUN), str)
        or not is_id(link.get(ReplayOfMap.STEP))
    ):
        return None
    return ReplayOf(
        link[ReplayOfMap.RUN],
        link[ReplayOfMap.STEP],
        _str_or_none(link.get(ReplayOfMap.CHECK)),
        _str_or_none(link.get(ReplayOfMap.TENSOR)),
        link.get(ReplayOfMap.XLA) is True,
        _names(link.get(ReplayOfMap.VALUES)),
    )


def _names(value: Any) -> tuple[str, ...] | None:
    """A list of str as a tuple; None when absent or not a list of str."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return tuple(value)


def task_of(run: dict[str, Any]) -> tuple[str | None, str | None]:
    """A multi-worker run's task ("worker 1") and cluster id from its `run` record's
    ``task`` (format 1.2); Nones when absent or malformed."""
    task = run.get(RunRecord.TASK)
    if (
        not isinstance(task, dict)
        or not isinstance(task.get(TaskMap.TYPE), str)
        or not is_int(task.get(TaskMap.INDEX))
    ):
        return None, None
    return f"{task[TaskMap.TYPE]} {task[TaskMap.INDEX]}", _str_or_none(task.get(TaskMap.CLUSTER))


def build_execution(
    mode: str, index: int, record: dict[str, Any], device_name: Callable[[int], str | None]
) -> Execution:
    """An `Execution` from its decoded ``exec`` record."""
    summaries: tuple[Summary | None, ...] | None = None
    if mode == fmt.FULL_TENSOR and isinstance(record.get(ExecRecord.VALUES), list):
        summaries = tuple(value_summary(v) for v in record[ExecRecord.VALUES])
    elif isinstance(record.get(ExecRecord.SUMMARIES), list):
        summaries = tuple(row_summary(mode, s) for s in record[ExecRecord.SUMMARIES])
    return Execution(
        index=index,
        op_type=record[ExecRecord.OP_TYPE],
        graph_id=_int_or(record.get(ExecRecord.GRAPH), None),
        input_ids=_ints(record.get(ExecRecord.INPUTS)),
        output_ids=_ints(record.get(ExecRecord.OUTPUTS)),
        devices=tuple(device_name(d) for d in _list(record.get(ExecRecord.DEVICES))),
        output_dtypes=tuple(
            fmt.DTYPE_NAMES.get(d, f"dtype{d}") for d in _ints(record.get(ExecRecord.DTYPES))
        ),
        stack_id=_int_or(record.get(ExecRecord.STACK), None),
        time=_float_or_none(record.get(ExecRecord.TIME)),
        summaries=summaries,
        thread=_str_or_none(record.get(ExecRecord.THREAD)),
        names=_names(record.get(ExecRecord.NAMES)),
    )


def row_summary(mode: str, row: Any) -> Summary | None:
    """A summary from a stored row; FULL_TENSOR rows are computed in FULL_HEALTH layout."""
    if row is None or mode == fmt.NO_TENSOR:
        return None
    try:
        if mode == fmt.FULL_TENSOR:
            return dataclasses.replace(Summary.from_row(fmt.FULL_HEALTH, row), mode=mode)
        return Summary.from_row(mode, row)
    except (TypeError, ValueError, KeyError, OverflowError):
        return None  # a row of the wrong length or non-numbers: no summary to show


def value_summary(stored: Any) -> Summary | None:
    # Here, not at the top: listing runs (`reader.run.run_dir`) reads records too, and
    # needs no numpy.
    from reader import values

    if not isinstance(stored, dict):
        return None
    row = values.summary_row(stored)
    summary = Summary.from_row(fmt.FULL_HEALTH, row)
    shape = stored.get(ValueMap.SHAPE)
    return Summary(
        mode=fmt.FULL_TENSOR,
        dtype=summary.dtype,
        rank=summary.rank,
        size=summary.size,
        neg_inf=summary.neg_inf,
        pos_inf=summary.pos_inf,
        nan=summary.nan,
        neg=summary.neg,
        zero=summary.zero,
        pos=summary.pos,
        shape=tuple(shape) if isinstance(shape, list) else None,
        max_abs=summary.max_abs,
    )


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(v for v in _list(value) if is_int(v))


def _int_or(value: Any, default: Any) -> Any:
    return value if is_int(value) else default


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
