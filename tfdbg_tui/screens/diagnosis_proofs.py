"""The proof of the diagnosis's fix, and the op's values, in the whole diagnosis (`e`).

`DiagnosisProofs` is an object the debugger screen holds once the run is open. `e`
opens the diagnosis with its proof when one is kept; otherwise with a line saying the
op is being rerun, while a worker reads the op's stored values (`reader.analysis.
diagnosis.culprit_values`: FULL_TENSOR, or a watched step's values replay) and reruns
it on them as it ran and fixed (`instrument.repro.proof`, in a process of its own: the
app never imports TensorFlow). The worker posts `ProofLoaded` to the screen, whose
handler hands it back here: the proof and the values are kept per diagnosed alert and
set on the box if it is still open.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from textual.message import Message
from textual.screen import Screen

from reader import AnalysedRun
from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.errors import DumpError
from tfdbg_tui.dialogs.text_dialog import TextDialog, diagnosis_dialog
from tfdbg_tui.widgets.diagnosis_line import diagnosis_text

# What the box says while the op is rerun.
PROVING = "rerunning the op on its stored values…"


@dataclass
class ProofLoaded(Message):
    """The proof of a diagnosis's fix, as one line, and the op's values."""

    diagnosis: Diagnosis
    text: str
    values: tuple[str, ...] = ()
    """Where the op's values were kept, then a line per tensor; empty without values."""


class DiagnosisProofs:
    """The proofs of the diagnoses' fixes, read in workers and kept per alert.

    Args:
        screen: The debugger screen: it runs the workers and receives their messages.
        reader: The run's reader.
    """

    def __init__(self, screen: Screen, reader: AnalysedRun) -> None:
        self.screen = screen
        self.reader = reader
        self._kept: dict[tuple[str, int], ProofLoaded] = {}

    def dialog(self, diagnosis: Diagnosis) -> TextDialog:
        """The whole diagnosis with its proof and values, or with `PROVING` while a
        worker reads and reruns the op (a diagnosis of no alert, a verdict, has none)."""
        alert = diagnosis.alert
        kept = None if alert is None else self._kept.get((alert.kind, alert.index))
        if kept is not None:
            return diagnosis_dialog(diagnosis, kept.text, kept.values)
        proof = None
        if alert is not None:
            proof = PROVING
            self.screen.run_worker(
                partial(self._prove, diagnosis),
                name="proof",
                group="proof",
                exclusive=True,
                thread=True,
            )
        return diagnosis_dialog(diagnosis, proof)

    def _prove(self, diagnosis: Diagnosis) -> None:
        from instrument.repro.proof import prove
        from reader.analysis.diagnosis.culprit_values import culprit_values

        assert diagnosis.alert is not None
        lines: tuple[str, ...] = ()
        try:
            cause = self.reader.root_cause(diagnosis.alert)
            text = "not proven: no root cause" if cause is None else ""
            if cause is not None:
                values = culprit_values(self.reader, cause)
                if values.kept:
                    lines = (f"kept by {values.origin}", *values.lines())
                text = prove(values).text()
        except DumpError as error:
            text = f"not proven: {error}"
        self.screen.post_message(ProofLoaded(diagnosis, text, lines))

    def loaded(self, message: ProofLoaded, shown: Diagnosis | None) -> None:
        """Keep the proof and values; set them on the box when it still shows that
        diagnosis."""
        alert = message.diagnosis.alert
        assert alert is not None
        self._kept[(alert.kind, alert.index)] = message
        box = self.screen.app.screen
        if isinstance(box, TextDialog) and shown is message.diagnosis:
            box.show_text(
                diagnosis_text(
                    message.diagnosis, full=True, proof=message.text, values=message.values
                )
            )
