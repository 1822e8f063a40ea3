"""`on_alert="pdb"`: stop in pdb at the user's frame, at the first NaN or infinity, with
`culprit` (the op, its values, the diagnosis, read back with `reader`).

Where ``stop_on_alert`` raises `NonFiniteError`, this stops the program in `pdb` at
the user's frame that ran the step (for a graph op: the eager line that called the
``tf.function``; under Keras ``fit``: the line that called ``fit``), with ``culprit``
in hand: the op, its inputs' and output's values or summaries, and the diagnosis, all
read back from the dump (`reader`) like the error's own message. The values are the
dump's (FULL_TENSOR, a watched step's values replay), or, for an eager op, the op's
own tensors, at hand in its op callback in every mode. A graph op in a summary mode
has none: ``culprit`` then gives the command that keeps them (`keep_values_command`).
``continue`` runs on (the program is still recorded); ``quit`` raises the error.
"""

from __future__ import annotations

import builtins
import pdb
import re
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from instrument.non_finite import EagerOpValues, NonFiniteError
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
        values: Where the values come from ("FULL_TENSOR", "the op's own call"), or
            why there are none and the command that keeps them.
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
        from reader.analysis.diagnosis.culprit_values import value_preview

        where = f" in graph {self.graph_name!r}" if self.graph_name else ""
        step = "" if self.step is None else f" at step {self.step}"
        lines = [
            f"culprit: {self.op_type} {self.tensor_name!r}{where}{step}",
            f"  values: {self.values}",
        ]
        for name, value in [*self.inputs.items(), (f"{self.tensor_name} (output)", self.output)]:
            shown = (
                value_preview(value)
                if value is not None
                else str(self.summaries.get(name.removesuffix(" (output)")))
            )
            lines.append(f"  {name}: {shown}")
        if self.diagnosis:
            lines.append("  " + self.diagnosis.replace("\n", "\n  "))
        return "\n".join(lines)

    __repr__ = __str__


def culprit_of(
    run_path: str,
    error: NonFiniteError,
    held: EagerOpValues | None = None,
    command: str | None = None,
) -> Culprit:
    """The culprit of the dump at ``run_path``, read back with `reader`; ``held``: the
    values of the eager op the program stopped at, for what the dump does not keep;
    ``command``: the one that enabled the dump on the program's behalf ("tfdbg-tui
    run"), None when the program did (`keep_values_command`)."""
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
            alert = cause.alert
            if held is not None and alert.kind == "eager" and alert.index == held.index:
                output = held.outputs[alert.slot] if alert.slot < len(held.outputs) else None
                values = values.with_values(held.inputs, output, OWN_CALL)
            culprit.values = values.origin or _without_values(dump, cause, values.missing, command)
            for (ref, summary), stored in zip(cause.inputs, values.inputs):
                culprit.summaries[ref.name] = summary
                culprit.inputs[ref.name] = stored.value
            if cause.trace is not None:
                culprit.summaries[alert.tensor_name] = cause.trace.summary
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


# Where an eager op's values come from when the dump keeps none.
OWN_CALL = "the op's own call (its tensors, at hand when the program stopped)"


def _without_values(dump: Any, cause: Any, missing: str | None, command: str | None) -> str:
    """Why ``cause``'s op has no values here, and the command that keeps them."""
    from reader.errors import DumpError

    mode = dump.metadata.tensor_debug_mode
    if mode == "FULL_TENSOR":
        return missing or "none"
    types = [cause.alert.op_type]
    for ref, _ in cause.inputs:
        if ref.op_id is not None:
            try:
                types.append(dump.op(ref.op_id).op_type)
            except DumpError:
                continue
        elif ref.execution_index is not None:
            try:
                types.append(dump.execution(ref.execution_index).op_type)
            except DumpError:
                continue
    return (
        f"none: mode {mode} keeps summaries only. To keep the values of "
        f"{cause.alert.op_type} and its inputs, run: {keep_values_command(types, command)}"
    )


def keep_values_command(op_types: list[str], command: str | None) -> str:
    """The command that records this program again keeping the values of these op
    types only (FULL_TENSOR, ``op_regex``), and stops in pdb at the first NaN: the
    program's own command line under ``command`` ("tfdbg-tui run", "python -m
    instrument") when it was run so, else (None) the call a program that enables its
    own dump makes."""
    import shlex

    unique = list(dict.fromkeys(op_types))
    regex = "^(" + "|".join(re.escape(t) for t in unique) + ")$"
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    program = ["-m", spec.name] if spec is not None and spec.name else [sys.argv[0]]
    options = ["--pdb", "--mode", "FULL_TENSOR", "--op-regex", regex]
    if command == "tfdbg-tui run":
        return shlex.join([*command.split(), *options, "--", "python", *program, *sys.argv[1:]])
    if command is not None:
        return shlex.join([*command.split(), *options, *program, *sys.argv[1:]])
    return (
        f'enable_dump_debug_info(..., tensor_debug_mode="FULL_TENSOR", op_regex={regex!r}, '
        f'on_alert="pdb") in the program, then {shlex.join(["python", *program, *sys.argv[1:]])}'
    )


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


def stop_in_pdb(
    error: NonFiniteError, held: EagerOpValues | None = None, command: str | None = None
) -> None:
    """The ``on_alert="pdb"`` hook: print the error, stop in pdb at the user's frame;
    raise ``error`` when the user quits. ``held``: the values of the eager op that
    made the first NaN or infinity (None when a function call did); ``command``: as
    `culprit_of`'s."""
    frame = user_frame(sys._getframe(1))
    culprit = culprit_of(error.run_path, error, held, command)
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
