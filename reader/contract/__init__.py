"""The record contract: every record kind of the dump (`RECORD_KINDS`) and every key of
it, with its type and the format version it came in, and the maps they hold
(`NESTED_MAPS`). docs/format.md is the normative text (a test holds the two
together); it imports nothing else of the project (tested), so the writer and every
reader stand on it.

The writer (`instrument.dump`) builds records with these keys and the reader reads
them with the same ones: neither spells a key as a bare string. This package imports
nothing else of the project, so that both can stand on it.
"""

from __future__ import annotations

from reader.contract.definitions import FileRecord, FrameRecord, GraphRecord, OpRecord, StackRecord
from reader.contract.events import ExecRecord, ExecsChunk, TracesChunk, ValueMap
from reader.contract.fields import KIND_KEY, Field, FieldTable, RecordKind, Version
from reader.contract.metadata import (
    DeviceRecord,
    EndRecord,
    HeaderRecord,
    NoticeRecord,
    ReplayOfMap,
    RunRecord,
    TaskMap,
    WatchHitRecord,
    WatchMap,
    WatchSiteRecord,
    WatchStepsRecord,
)
from reader.contract.progress import ProgressAlertMap, ProgressRecord

# Every record kind, in the order docs/format.md describes them.
RECORD_KINDS: tuple[type[RecordKind], ...] = (
    HeaderRecord,
    RunRecord,
    DeviceRecord,
    NoticeRecord,
    WatchSiteRecord,
    WatchStepsRecord,
    WatchHitRecord,
    EndRecord,
    FileRecord,
    FrameRecord,
    StackRecord,
    GraphRecord,
    OpRecord,
    ExecsChunk,
    ExecRecord,
    TracesChunk,
    ProgressRecord,
)
# The maps records nest, by the record and key that hold them.
NESTED_MAPS: dict[tuple[type[RecordKind], str], type[FieldTable]] = {
    (RunRecord, RunRecord.TASK): TaskMap,
    (RunRecord, RunRecord.WATCH): WatchMap,
    (RunRecord, RunRecord.REPLAY_OF): ReplayOfMap,
    (ExecRecord, ExecRecord.VALUES): ValueMap,
    (ExecsChunk, ExecsChunk.VALUES): ValueMap,
    (TracesChunk, TracesChunk.VALUES): ValueMap,
    (ProgressRecord, ProgressRecord.ALERT): ProgressAlertMap,
}

__all__ = [
    "KIND_KEY",
    "NESTED_MAPS",
    "RECORD_KINDS",
    "DeviceRecord",
    "EndRecord",
    "ExecRecord",
    "ExecsChunk",
    "Field",
    "FieldTable",
    "FileRecord",
    "FrameRecord",
    "GraphRecord",
    "HeaderRecord",
    "NoticeRecord",
    "OpRecord",
    "ProgressAlertMap",
    "ProgressRecord",
    "RecordKind",
    "ReplayOfMap",
    "RunRecord",
    "StackRecord",
    "TaskMap",
    "TracesChunk",
    "ValueMap",
    "Version",
    "WatchHitRecord",
    "WatchMap",
    "WatchSiteRecord",
    "WatchStepsRecord",
]
