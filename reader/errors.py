"""The reader's exceptions: every failure to read a dump is a `DumpError` of some kind;
`MalformedRecordError` is internal and becomes a damage notice."""

from __future__ import annotations


class DumpError(Exception):
    """A logdir or dump that cannot be read; the message is one line for the user."""


class NoRunsError(DumpError):
    """The path is missing, is not a directory, or holds no tfdbg-tui run."""


class NoRunsYetError(NoRunsError):
    """No run there yet, but one may appear: an empty directory (or one with nothing
    but foreign content), a missing directory whose parent exists, a bucket prefix
    nothing was written under, or a logdir with no run matching the id asked for.
    A program about to write its run leaves the logdir in one of these states."""


class FormatVersionError(DumpError):
    """The dump was written in a newer major format version than this reader knows."""


class DamagedDumpError(DumpError):
    """A file is corrupt beyond its readable prefix (see `DumpReader.damage`)."""


class MalformedRecordError(ValueError):
    """A record whose fields have the wrong type or size.

    Internal to the reader: it stops the reading of a file at that record, which
    becomes a damage notice (`DumpReader.damage`); it never reaches a caller.
    """


class UnknownIdError(DumpError, LookupError):
    """An id (op, graph, stack, source file) that the dump does not define, or not yet.

    A record may refer to a definition that a live writer has not flushed yet; ask
    again after `DumpReader.update()`. It is also a `LookupError`.
    """
