"""Where a dump lives, a local directory or a bucket behind any fsspec URL: `Store`
(local paths through `os`; a URL through `object_store`), a segment's files (whole or
part objects), the parts a run's first read asks for (`first_parts`, whose fetches
`Store.prefetch` starts when the run is opened).

One abstraction for every place a logdir can be, used by the writer and the reader
alike. A **local** path takes the code path it always did (`os.pread` on an open file
descriptor, `os.scandir`); only a URL (``s3://bucket/logdir``, ``gs://...``,
``memory://...``) reaches `reader.object_store`, which imports fsspec when it is first
needed, so local paths never need fsspec.

On an object store a segment is a sequence of closed **part** objects (docs/format.md,
"Object stores"); a local directory may hold those too (a bucket copied down). Either
way a segment reads as one growing byte sequence (`ByteSource`), so the segment reader
above does not know where its bytes come from.
"""

from __future__ import annotations

import os
from typing import Protocol

from reader import format as fmt
from reader.byte_sources import ByteSource, Entry, LocalFile, Part, PartsSource, read_local_ranges


class Store(Protocol):
    """What the writer and the reader ask of a place that holds logdirs."""

    remote: bool

    def normalize(self, path: str) -> str: ...

    def join(self, base: str, name: str) -> str: ...

    def basename(self, path: str) -> str: ...

    def dirname(self, path: str) -> str: ...

    def list_dir(self, path: str, fresh_within: float = 0.0) -> list[Entry]: ...

    def is_dir(self, path: str) -> bool: ...

    def exists(self, path: str) -> bool: ...

    def open_parts(self, parts: list[Part]) -> ByteSource: ...

    def prefetch(self, parts: list[Part]) -> None: ...

    def makedirs(self, path: str) -> None: ...

    def put(self, path: str, data: bytes) -> None: ...

    def replace(self, path: str, data: bytes) -> None:
        """Write ``path`` whole, in place of what it held: a reader sees its old bytes
        or its new ones, never a mix (a run's progress file)."""
        ...

    def read_small(self, paths: list[str], limit: int) -> list[bytes | None]:
        """Each of ``paths`` whole, read now (never from a cache: files that change,
        such as a run's progress file); None for one that is missing, cannot be read
        or holds more than ``limit`` bytes. A bucket's are fetched concurrently."""
        ...

    def remove(self, path: str) -> None: ...


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an object store (``scheme://...``) rather than a local
    path (a ``file://`` URL is local)."""
    text = os.fspath(path)
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme != "file"


def store_for(path: str | os.PathLike[str]) -> Store:
    """The store holding ``path``.

    Raises:
        OSError: ``path`` is a URL and fsspec (or the scheme's implementation, such
            as s3fs for ``s3://``) is not installed.
    """
    text = os.fspath(path)
    if not is_url(text):
        return LOCAL
    from reader.object_store import object_store

    return object_store(text)


def local_path(path: str | os.PathLike[str]) -> str:
    """``path`` without a ``file://`` prefix."""
    text = os.fspath(path)
    return text[len("file://") :] if text.startswith("file://") else text


class LocalStore:
    """Local paths, through `os` as always."""

    remote = False

    def normalize(self, path: str) -> str:
        return os.path.abspath(local_path(path))

    def join(self, base: str, name: str) -> str:
        return os.path.join(base, name)

    def basename(self, path: str) -> str:
        return os.path.basename(os.path.normpath(path))

    def dirname(self, path: str) -> str:
        return os.path.dirname(os.path.normpath(path))

    def list_dir(self, path: str, fresh_within: float = 0.0) -> list[Entry]:
        """Raises OSError when ``path`` cannot be listed. (A listing here is a system
        call: ``fresh_within`` makes no difference.) The sizes of part files are
        given (a bucket copied down is read by them), others' are 0."""
        del fresh_within
        with os.scandir(path) as entries:
            return [
                Entry(e.name, e.path, e.is_dir(follow_symlinks=True), _part_size(e))
                for e in entries
            ]

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def open_parts(self, parts: list[Part]) -> ByteSource:
        if len(parts) == 1 and parts[0].number is None:
            return LocalFile(parts[0].path)
        return PartsSource(parts, read_local_ranges)

    def prefetch(self, parts: list[Part]) -> None:
        """Nothing: the page cache reads ahead."""

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=False)

    def put(self, path: str, data: bytes) -> None:
        with open(path, "xb") as f:
            f.write(data)

    def replace(self, path: str, data: bytes) -> None:
        """Raises OSError. Written beside ``path``, then renamed over it (atomic on a
        POSIX file system, NFS included)."""
        temporary = f"{path}.{os.getpid()}.new"
        try:
            with open(temporary, "wb") as f:
                f.write(data)
            os.replace(temporary, path)
        except OSError:
            try:
                os.remove(temporary)
            except OSError:
                pass  # never made, or the directory is gone: nothing left behind
            raise

    def read_small(self, paths: list[str], limit: int) -> list[bytes | None]:
        found: list[bytes | None] = []
        for path in paths:
            try:
                with open(path, "rb") as f:
                    data = f.read(limit + 1)
            except OSError:
                data = None
            found.append(data if data is not None and len(data) <= limit else None)
        return found

    def remove(self, path: str) -> None:
        os.remove(path)


LOCAL = LocalStore()


def _part_size(entry: os.DirEntry[str]) -> int:
    if fmt.parse_part_filename(entry.name) is None:
        return 0
    try:
        return entry.stat(follow_symlinks=True).st_size
    except OSError:
        return 0  # gone since the listing: read as empty, and listed again later


def list_segments(
    run_path: str, store: Store | None = None, fresh_within: float = 0.0
) -> dict[str, dict[int, list[Part]]] | None:
    """The files of each segment present, per stream (segments ascending): one whole
    file, or its part objects. None when the run directory cannot be listed. A
    listing of the run made at most ``fresh_within`` seconds ago may serve
    (`Store.list_dir`)."""
    store = store or store_for(run_path)
    try:
        entries = store.list_dir(run_path, fresh_within)
    except OSError:
        return None
    return segments_in(entries)


def segments_in(entries: list[Entry]) -> dict[str, dict[int, list[Part]]]:
    """`list_segments` of a run directory listed already (its ``entries``)."""
    found: dict[str, dict[int, list[Part]]] = {stream: {} for stream in fmt.STREAMS}
    for entry in entries:
        whole = fmt.parse_segment_filename(entry.name)
        if whole is not None:
            found[whole[0]].setdefault(whole[1], []).append(Part(entry.path, entry.size))
            continue
        part = fmt.parse_part_filename(entry.name)
        if part is not None:
            # A compressed part holds the segment bytes its name says.
            held = (
                Part(entry.path, entry.size, part.part)
                if part.raw_size is None
                else Part(entry.path, part.raw_size, part.part, stored=entry.size)
            )
            found[part.stream].setdefault(part.segment, []).append(held)
    return {stream: dict(sorted(segments.items())) for stream, segments in found.items()}


def first_parts(listing: dict[str, dict[int, list[Part]]], budget: int) -> list[Part]:
    """The parts a run's first read will ask for, in the order it reads its streams
    (`reader.format.STREAMS`: the definitions before the executions, the traces last),
    from each stream's first segment on, up to ``budget`` bytes: what an object store
    starts fetching at once, concurrently, when the run is opened (`Store.prefetch`),
    instead of a round trip per stream."""
    chosen: list[Part] = []
    for stream in fmt.STREAMS:
        for parts in listing.get(stream, {}).values():
            for part in sorted(parts, key=lambda p: p.number or 0):
                if budget <= 0:
                    return chosen
                chosen.append(part)
                budget -= part.size
    return chosen


def has_metadata(names: list[str]) -> bool:
    """Whether a directory's names hold a metadata segment (a whole file or a part)."""
    for name in names:
        parsed = fmt.parse_segment_filename(name) or fmt.parse_part_filename(name)
        if parsed is not None and parsed[0] == fmt.STREAM_METADATA:
            return True
    return False
