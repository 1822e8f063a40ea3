"""`NonFiniteError`: what ``stop_on_alert`` raises, described from the dump itself.

The error is built by reading the run's dump back (`reader`, no TensorFlow), so it
names the same root cause, step and line the report and the TUI show: the op whose
inputs were finite and whose output was not, not a later op that merely read NaN.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

# The most source characters the message quotes of the user's line.
LINE_TEXT_LIMIT = 120


class NonFiniteError(FloatingPointError):
    """A tensor held NaN or infinity and ``stop_on_alert=True`` stopped the program.

    Raised by the first call into TensorFlow after the step in which the first
    non-finite value appeared, once the dump holding it is on disk.

    Attributes:
        run_path: The run directory of the dump (open it with ``tfdbg-tui``).
        op_type: The type of the op that made the first non-finite value ("Log").
        tensor_name: Its output tensor (``"op_name:slot"``; ``"Log:0"`` when eager).
        graph_name: The graph it ran in, or None for an eager op.
        step: The step (call of the outermost tf.function) it ran in, or None when
            the program has no steps.
        file: The user's file that created the op (or called it, when eager), or None.
        line: That file's line, or None.
    """

    def __init__(
        self,
        message: str,
        *,
        run_path: str,
        op_type: str | None = None,
        tensor_name: str | None = None,
        graph_name: str | None = None,
        step: int | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.run_path = run_path
        self.op_type = op_type
        self.tensor_name = tensor_name
        self.graph_name = graph_name
        self.step = step
        self.file = file
        self.line = line


# Shown and pickled as `instrument.NonFiniteError`, where users import it from.
NonFiniteError.__module__ = "instrument"


@dataclass(frozen=True)
class EagerOpValues:
    """The values of the eager op at which ``stop_on_alert`` stopped, at hand in its op
    callback whatever the mode: what ``on_alert="pdb"``'s ``culprit`` shows when the
    dump keeps none (a summary mode, an input made outside any op).

    Attributes:
        index: The op's execution index in the dump.
        inputs: Each input's value (numpy), None where it has none (a resource).
        outputs: Each output's value, the same.
    """

    index: int
    inputs: list[Any]
    outputs: list[Any]


def first_alert_error(run_path: str) -> NonFiniteError:
    """The error describing the root cause of the first alert in the dump at ``run_path``."""
    import reader
    from reader.errors import DumpError

    open_hint = f"the dump: {run_path} (open it with: tfdbg-tui {os.path.dirname(run_path)})"
    try:
        with reader.DumpReader(run_path) as dump:
            cause = dump.root_cause()
            steps = dump.steps()
    except (DumpError, OSError) as error:
        return NonFiniteError(
            f"a tensor held NaN or infinity; reading {open_hint} failed: {error}", run_path=run_path
        )
    if cause is None:
        return NonFiniteError(f"a tensor held NaN or infinity; {open_hint}", run_path=run_path)
    alert = cause.alert
    step = steps.of_execution(alert.step)
    what = f"{alert.op_type} {alert.tensor_name!r}"
    if alert.graph_name:
        what += f" in graph {alert.graph_name!r}"
    counts = ", ".join(
        f"{label} {value}"
        for label, value in (("NaN", alert.nan), ("-inf", alert.neg_inf), ("+inf", alert.pos_inf))
        if value > 0
    )
    lines = [
        f"the first NaN or infinity: {what} at {steps.place(alert.step)}"
        + (f" ({counts})" if counts else "")
    ]
    frame = cause.frame
    if frame is not None:
        lines.append(
            f"  created at {frame.path}:{frame.line} in {frame.function}"
            if alert.kind == "graph"
            else f"  run at {frame.path}:{frame.line} in {frame.function}"
        )
        if cause.line_text:
            lines.append("    " + cause.line_text.strip()[:LINE_TEXT_LIMIT])
    lines.append(open_hint)
    return NonFiniteError(
        "\n".join(lines),
        run_path=run_path,
        op_type=alert.op_type,
        tensor_name=alert.tensor_name,
        graph_name=alert.graph_name,
        step=step,
        file=frame.path if frame else None,
        line=frame.line if frame else None,
    )
