"""The rule interface of the diagnosis: a `Rule` (its pattern, label, usual fix and
check), what its check is given (the `Site`: the op under diagnosis) and what it
returns (a `Finding`: the explanation and the evidence it used).

`reader.analysis.diagnosis.registry` holds the rules in the order they are tried; the
checks live with their family (`op_patterns`, `training_patterns`);
`reader.analysis.diagnosis.diagnosis` runs them and words the common evidence (inputs,
output) around a finding. docs/architecture.md says how to add a pattern.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reader.analysis.diagnosis.expressions import expression_of
from reader.analysis.diagnosis.fixes import Fix, context_of, family_of, fix_for
from reader.analysis.diagnosis.input_source import (
    NAN_FREE_OPS,
    SOURCE_OPS,
    InputSource,
    input_source,
)
from reader.analysis.hunt.model_place import library_frame_location
from reader.errors import DumpError
from reader.model import Alert, Frame, Op, RootCause, Summary

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun


@dataclass(frozen=True, slots=True)
class Finding:
    """What a rule's check found: the explanation (a sentence in the user's terms,
    without its final period), the evidence lines it used beyond the op's inputs and
    output, and the fix when this case has its own (else the table entry's, else the
    rule's)."""

    explanation: str
    evidence: tuple[str, ...] = ()
    fix: str | None = None
    source: InputSource | None = None  # ``nonfinite_input``: where the values came from
    # The fix table's entry that fits the op (`reader.analysis.diagnosis.fixes`); its
    # text is the fix when ``fix`` is None.
    fix_entry: Fix | None = None

    @classmethod
    def fitted(cls, site: Site, explanation: str, evidence: tuple[str, ...] = ()) -> Finding:
        """A finding whose fix is the table's entry for the site's op, where it has one
        (else the rule's)."""
        return cls(explanation, evidence, fix_entry=site.fix)


Check = Callable[["Site"], "Finding | None"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One diagnosis pattern: its id (`Diagnosis.pattern`, the JSON's ``pattern``), its
    short label (the TUI's diagnosis line), its usual fix, and the check that finds it
    at a site (None for an outcome no check finds: `registry.OUTCOMES`)."""

    pattern: str
    label: str
    fix: str
    check: Check | None = None


@dataclass(frozen=True)
class Site:
    """The op under diagnosis, what every rule's check is given: the run and the root
    cause, what the op is, and what went in and out."""

    reader: AnalysedRun = field(compare=False, repr=False)
    cause: RootCause = field(compare=False, repr=False)
    alert: Alert
    op_type: str
    op_name: str | None
    expression: str | None
    output: Summary | None
    output_dtype: str | None
    inputs: tuple[tuple[str, Summary | None], ...]
    input_dtypes: tuple[str | None, ...]
    is_function_call: bool
    # The op type of each input's producer, where the dump defines it.
    input_ops: tuple[str | None, ...] = ()
    # The library function that made the op under the user's expression, if one did.
    library: Frame | None = None
    source: InputSource | None = None
    in_tf1_graph: bool = False
    # Where the op ran (`reader.analysis.hunt.model_place.Place`), for the fix's context.
    phase: str | None = None
    layer: str | None = None
    # What one rule computed that a later one reads again, for this diagnosis only (the
    # inputs' growth, for `spike` and `divergence`).
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, reader: AnalysedRun, cause: RootCause) -> Site:
        alert = cause.alert
        output: Summary | None = None
        output_dtype = None
        if cause.trace is not None:
            output = cause.trace.summary
            if cause.op is not None and alert.slot < len(cause.op.output_dtypes):
                output_dtype = cause.op.output_dtypes[alert.slot]
        elif cause.execution is not None:
            output = cause.execution.summary(alert.slot)
            dtypes = cause.execution.output_dtypes
            output_dtype = dtypes[alert.slot] if alert.slot < len(dtypes) else None
        if output is not None and output.dtype:
            output_dtype = output.dtype
        inputs = tuple((f"`{ref.name}`", summary) for ref, summary in cause.inputs)
        is_call = (
            alert.kind == "eager" and cause.execution is not None and cause.execution.is_function
        )
        expression = expression_of(reader, cause.frame)
        source = (
            input_source(reader, cause)
            if alert.op_type in SOURCE_OPS or alert.op_type in NAN_FREE_OPS
            else None
        )
        input_ops = tuple(_producer_type(reader, ref.op_id) for ref, _ in cause.inputs)
        try:
            place = reader.place(alert)
        except DumpError:
            place = None
        library = place.library_frame if place is not None else None
        return cls(
            reader=reader,
            cause=cause,
            alert=alert,
            op_type=alert.op_type,
            op_name=alert.op_name,
            expression=expression,
            output=output,
            output_dtype=output_dtype,
            inputs=inputs,
            input_dtypes=tuple(s.dtype if s else None for _, s in cause.inputs),
            is_function_call=is_call,
            source=source,
            input_ops=input_ops,
            library=library,
            in_tf1_graph=cause.op is not None and _is_tf1_graph(reader, cause.op),
            phase=place.phase if place is not None else None,
            layer=place.layer if place is not None else None,
        )

    @property
    def fix(self) -> Fix | None:
        """The fix that fits this op where it ran (`reader.analysis.diagnosis.fixes`), or
        None when the table has no family for it."""
        functions = tuple(
            frame.function
            for frame in (self.cause.frame, self.library)
            if frame is not None and frame.function
        )
        family = family_of(self.op_type, self.op_name, self.expression, self.input_ops)
        return fix_for(family, context_of(self.phase, self.layer, functions))

    @property
    def subject(self) -> str:
        """How the explanation names the op: the user's expression when known; for an
        op a library function made under it, that function's op under the expression
        (the user's line alone, `model.fit(...)`, says little of which op it was)."""
        if self.expression and self.library is not None:
            function = self.library.function
            where = (
                f"at {library_frame_location(self.library)}"
                if function.startswith("<")
                else f"of {function} ({library_frame_location(self.library)})"
            )
            return f"the {self.op_type} {where} under `{self.expression}`"
        if self.expression:
            return f"`{self.expression}`"
        if self.op_name:
            return f"{self.op_type} '{self.op_name}'"
        return self.op_type

    @property
    def described(self) -> str:
        """The subject, with the op type when the subject is the user's expression."""
        if self.expression and self.library is None:
            return f"{self.subject} ({self.op_type})"
        return self.subject

    @property
    def inputs_state(self) -> str:
        """The inputs in a few words: finite, or which are not recorded."""
        known = [s for _, s in self.inputs if s is not None]
        if not self.inputs:
            return "no inputs"
        if not known:
            return "inputs whose values are not recorded"
        if len(known) < len(self.inputs):
            missing = len(self.inputs) - len(known)
            return (
                f"finite inputs and {missing} whose values are not recorded "
                f"(the non-finite values may have come in there)"
            )
        return "finite inputs"

    def input(self, position: int) -> tuple[str, Summary | None]:
        if 0 <= position < len(self.inputs):
            return self.inputs[position]
        return f"input {position}", None


def _producer_type(reader: AnalysedRun, op_id: int | None) -> str | None:
    if op_id is None:
        return None
    try:
        return reader.op(op_id).op_type
    except DumpError:
        return None


def _is_tf1_graph(reader: AnalysedRun, op: Op) -> bool:
    """Whether ``op`` is in a TF1 graph: the graphs of tf.function and control flow
    are named, a ``tf.compat.v1`` graph is not (docs/format.md, ``graph``)."""
    try:
        return reader.graph(op.graph_id).name is None
    except DumpError:
        return False
