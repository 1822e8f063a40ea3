"""A variable whose non-finite values came in outside a step, named: its name, the
checkpoint key it was restored from, and the rows of its value that hold them.

The writer records what an eager `VarHandleOp` names (its variable) and a
`RestoreV2`'s checkpoint keys (`Execution.names`, format 2.8). A restore's output slot
k is key k; the eager `AssignVariableOp` that writes that output (through the
`Identity` a restore puts between) gives the variable's handle, and the handle's
creation its name. `reader.analysis.diagnosis.input_source` words them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reader.model import Execution

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

# Executions after a restore looked at for the writes of its outputs: a Keras or
# `tf.train.Checkpoint` restore writes each output within a few executions
# (`Identity`, `AssignVariableOp`, `NoOp`), in slot order.
WRITES_PER_OUTPUT = 8
MAX_WRITE_SCAN = 50_000
# Rows named one by one, at most; more are counted.
MAX_ROWS_NAMED = 5


@dataclass(frozen=True, slots=True)
class RestoredVariable:
    """What the dump says of one output of a restore.

    Attributes:
        key: The checkpoint key it read (None: the dump has no keys, before 2.8).
        variable: The name of the variable it was written into, or None.
        handle: That variable's eager handle, or None.
    """

    key: str | None
    variable: str | None
    handle: int | None


@dataclass(frozen=True, slots=True)
class NonfiniteRows:
    """The rows (first index) of a value that hold NaN or infinity.

    Attributes:
        rows: Their indices, ascending (a scalar or a vector: the elements').
        count: How many non-finite values they hold together.
        size: How many values those rows hold together.
        nan_only: Whether every non-finite value is NaN.
        vector: The value has one dimension (or none): its rows are its elements.
    """

    rows: tuple[int, ...]
    count: int
    size: int
    nan_only: bool
    vector: bool = False

    def text(self, variable: str | None) -> str:
        """ "row 2 of `dense/kernel` holds NaN in 1 of its 2 values" ("element 3 of
        `bias` is NaN" for a vector)."""
        of = f" of `{variable}`" if variable else ""
        what = "NaN" if self.nan_only else "NaN or infinity"
        named = ", ".join(str(r) for r in self.rows[:MAX_ROWS_NAMED])
        if len(self.rows) > MAX_ROWS_NAMED:
            named += f" and {len(self.rows) - MAX_ROWS_NAMED:,} more"
        one = len(self.rows) == 1
        if self.vector:
            return f"element {named}{of} is {what}" if one else f"elements {named}{of} are {what}"
        if one:
            return f"row {named}{of} holds {what} in {self.count:,} of its {self.size:,} values"
        return f"rows {named}{of} hold {what} in {self.count:,} of their {self.size:,} values"


def variable_name(reader: AnalysedRun, handle: int, before: int | None = None) -> str | None:
    """The name of the variable whose eager handle is ``handle``: what its creation
    (an eager `VarHandleOp` on disk) names; None when the dump does not say."""
    made = reader.producer_of(handle, before=before)
    if made is None:
        return None
    creation = reader.execution(made[0])
    if creation.op_type != "VarHandleOp" or not creation.names:
        return None
    return creation.names[0]


def restored_variable(reader: AnalysedRun, restore: Execution, slot: int) -> RestoredVariable:
    """The checkpoint key of an eager restore's output ``slot`` and the variable it was
    written into (the first eager `AssignVariableOp` of that output, or of an
    `Identity` of it, among the executions that follow)."""
    key = (
        restore.names[slot]
        if restore.names is not None and 0 <= slot < len(restore.names)
        else None
    )
    handle = _written_into(reader, restore, slot)
    variable = None if handle is None else variable_name(reader, handle, before=restore.index)
    return RestoredVariable(key, variable, handle)


def _written_into(reader: AnalysedRun, restore: Execution, slot: int) -> int | None:
    if not 0 <= slot < len(restore.output_ids):
        return None
    carried = {restore.output_ids[slot]}
    end = restore.index + 1 + min(MAX_WRITE_SCAN, WRITES_PER_OUTPUT * (len(restore.output_ids) + 1))
    for execution in reader.executions(restore.index + 1, end):
        inputs = execution.input_ids
        if execution.op_type == "Identity" and inputs[:1] and inputs[0] in carried:
            carried.update(execution.output_ids)
        elif execution.op_type == "AssignVariableOp" and len(inputs) == 2 and inputs[1] in carried:
            return inputs[0]
    return None


def nonfinite_rows(value: np.ndarray | None) -> NonfiniteRows | None:
    """The rows of ``value`` that hold NaN or infinity; None without a value, a float
    view, or a non-finite element."""
    if value is None or not value.size:
        return None
    try:
        as_float = value.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        return None  # strings, or another dtype without a float view
    bad = ~np.isfinite(as_float)
    if not bad.any():
        return None
    if as_float.ndim == 0:
        return NonfiniteRows((0,), 1, 1, bool(np.isnan(as_float)), vector=True)
    per_row = bad.reshape(bad.shape[0], -1)
    rows = np.flatnonzero(per_row.any(axis=1))
    row_size = per_row.shape[1]
    return NonfiniteRows(
        tuple(int(r) for r in rows),
        int(per_row[rows].sum()),
        int(rows.size * row_size),
        bool(np.isnan(as_float[bad]).all()),
        vector=as_float.ndim == 1,
    )
