"""The chain: from the root cause upstream to where its bad finite values were made.

The root cause is the op that turned finite inputs into NaN or infinity; often the
trouble began earlier, in an op that made the exact zeros, the values at a domain's
edge or the huge magnitudes that the root cause could not take. From the root cause
this module walks upstream, breadth first, through the recorded summaries of each
op's inputs (a graph op's input traces, an eager op's producing executions), and
tries the origin rules (`reader.analysis.diagnosis.chain_rules`) at each op; the
nearest op where one finds its kind is the origin. The chain is the path from it to
the root cause, one `ChainLink` per op.

Before the walk, the run rules (`chain_rules.RUN_RULES`) of the diagnosis' pattern look
at the run's state from step to step (a learning rate that rose up to a divergence);
their origin reaches the root cause through the weights, not through the graph, so
their chain is the origin and the root cause.

Under a tf.distribute strategy each op the walk reaches is seen with its copies on the
other replicas, in the same step (`ChainNode.counterparts`).

The walk reads counts: FULL_HEALTH, FULL_STATS and FULL_TENSOR have them; CURT_HEALTH
and CONCISE_HEALTH do not, and the chain then says which mode would show it.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from reader.analysis.diagnosis.chain_rules import (
    RULES,
    RUN_RULES,
    ChainNode,
    Origin,
    OriginRule,
    RunOrigin,
    RunOriginRule,
)
from reader.analysis.diagnosis.expressions import expression_of
from reader.analysis.diagnosis.wording import count_text, nonfinite_text
from reader.analysis.hunt.inputs import eager_inputs, input_trace
from reader.errors import DumpError
from reader.model import Frame, Op, RootCause, Summary

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

# Ops upstream of the root cause the walk looks at, at most, and how far back it goes:
# an origin far up a graph explains little of the root cause.
MAX_CHAIN_OPS = 64
MAX_CHAIN_DEPTH = 8
# TensorFlow's name scope of replica n's ops under a tf.distribute strategy (replica 0's
# ops carry none), and how many replicas are looked for at most.
REPLICA_SCOPE = re.compile(r"^replica_(\d+)/")
MAX_REPLICAS = 64
# What a run in a mode without counts says instead of a chain.
NO_COUNTS_NOTE = (
    "{mode} records no counts of zeros or magnitudes, so the chain upstream cannot be "
    "followed: a FULL_HEALTH run (or FULL_TENSOR) shows where the bad values were made"
)


@dataclass(frozen=True, slots=True)
class ChainLink:
    """One op of the chain.

    Attributes:
        op_type: The op's type.
        name: The graph op's name, or None for an eager op.
        file: The user's file that created (or ran) it, when the dump has it.
        line: Its line.
        expression: The exact expression at that line, when the dump has its span.
        why: What the op did: the origin's kind of fault, what a link passed on, or
            what the root cause made.
        trace: The graph trace of its output (the panes select it), or None.
        execution: The eager execution, or None.
        kind: The origin's kind (`chain_rules.KINDS`), None for the other links.
    """

    op_type: str
    name: str | None
    file: str | None
    line: int | None
    expression: str | None
    why: str
    trace: int | None = None
    execution: int | None = None
    kind: str | None = None

    @property
    def subject(self) -> str:
        """ "`tf.sigmoid(logits)` (line 27)", or the op's type and name."""
        if self.expression:
            return f"`{self.expression}`" + (f" (line {self.line})" if self.line else "")
        return f"{self.op_type} '{self.name}'" if self.name else self.op_type

    def as_dict(self) -> dict[str, Any]:
        """The link as ``report --json`` gives it (``diagnosis.chain``)."""
        return {
            "op_type": self.op_type,
            "name": self.name,
            "file": self.file,
            "line": self.line,
            "expression": self.expression,
            "why": self.why,
            "kind": self.kind,
            "trace": self.trace,
            "execution": self.execution,
        }


@dataclass(frozen=True, slots=True)
class Chain:
    """The chain of a root cause: its links from the origin to the root cause (empty
    when no origin was found), the origin's evidence, and a note when the mode
    cannot show a chain."""

    links: tuple[ChainLink, ...] = ()
    evidence: tuple[str, ...] = ()
    note: str | None = None
    fix: str | None = None  # the origin's own fix (a run rule's), replacing the pattern's

    @property
    def sentence(self) -> str | None:
        """The chain in one sentence, without its final period, or None."""
        if len(self.links) < 2:
            return None
        origin, *between, _ = self.links
        text = f"They began upstream: {origin.subject} {origin.why}"
        for link in between:
            text += f"; {link.subject} {link.why}"
        return text


