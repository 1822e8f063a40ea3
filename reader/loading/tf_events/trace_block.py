"""A block of graph execution traces decoded in one protobuf call, not one per record.

TensorFlow writes a million traces as a million `DebugEvent` records; decoding each
with its own `FromString` and reading its fields from Python costs about 5 µs a
trace. Here the TFRecord framing between a block's records is rewritten in place as
one bytes field (`schema.TraceBlock`'s field 15, which `DebugEvent` does not have),
and the block parsed once as a `TraceBlock`: protobuf merges the records' repeated
occurrences of a message field into one, so every field comes back as one list in
record order. A block whose lists do not line up with its records (a record without
a field, one of another kind) is left to the record-at-a-time path.
"""

from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError

from reader.loading.tf_events.schema import SlotBlock, TraceBlock
from reader.loading.tf_events.tfrecord import FOOTER_BYTES, HEADER_BYTES

_FRAMING_TAG = 15 << 3 | 2  # field 15, length-delimited


class Columns:
    """One block's traces, field by field, in record order."""

    __slots__ = ("contents", "graph_ids", "mode", "op_names", "slots", "times")

    def __init__(
        self,
        times: np.ndarray,
        graph_ids: list[bytes],
        op_names: list[bytes],
        slots: list[int] | None,
        mode: int,
        contents: list[bytes],
    ) -> None:
        self.times = times
        self.graph_ids = graph_ids
        self.op_names = op_names
        self.slots = slots  # None: every slot is 0
        self.mode = mode
        self.contents = contents


def scan(data: bytes, starts: np.ndarray, lengths: np.ndarray) -> Columns | None:
    """The fields of the trace records ``data[starts[r]:starts[r] + lengths[r]]``
    (a block `RecordFile.read_new` yielded, the framing checked); None when they do
    not come out one per record."""
    n = starts.size
    first = int(starts[0]) - HEADER_BYTES
    end = int(starts[-1] + lengths[-1]) + FOOTER_BYTES
    block = bytearray(data[first:end])
    raw = np.frombuffer(block, dtype=np.uint8)
    # Each stretch of framing (a header; a footer and the next header; the last
    # footer) becomes a bytes field holding what was there.
    gaps = np.concatenate(
        [[0], starts[1:] - first - (HEADER_BYTES + FOOTER_BYTES), [end - first - FOOTER_BYTES]]
    )
    sizes = np.concatenate(
        [[HEADER_BYTES], np.full(n - 1, HEADER_BYTES + FOOTER_BYTES), [FOOTER_BYTES]]
    )
    raw[gaps] = _FRAMING_TAG
    raw[gaps + 1] = sizes - 2
    try:
        parsed = TraceBlock.FromString(block)
    except DecodeError:
        return None
    traces = parsed.graph_execution_trace
    graph_ids, op_names = list(traces.tfdbg_context_id), list(traces.op_name)
    modes = traces.tensor_debug_mode
    contents = list(traces.tensor_proto.tensor_content)
    if not (len(parsed.wall_time) == len(graph_ids) == len(op_names) == len(modes) == n):
        return None
    if contents and len(contents) != n:
        return None
    slots = None
    if len(traces.output_slot):
        try:
            slots = [t.output_slot for t in SlotBlock.FromString(block).graph_execution_trace]
        except DecodeError:
            return None
        if len(slots) != n:
            return None
    return Columns(
        np.array(parsed.wall_time, dtype=np.float64),
        graph_ids,
        op_names,
        slots,
        int(modes[0]),
        contents,
    )
