"""`on_alert="pdb"`: stop in pdb at the user's frame, at the first NaN or infinity, with
`culprit` (the op, its values, the diagnosis, read back with `reader`).

Where ``stop_on_alert`` raises `NonFiniteError`, this stops the program in `pdb` at
the user's frame that ran the step (for a graph op: the eager line that called the
``tf.function``; under Keras ``fit``: the line that called ``fit``), with ``culprit``
in hand: the op, its inputs' and output's values (FULL_TENSOR) or summaries, and the
diagnosis, all read back from the dump (`reader`) like the error's own message.
``continue`` runs on (the program is still recorded); ``quit`` raises the error.
"""

from __future__ import annotations

import builtins
import pdb
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from instrument.non_finite import NonFiniteError
from instrument.tracing.stacks import is_library_file

# The name the culprit goes by while the debugger is stopped.
CULPRIT_NAME = "culprit"


@dataclass
class Culprit:
    """The op that made the first harmful NaN or infinity, as the debugger shows it.

    Attributes:
        op_type: The op's type ("Log").
        tensor_name: Its output that held the value ("Log:0").
        graph_name: The graph it ran in, or None for an eager op.
        step: The step it ran in, or None when the program has no steps.
        inputs: Each input tensor's value (numpy), by name; None where the dump keeps
            no value (a summary mode: see `summaries`).
        output: The output's value, or None without one.
        summaries: Each tensor's recorded summary, by name (what every mode keeps).
        values: Where the values come from: "FULL_TENSOR", or why there are none.
        diagnosis: The pattern, its explanation, the usual fix and its proof, one line
            each.
        proof: The op rerun on its stored inputs as it ran and fixed
            (`instrument.repro.proof.Proof`), or None before it is read.
        run_path: The run directory of the dump.
    """

    op_type: str | None
    tensor_name: str | None
    graph_name: str | None
    step: int | None
    inputs: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    summaries: dict[str, Any] = field(default_factory=dict)
    values: str = ""
    diagnosis: str = ""
    run_path: str = ""
    proof: Any = None

    def __str__(self) -> str:
        where = f" in graph {self.graph_name!r}" if self.graph_name else ""
        step = "" if self.step is None else f" at step {self.step}"
        lines = [
            f"culprit: {self.op_type} {self.tensor_name!r}{where}{step}",
            f"  values: {self.values}",
        ]
        for name, value in [*self.inputs.items(), (f"{self.tensor_name} (output)", self.output)]:
            shown = (
                _short(value)
                if value is not None
                else str(self.summaries.get(name.removesuffix(" (output)")))
            )
            lines.append(f"  {name}: {shown}")
        if self.diagnosis:
            lines.append("  " + self.diagnosis.replace("\n", "\n  "))
        return "\n".join(lines)

    __repr__ = __str__


def _short(value: Any) -> str:
    import numpy as np

    return np.array2string(np.asarray(value), threshold=12, edgeitems=3).replace("\n", " ")


def culprit_of(run_path: str, error: NonFiniteError) -> Culprit:
    """The culprit of the dump at ``run_path``, read back with `reader`."""
    import reader
    from instrument.repro.proof import prove
    from reader.analysis.diagnosis.culprit_values import culprit_values
    from reader.analysis.diagnosis.diagnosis import diagnose_cause
    from reader.errors import DumpError

    culprit = Culprit(
        error.op_type, error.tensor_name, error.graph_name, error.step, run_path=run_path
    )
    try:
        with reader.DumpReader(run_path) as dump:
            cause = dump.root_cause()
            if cause is None:
                return culprit
            values = culprit_values(dump, cause)
            full = dump.metadata.tensor_debug_mode == "FULL_TENSOR"
            culprit.values = "FULL_TENSOR" if full else (values.missing or "")
            for (ref, summary), stored in zip(cause.inputs, values.inputs):
                culprit.summaries[ref.name] = summary
                culprit.inputs[ref.name] = stored.value
            if cause.trace is not None:
                culprit.summaries[cause.alert.tensor_name] = cause.trace.summary
            culprit.output = values.output.value
            diagnosis = diagnose_cause(dump, cause)
            culprit.proof = prove(values)
            culprit.diagnosis = (
                f"diagnosis: {diagnosis.pattern}: {diagnosis.explanation}\n"
                f"fix: {diagnosis.suggestion}\nproof: {culprit.proof.text()}"
            )
    except (DumpError, OSError) as failure:
        culprit.values = f"the dump could not be read back: {failure}"
    return culprit


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above ``frame`` whose file is not library code."""
    while frame is not None and is_library_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


class _AlertPdb(pdb.Pdb):
    """`pdb.Pdb` that never stops in library code (TensorFlow, Keras, us) when
    stepping on from the culprit's frame."""

    def stop_here(self, frame: FrameType) -> bool:
        path = frame.f_code.co_filename
        return not (path.startswith("<") or is_library_file(path)) and super().stop_here(frame)


def stop_in_pdb(error: NonFiniteError) -> None:
    """The ``on_alert="pdb"`` hook: print the error, stop in pdb at the user's frame;
    raise ``error`` when the user quits."""
    frame = user_frame(sys._getframe(1))
    culprit = culprit_of(error.run_path, error)
    print(
        f"{error}\n{culprit}\n(pdb) '{CULPRIT_NAME}' holds the op, its values and the "
        "diagnosis; 'continue' runs on, 'quit' stops the program",
        flush=True,
    )
    if frame is None:
        raise error
    debugger = _AlertPdb(nosigint=True)
    debugger.reset()
    outer: FrameType | None = frame
    while outer is not None:
        outer.f_trace = debugger.trace_dispatch
        debugger.botframe = outer
        outer = outer.f_back
    # A builtin, not a local: seen from every frame, `up` and `down`, and later stops.
    setattr(builtins, CULPRIT_NAME, culprit)
    debugger.interaction(frame, None)
    if debugger.quitting:
        raise error
    if debugger.stoplineno != -1:
        # `next`, `step` or `return` (not `continue`): trace on from the user's frame.
        sys.settrace(debugger.trace_dispatch)