@dataclass(frozen=True)
class _Step:
    """An op the walk reached: what the rules see, where it is, and how it was reached
    (the step downstream of it, toward the root cause)."""

    node: ChainNode
    frame: Frame | None
    trace: int | None
    execution: int | None
    downstream: _Step | None
    depth: int


def find_chain(reader: AnalysedRun, cause: RootCause, pattern: str | None = None) -> Chain:
    """The chain of ``cause``: a run rule's origin for the diagnosis' ``pattern``, else
    the nearest op upstream where an origin rule finds its kind, and the ops between it
    and the root cause."""
    summaries = [s for _, s in cause.inputs if s is not None]
    if summaries and all(s.zero is None and s.max_abs is None for s in summaries):
        return Chain(note=NO_COUNTS_NOTE.format(mode=summaries[0].mode))
    try:
        root = _root_step(reader, cause)
    except DumpError:
        return Chain()  # the root cause's records left the disk (circular buffer)
    if root is None:
        return Chain()
    for run_rule in RUN_RULES:
        if pattern in run_rule.patterns:
            try:
                found_run = run_rule.find(reader, cause)
            except DumpError:
                found_run = None
            if found_run is not None:
                return _run_chain(reader, cause, root, run_rule, found_run)
    queue = deque([root])
    seen = 0
    while queue and seen < MAX_CHAIN_OPS:
        step = queue.popleft()
        for upstream in _upstream(reader, step):
            seen += 1
            found = _origin(upstream.node)
            if found is not None:
                rule, origin = found
                return _chain(reader, cause, upstream, rule, origin)
            if upstream.depth < MAX_CHAIN_DEPTH and _carries(upstream.node.output):
                queue.append(upstream)
    return Chain()


def _run_chain(
    reader: AnalysedRun, cause: RootCause, root: _Step, rule: RunOriginRule, origin: RunOrigin
) -> Chain:
    """The chain of a run rule's origin: the op it read, then the root cause."""
    step = _graph_step(reader, origin.op_id, origin.slot, origin.trace, root)
    links = (
        _link(reader, step, origin.why, rule.kind),
        _link(reader, root, _root_why(cause, root.node)),
    )
    return Chain(links, origin.evidence, fix=rule.fix)


def _origin(node: ChainNode) -> tuple[OriginRule, Origin] | None:
    for rule in RULES:
        origin = rule.check(node)
        if origin is not None:
            return rule, origin
    return None


def _carries(summary: Summary | None) -> bool:
    """Whether the walk goes on through an op's output: recorded and finite."""
    return summary is not None and not summary.is_alert


def _chain(
    reader: AnalysedRun, cause: RootCause, origin_step: _Step, rule: OriginRule, origin: Origin
) -> Chain:
    links = [_link(reader, origin_step, origin.why, rule.kind)]
    step = origin_step.downstream
    while step is not None and step.downstream is not None:
        links.append(_link(reader, step, _passed(step.node.output)))
        step = step.downstream
    assert step is not None  # the walk starts at the root cause
    links.append(_link(reader, step, _root_why(cause, step.node)))
    return Chain(tuple(links), origin.evidence)


def _root_why(cause: RootCause, node: ChainNode) -> str:
    """What the root cause made, and on which replica alone when the others' copies
    stayed finite."""
    output = cause.trace.summary if cause.trace is not None else None
    if cause.execution is not None and cause.trace is None:
        output = cause.execution.summary(cause.alert.slot)
    why = f"turned them into {nonfinite_text(output)}"
    if node.replica is not None and node.others_finite:
        why += f" on replica {node.replica} only ({node.others_text} stayed finite)"
    return why


def _passed(summary: Summary | None) -> str:
    """What a link between the origin and the root cause passed on."""
    if summary is not None and summary.zero:
        return f"passed them on as {count_text(summary.zero, 'exact zero')}"
    if summary is not None and summary.neg:
        return f"passed them on ({count_text(summary.neg, 'negative value')})"
    return "passed them on"


def _link(reader: AnalysedRun, step: _Step, why: str, kind: str | None = None) -> ChainLink:
    frame = step.frame
    return ChainLink(
        op_type=step.node.op_type,
        name=step.node.name,
        file=frame.path if frame is not None else None,
        line=frame.line if frame is not None else None,
        expression=expression_of(reader, frame),
        why=why,
        trace=step.trace,
        execution=step.execution,
        kind=kind,
    )


# -- the walk: graph ops by their traces, eager ops by their executions -------------------


def _root_step(reader: AnalysedRun, cause: RootCause) -> _Step | None:
    if cause.op is not None and cause.trace is not None:
        return _graph_step(reader, cause.op.id, cause.alert.slot, cause.trace.index, None)
    if cause.execution is not None:
        return _eager_step(reader, cause.execution.index, cause.alert.slot, None)
    return None


