"""Where in the model the report's root cause was made, as the report words it: its
phase (or the phase its values came in at: `restore`, `init`), Keras layer, library
frame, a gradient op's forward op with its user line, and the step that consumed a
value a tf.data pipeline made ahead (`reader.analysis.hunt.consumption`)."""

from __future__ import annotations

from typing import Any

import reader
from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.analysis.diagnosis.expressions import expression_of
from reader.analysis.hunt.consumption import Consumption, consumed_by
from reader.analysis.hunt.model_place import Place, library_frame_text
from reader.analysis.hunt.steps import Steps
from reader.model import Alert


def consumed_step(dump: reader.AnalysedRun, alert: Alert, steps: Steps) -> int | None:
    """The step the alert's value harmed: the step that consumed a pipeline's value
    made ahead of it, else the step it was recorded in."""
    consumption = consumed_by(dump, steps, alert)
    if consumption is not None and consumption.step is not None:
        return consumption.step
    return steps.of_execution(alert.step)


def place_dict(
    dump: reader.AnalysedRun, alert: Alert, diagnosis: Diagnosis | None
) -> dict[str, Any]:
    """An alert's place in the model as the JSON report gives it."""
    place = dump.place(alert)
    frame = place.library_frame
    forward, line = place.forward, place.forward_frame
    consumption = consumed_by(dump, dump.steps(), alert)
    return {
        "phase": _phase(place, diagnosis),
        "layer": place.layer,
        "library_frame": None
        if frame is None
        else {
            "file": frame.path,
            "line": frame.line,
            "function": frame.function,
            "text": library_frame_text(frame),
        },
        "forward_op": None
        if forward is None
        else {
            "op_type": forward.op_type,
            "name": forward.name,
            "file": None if line is None else line.path,
            "line": None if line is None else line.line,
            "function": None if line is None else line.function,
            "expression": expression_of(dump, line),
        },
        "consumed": None if consumption is None else consumption.as_dict(),
    }


def place_lines(dump: reader.AnalysedRun, alert: Alert, diagnosis: Diagnosis | None) -> list[str]:
    """The human report's lines under "Root cause:"."""
    place = dump.place(alert)
    phase = _phase(place, diagnosis)
    if phase != place.phase:
        lines = [f"in the model: {phase} (the values came in there; read in {place.phase})"]
    else:
        lines = [f"in the model: {place.describe()}"]
    if place.forward is not None:
        lines.append(f"forward op: {_forward_text(dump, place)}")
    consumption = consumed_by(dump, dump.steps(), alert)
    if consumption is not None:
        lines.append(_consumed_text(consumption))
    return lines


def _phase(place: Place, diagnosis: Diagnosis | None) -> str:
    """The place's phase, or the phase its values came in at (a variable's source)."""
    source = diagnosis.source if diagnosis is not None else None
    return source.phase if source is not None and source.phase else place.phase


def _forward_text(dump: reader.AnalysedRun, place: Place) -> str:
    """A gradient op's forward op with its user line: "Sqrt 'Sqrt' at f.py:94 `...`"."""
    assert place.forward is not None
    text = f"{place.forward.op_type} '{place.forward.name}'"
    line = place.forward_frame
    if line is not None:
        text += f" at {line.path}:{line.line} in {line.function}"
        expression = expression_of(dump, line)
        if expression:
            text += f": `{expression}`"
    return text


def _consumed_text(consumption: Consumption) -> str:
    """ "consumed at step 1 (batch 1 of its pipeline), made ahead while step 0 ran"."""
    batch = "" if consumption.batch is None else f" (batch {consumption.batch} of its pipeline)"
    step = "a later call" if consumption.step is None else f"step {consumption.step}"
    ahead = (
        ""
        if consumption.made_at_step is None or consumption.made_at_step == consumption.step
        else f", made ahead by the pipeline while step {consumption.made_at_step} ran"
    )
    return f"consumed at {step}{batch}{ahead}"
