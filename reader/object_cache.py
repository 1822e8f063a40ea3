"""The local cache of what was read of a bucket's objects (`ObjectCache`).

Part objects never change once written (docs/format.md, "Object stores"), so what
`reader.object_store` reads of them is kept on local disk: re-reading a record, or
opening the same run again, reads the local copy.
"""

from __future__ import annotations

import fcntl
import hashlib
import os

# The cache's size is bounded: when a process first opens a bucket, the oldest cached
# objects are deleted until the cache holds at most this many bytes.
CACHE_LIMIT_BYTES = 2 << 30


class ObjectCache:
    """What was read of immutable objects, on local disk: per object, the bytes from
    its start to where reading got (a prefix), appended as reading goes on.

    The directory is ``$TFDBG_TUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/tfdbg-tui/objects``
    (``~/.cache/...``); ``TFDBG_TUI_CACHE_DIR=off`` turns caching off. Several processes
    may share it: an append takes the file's lock and checks its size first.
    """

    def __init__(self, directory: str | None) -> None:
        self.directory = directory

    @classmethod
    def default(cls) -> ObjectCache:
        directory = os.environ.get("TFDBG_TUI_CACHE_DIR")
        if directory == "off":
            return cls(None)
        if not directory:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
                os.path.expanduser("~"), ".cache"
            )
            directory = os.path.join(base, "tfdbg-tui", "objects")
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError:
            return cls(None)
        cache = cls(directory)
        cache.trim(CACHE_LIMIT_BYTES)
        return cache

    def _path(self, url: str, size: int) -> str | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256(f"{url}\0{size}".encode()).hexdigest()[:40]
        return os.path.join(self.directory, digest)

    def held(self, url: str, size: int) -> int:
        """How many bytes of the object are cached."""
        path = self._path(url, size)
        try:
            return os.stat(path).st_size if path is not None else 0
        except OSError:
            return 0

    def read(self, url: str, size: int, start: int, end: int) -> bytes | None:
        """Bytes ``start:end`` of the object, or None when they are not all cached."""
        path = self._path(url, size)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                if os.fstat(f.fileno()).st_size < end:
                    return None
                return os.pread(f.fileno(), end - start, start)
        except OSError:
            return None

    def add(self, url: str, size: int, start: int, data: bytes) -> None:
        """Keep ``data``, the object's bytes from ``start``, where they extend the
        cached prefix. A cache that cannot be written is skipped, not an error."""
        path = self._path(url, size)
        if path is None or not data:
            return
        try:
            with open(path, "ab") as f:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
                held = os.fstat(f.fileno()).st_size
                if start <= held < start + len(data):
                    f.write(memoryview(data)[held - start :])
        except OSError:
            return

    def trim(self, limit: int) -> None:
        """Delete the oldest cached objects until at most ``limit`` bytes are held."""
        if self.directory is None:
            return
        try:
            with os.scandir(self.directory) as entries:
                files = [
                    (e.stat().st_mtime, e.stat().st_size, e.path) for e in entries if e.is_file()
                ]
        except OSError:
            return
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= limit:
                break
            try:
                os.remove(path)
                total -= size
            except OSError:
                continue