def _upstream(reader: AnalysedRun, step: _Step) -> list[_Step]:
    found = []
    try:
        if step.trace is not None:
            op_id = reader.trace(step.trace).op_id
            for ref in reader.op(op_id).inputs if op_id is not None else ():
                if ref.op_id is None:
                    continue
                index = input_trace(reader, ref.op_id, ref.slot, step.trace)
                if index is not None:
                    found.append(_graph_step(reader, ref.op_id, ref.slot, index, step))
        elif step.execution is not None:
            for eager in eager_inputs(reader, reader.execution(step.execution)):
                if eager.producer_index is not None:
                    found.append(_eager_step(reader, eager.producer_index, eager.slot, step))
    except DumpError:
        pass  # a record left the disk (circular buffer): the walk ends here
    # The inputs that hold exact zeros or negatives first: a denominator's zeros, not
    # its numerator, are what a division could not take.
    return sorted(
        found, key=lambda s: not (s.node.output and (s.node.output.zero or s.node.output.neg))
    )


def _graph_step(
    reader: AnalysedRun, op_id: int, slot: int, index: int, down: _Step | None
) -> _Step:
    op = reader.op(op_id)
    inputs = []
    for ref in op.inputs:
        summary, dtype = None, None
        if ref.op_id is not None:
            producer = reader.op(ref.op_id)
            if 0 <= ref.slot < len(producer.output_dtypes):
                dtype = producer.output_dtypes[ref.slot]
            found = input_trace(reader, ref.op_id, ref.slot, index)
            summary = reader.trace(found).summary if found is not None else None
        inputs.append((ref.name, summary, dtype))
    output = reader.trace(index).summary
    node = ChainNode(
        op.op_type,
        op.name,
        output,
        (output.dtype if output is not None and output.dtype else None)
        or (op.output_dtypes[slot] if 0 <= slot < len(op.output_dtypes) else None),
        tuple(inputs),
    )
    replica, counterparts = _replicas(reader, op, slot, index)
    if replica is not None:
        node = replace(node, replica=replica, counterparts=counterparts)
    if down is not None:
        node = replace(node, root=down.node.root or down.node)
    frame = reader.innermost_user_frame(op.stack_id)
    return _Step(node, frame, index, None, down, 0 if down is None else down.depth + 1)


def _replicas(
    reader: AnalysedRun, op: Op, slot: int, index: int
) -> tuple[int | None, tuple[tuple[int, Summary | None], ...]]:
    """The replica whose copy ``op`` is, and the other copies' summaries of output
    ``slot`` in the step of trace ``index``; (None, ()) for an op not replicated."""
    scoped = REPLICA_SCOPE.match(op.name)
    replica = int(scoped[1]) if scoped else 0
    base = op.name[scoped.end() :] if scoped else op.name
    copies = []
    for other in range(MAX_REPLICAS):
        name = base if other == 0 else f"replica_{other}/{base}"
        found = op if other == replica else reader.op_by_name(op.graph_id, name)
        if found is None:
            if other > 0:
                break
            continue
        if other != replica:
            copies.append((other, _same_step_summary(reader, found.id, slot, index)))
    if not copies:
        return None, ()
    return replica, tuple(copies)


def _same_step_summary(reader: AnalysedRun, op_id: int, slot: int, index: int) -> Summary | None:
    """The summary of ``(op_id, slot)``'s trace nearest trace ``index`` in its step."""
    step = reader.trace(index).step
    for after in (False, True):
        found = reader.nearest_trace_of(op_id, slot, index, after=after)
        if found is not None:
            trace = reader.trace(found)
            if trace.step == step:
                return trace.summary
    return None


def _eager_step(reader: AnalysedRun, index: int, slot: int, down: _Step | None) -> _Step:
    execution = reader.execution(index)
    inputs = []
    for eager in eager_inputs(reader, execution):
        dtype = None
        if eager.producer_index is not None:
            dtypes = reader.execution(eager.producer_index).output_dtypes
            dtype = dtypes[eager.slot] if 0 <= eager.slot < len(dtypes) else None
        inputs.append((eager.name, eager.summary, dtype))
    output = execution.summary(slot)
    dtypes = execution.output_dtypes
    node = ChainNode(
        execution.op_type,
        None,
        output,
        (output.dtype if output is not None and output.dtype else None)
        or (dtypes[slot] if 0 <= slot < len(dtypes) else None),
        tuple(inputs),
    )
    frame = reader.innermost_user_frame(execution.stack_id)
    return _Step(node, frame, None, index, down, 0 if down is None else down.depth + 1)
