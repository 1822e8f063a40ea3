"""The step that consumed a value a tf.data pipeline made ahead of it.

A prefetching pipeline (``prefetch``, or any ``from_generator`` one) runs its
functions ahead of the steps: the generator's NaN is made while an earlier step runs,
and is recorded there. The step that the NaN harmed is the one that took the batch
holding it: the first eager delivery (``IteratorGetNext``) after it whose output was
non-finite, and the first function call that took that output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reader.analysis.hunt.root_cause import DATASET_DELIVERY_OPS, is_dataset_graph
from reader.errors import DumpError
from reader.model import Alert

if TYPE_CHECKING:
    from reader.analysis.hunt.steps import Steps
    from reader.run.run_protocol import Run

# Executions read after the value was made, looking for its delivery and consumer: a
# bound on hostile dumps (a pipeline prefetches a few batches, not thousands).
MAX_EXECUTIONS_AHEAD = 10_000
# Executions after a delivery read for the call that took its batch (the loop's next
# step call follows its `next()` within a few eager ops).
_TAKER_AHEAD = 1_000


@dataclass(frozen=True, slots=True)
class Consumption:
    """Where a pipeline's value reached the program.

    Attributes:
        delivery: The execution index of the eager delivery that carried it.
        batch: The batch it was, counted from 0 among that iterator's deliveries;
            None when the deliveries before it are not all on disk.
        call: The execution index of the function call that took it, or None.
        step: That call's step, or None (no steps, or no call took it).
        made_at_step: The step it was recorded in, while the pipeline ran ahead.
    """

    delivery: int
    batch: int | None
    call: int | None
    step: int | None
    made_at_step: int | None

    def as_dict(self) -> dict[str, int | None]:
        """``report --json``'s ``first_alert.consumed``."""
        return {
            "delivery": self.delivery,
            "batch": self.batch,
            "call": self.call,
            "step": self.step,
            "made_at_step": self.made_at_step,
        }


def consumed_by(run: Run, steps: Steps, alert: Alert) -> Consumption | None:
    """Where a value made inside a tf.data function was consumed; None for any other
    alert, or when no later delivery carried a non-finite value."""
    if alert.kind != "graph" or alert.step is None:
        return None
    try:
        op_id, _ = run.trace_op(alert.index)
        if op_id is None or not is_dataset_graph(run, run.op(op_id).graph_id):
            return None
        begin = max(alert.step, run.first_execution)
        end = min(run.num_executions, begin + MAX_EXECUTIONS_AHEAD)
        if begin >= end:
            return None
        codes, names = run.execution_op_codes(begin, end)
        deliveries = [code for code, name in enumerate(names) if name in DATASET_DELIVERY_OPS]
        flags = run.execution_alert_flags(begin, end)
        found = np.flatnonzero(np.isin(codes, deliveries) & flags.astype(bool))
        if not found.size:
            return None
        delivery = run.execution(begin + int(found[0]))
        batch = _batch_of(run, delivery.index, delivery.op_type, delivery.input_ids[:1])
        call = _taker(run, delivery.index, set(delivery.output_ids), end)
    except DumpError:
        return None
    return Consumption(
        delivery.index,
        batch,
        call,
        None if call is None else steps.of_execution(call),
        steps.of_execution(alert.step),
    )


def _batch_of(run: Run, delivery: int, op_type: str, iterator: tuple[int, ...]) -> int | None:
    """How many deliveries of the same iterator came before ``delivery``; None past
    `MAX_EXECUTIONS_AHEAD` of them (a long run's count is not worth decoding)."""
    begin = run.first_execution
    if begin > 0:
        return None  # deliveries before the first execution on disk are not counted
    codes, names = run.execution_op_codes(begin, delivery)
    wanted = [code for code, name in enumerate(names) if name == op_type]
    rows = np.flatnonzero(np.isin(codes, wanted))
    if rows.size > MAX_EXECUTIONS_AHEAD:
        return None
    return sum(1 for r in rows if run.execution(begin + int(r)).input_ids[:1] == iterator)


def _taker(run: Run, delivery: int, outputs: set[int], end: int) -> int | None:
    """The first function call after ``delivery`` that took one of ``outputs``."""
    for index in range(delivery + 1, min(end, delivery + _TAKER_AHEAD)):
        execution = run.execution(index)
        if execution.is_function and outputs.intersection(execution.input_ids):
            return index
    return None
