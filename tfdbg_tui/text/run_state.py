"""How a run's state (`reader.run.liveness`) is worded, in one place: the run picker,
the status line and the report say it with these words (each in its own style)."""

from __future__ import annotations

from dataclasses import dataclass

from reader.run import liveness


@dataclass(frozen=True)
class StateWords:
    """The words for one state."""

    name: str
    """The state in a word or two."""
    short: str
    """The same where room is short (the status line at 80 columns)."""
    cause: str = ""
    """Why the run is in this state, when the state alone does not say."""
    meaning: str = ""
    """What it means for the dump, said after the words in the report."""

    @property
    def word(self) -> str:
        """The name and its cause: "recording stopped (write error)"."""
        return f"{self.name} ({self.cause})" if self.cause else self.name

    @property
    def sentence(self) -> str:
        """The word, then what it means: "killed: its process is gone and ..."."""
        return f"{self.word}: {self.meaning}" if self.meaning else self.word


STATE_WORDS = {
    liveness.FINISHED: StateWords("finished", "finished"),
    liveness.STOPPED: StateWords(
        "recording stopped", "stopped", "write error", "the dump ends there"
    ),
    liveness.RUNNING: StateWords("live", "live", meaning="its process is running on this host"),
    liveness.KILLED: StateWords(
        "killed", "killed", meaning="its process is gone and it has no end record"
    ),
    liveness.UNKNOWN: StateWords(
        "live or killed",
        "killed?",
        meaning=("no end record, and its process cannot be checked from here"),
    ),
}
# A file set of TensorFlow's own dumper, which records neither an end nor a pid: live,
# finished or killed cannot be told.
TENSORFLOW_DUMP = StateWords(
    "TensorFlow dump",
    "TensorFlow dump",
    meaning=("written by TensorFlow's own dumper, which records no end"),
)
