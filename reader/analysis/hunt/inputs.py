"""What an op read: the value behind each of its inputs (graph: the latest trace before;
eager: `producer_of`).

One home for following an input to the record that holds its value, used by the root
cause walk and by the TUI's panes alike:

- a graph op's input is the tensor ``"<op>:<slot>"`` of its graph; the value it read
  is that tensor's latest trace before the op's own trace
  (`DumpReader.nearest_trace_of`, which also serves navigation);
- an eager op's input is an eager tensor id; its value is the output of the latest
  earlier execution that produced that id (`DumpReader.producer_of`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reader.model import EagerInput, Execution

if TYPE_CHECKING:
    from reader.run.run_protocol import Run


def input_trace(reader: Run, op_id: int, slot: int, consumer_trace: int) -> int | None:
    """The trace of tensor ``(op_id, slot)`` an op read at its trace ``consumer_trace``:
    the tensor's latest trace before it; None when it has none (not traced, or left the
    disk)."""
    found = reader.nearest_trace_of(op_id, slot, consumer_trace)
    return found if found is not None and found < consumer_trace else None


def eager_inputs(reader: Run, execution: Execution) -> tuple[EagerInput, ...]:
    """Each input tensor of ``execution`` with the earlier execution that output it.

    Raises:
        DumpError: A producer's record can no longer be read.
    """
    inputs = []
    for tensor_id in execution.input_ids:
        produced = reader.producer_of(tensor_id, before=execution.index)
        if produced is None:
            inputs.append(EagerInput(tensor_id, None, None, 0, None))
            continue
        producer_index, slot = produced
        producer = reader.execution(producer_index)
        inputs.append(
            EagerInput(tensor_id, producer_index, producer.op_type, slot, producer.summary(slot))
        )
    return tuple(inputs)
