"""Logdirs in a bucket: `reader.storage.Store` over fsspec (s3://, gs://, any scheme;
imported only for a URL). Range reads fetched concurrently, the parts after a read
fetched ahead (on fsspec's event loop, inflated and cached by threads of their own,
while the reader decodes), a listing made a moment ago reused by the loader's first
read.

Imported only for a URL, and fsspec only here: local paths never need it. Part objects
never change once written (docs/format.md, "Object stores"), so what is read of them
is kept in a **local cache** (`reader.object_cache.ObjectCache`): re-reading a record,
or opening the same run again, reads the local copy. Reads are range reads of the
parts a read spans, fetched concurrently (`fsspec`'s ``cat_ranges``), never a
whole-object download unless the whole object is asked for; a part is small (about a
flush) and is fetched whole, and so is a compressed part, which is cached inflated.
The parts after a read (`reader.byte_sources.READ_AHEAD_BYTES`) are fetched
**ahead**: on the event loop of fsspec's asynchronous implementations (s3fs, gcsfs),
inflated and written to the cache by threads of their own, while the reader decodes
the parts before them; a read waits only for the parts it spans, and takes a part
fetched ahead from memory while its cache write is under way.

Every error an object store raises leaves this module as an `OSError` (fsspec's
implementations raise ``PermissionError`` for refused credentials and
``FileNotFoundError`` for a missing bucket or key; anything else they raise, such as
a connection error of the HTTP library, becomes an ``OSError`` with its text), so the
writer's write-error rules and the reader's "cannot list" apply unchanged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from typing import Any, TypeAlias

from reader.byte_sources import DamagedPart, Entry, Part, PartsSource, check_part, inflate_part
from reader.object_cache import ObjectCache

# Objects at most this large are fetched whole when any of them is read: parts are
# written at most 1 MiB (plus one record) at a time, and one request for a part costs
# the same as one for a piece of it.
WHOLE_OBJECT_BYTES = 4 << 20
# The longest one call to the store may take (a listing, a batch of range reads, a
# write) before it fails as an OSError: a server that stops answering makes a damage
# notice or a write error, never a reader or writer that waits for ever.
CALL_TIMEOUT_S = 60.0
# How long a prefix's listing is kept for a caller that takes one made a moment ago.
LISTING_KEPT_S = 10.0
# The bytes of parts fetched ahead that are kept in memory for the reads that want them
# (`ObjectStore._fresh`): twice the read-ahead.
FRESH_BYTES = 64 << 20

_STORES: dict[str, ObjectStore] = {}
# A fetch under way: per range, its bytes or the exception that failed it.
Request: TypeAlias = "concurrent.futures.Future[list[Any]]"
_STORES_LOCK = threading.Lock()


def object_store(url: str) -> ObjectStore:
    """The store for ``url``'s scheme (one per scheme and process).

    Raises:
        OSError: fsspec, or the scheme's implementation, is not installed.
    """
    scheme = url.partition("://")[0]
    with _STORES_LOCK:
        store = _STORES.get(scheme)
        if store is None:
            store = _STORES[scheme] = ObjectStore(scheme, _filesystem(scheme))
    return store


def _filesystem(scheme: str) -> Any:
    extra = {"s3": "s3", "gs": "gcs", "gcs": "gcs"}.get(scheme)
    hint = (
        f'pip install "tfdbg-tui[{extra}]"'
        if extra
        else f"install fsspec and its implementation of {scheme}://"
    )
    try:
        import fsspec

        return fsspec.filesystem(scheme)
    except ImportError as error:
        raise OSError(errno.ENOPKG, f"{scheme}:// needs {error.name or 'fsspec'}: {hint}") from None
    except ValueError as error:  # an unknown scheme
        raise OSError(errno.EPROTONOSUPPORT, f"{scheme}://: {error}") from None


def as_os_error(error: BaseException) -> OSError:
    """``error`` as an `OSError` with a one-line text."""
    if isinstance(error, OSError):
        return error
    text = " ".join(str(error).split()) or type(error).__name__
    return OSError(errno.EIO, f"{type(error).__name__}: {text}"[:300])


def _fetched_whole(part: Part) -> bool:
    """Whether a read of any of ``part`` fetches all of it: a small part
    (`WHOLE_OBJECT_BYTES`), or a compressed one, which is inflated whole."""
    return part.stored is not None or part.size <= WHOLE_OBJECT_BYTES


def _sound(part: Part) -> bool:
    """Whether a part may be fetched whole (`check_part`)."""
    try:
        check_part(part)
    except DamagedPart:
        return False
    return True


class ObjectStore:
    """Logdirs under URLs of one scheme. Paths are full URLs (``s3://bucket/key``)."""

    remote = True

    def __init__(self, scheme: str, fs: Any) -> None:
        self.scheme = scheme
        self.fs = fs
        self.cache = ObjectCache.default()
        # fsspec's asynchronous implementations (s3fs, gcsfs) take a timeout per call,
        # and their reads run on fsspec's event loop, where a read can go on while the
        # reader decodes; a blocking one has its own timeout.
        self._async = bool(getattr(fs, "async_impl", False))
        self._bounded = {"timeout": CALL_TIMEOUT_S} if self._async else {}
        # Whole parts being fetched into the cache ahead of the reads that will want
        # them, by (url, size): such a read waits for the fetch instead of asking again.
        self._ahead: dict[tuple[str, int], concurrent.futures.Future[None]] = {}
        # Guards the two tables here. Re-entrant: a fetch that is done at once calls
        # `_forget_ahead` back in the thread that started it, under the lock.
        self._lock = threading.RLock()
        # A thread each for inflating fetched parts and for writing the cache.
        self._threads: dict[str, concurrent.futures.Executor] = {}
        # Whole parts fetched ahead, by (url, size), until the cache holds them: a read
        # takes them from here rather than wait for the cache's write (at most
        # `FRESH_BYTES`, the oldest dropped first: fetched again should a read want one).
        self._fresh: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._fresh_bytes = 0
        # The latest listing of each prefix and when it was made (`list_dir`).
        self._listed: dict[str, tuple[float, list[Entry]]] = {}

    def _key(self, url: str) -> str:
        return str(self.fs._strip_protocol(url))

    def _url(self, key: str) -> str:
        return f"{self.scheme}://{key.lstrip('/')}"

    def normalize(self, path: str) -> str:
        return self._url(self._key(path).rstrip("/"))

    def join(self, base: str, name: str) -> str:
        return f"{base.rstrip('/')}/{name}"

    def basename(self, path: str) -> str:
        return path.rstrip("/").rpartition("/")[2]

    def dirname(self, path: str) -> str:
        parent = path.rstrip("/").rpartition("/")[0]
        return parent if "://" in parent and not parent.endswith(":/") else path

    def list_dir(self, path: str, fresh_within: float = 0.0) -> list[Entry]:
        """Every name directly under ``path``: listed now, or the latest listing of
        it when that was made at most ``fresh_within`` seconds ago. Raises OSError
        (FileNotFoundError for a missing bucket or prefix)."""
        key = self._key(path)
        now = time.monotonic()
        with self._lock:
            made, entries = self._listed.get(key, (-math.inf, []))
        if now - made <= fresh_within:
            return list(entries)
        try:
            found = self.fs.ls(key, detail=True, refresh=True, **self._bounded)
        except Exception as error:  # the store's own errors, as OSError
            raise as_os_error(error) from None
        entries = []
        for info in found:
            url = self._url(str(info.get("name", "")).rstrip("/"))
            entries.append(
                Entry(
                    self.basename(url),
                    url,
                    info.get("type") == "directory",
                    int(info.get("size") or 0),
                )
            )
        with self._lock:
            self._listed = {k: v for k, v in self._listed.items() if now - v[0] <= LISTING_KEPT_S}
            self._listed[key] = (now, entries)
        return list(entries)

    def is_dir(self, path: str) -> bool:
        try:
            return bool(self.fs.isdir(self._key(path), **self._bounded))
        except Exception as error:
            raise as_os_error(error) from None

    def exists(self, path: str) -> bool:
        try:
            return bool(self.fs.exists(self._key(path), **self._bounded))
        except Exception as error:
            raise as_os_error(error) from None

    def open_parts(self, parts: list[Part]) -> PartsSource:
        return PartsSource(parts, self.read_ranges)

    def prefetch(self, parts: list[Part]) -> None:
        """Start fetching ``parts`` not cached yet into the cache, concurrently, and
        return at once (nothing when the cache is off: there is nowhere to keep them).
        A read of one of them waits for its fetch instead of asking again; a part that
        cannot be fetched is read again, and fails, where it is needed."""
        self._fetch_ahead(parts)

    def read_ranges(
        self, ranges: list[tuple[Part, int, int]], ahead: Sequence[Part] = ()
    ) -> list[bytes]:
        """The bytes of each ``(part, start, end)``: from the cache (after the fetch
        of a part still under way ahead), the rest fetched concurrently and cached;
        the parts ``ahead`` not cached yet (up to `WHOLE_OBJECT_BYTES` each, or
        compressed) are fetched too, after them, without being waited for. A
        compressed part is fetched whole and cached inflated; the bytes before the
        first one that does not inflate are returned alone (fewer pieces). Raises
        OSError (`reader.byte_sources.DamagedPart` when the first range's does not)."""
        self._wait_ahead([part for part, _, _ in ranges])
        found: list[bytes | None] = []
        missing: list[int] = []
        fetch: list[tuple[Part, int, int]] = []
        for i, (part, start, end) in enumerate(ranges):
            cached = self._take_fresh(part, start, end)
            if cached is None:
                cached = self.cache.read(part.path, part.size, start, end)
            found.append(cached)
            if cached is None:
                try:
                    check_part(part)  # before fetching what may be anything
                except DamagedPart:
                    if i == 0:
                        raise
                    ranges, found = ranges[:i], found[:i]  # up to the damage
                    break
                missing.append(i)
                held = self.cache.held(part.path, part.size)
                # From the end of what is cached, so that the cache grows as a prefix;
                # a small object whole (one request either way), a compressed one too.
                whole = _fetched_whole(part)
                begin = 0 if whole else (held if held <= start else start)
                fetch.append((part, begin, part.fetched if whole else end))
        if not self._async:
            # A blocking implementation: the parts ahead in the same call.
            fetch += [(part, 0, part.fetched) for part in self._wanted_ahead(ahead)]
        request = self._request(fetch) if fetch else None
        if self._async:
            self._fetch_ahead(ahead)
        if request is None:
            return [data or b"" for data in found]
        got = self._result(request)
        for i, (part, begin, _), data in zip(missing, fetch, got):
            if isinstance(data, BaseException):
                raise as_os_error(data)
            if part.stored is not None:
                try:
                    data = inflate_part(part, data)
                except DamagedPart:
                    if i == 0:
                        raise
                    return [data or b"" for data in found[:i]]  # up to the damage
            _, start, end = ranges[i]
            self.cache.add(part.path, part.size, begin, data)
            found[i] = bytes(data[start - begin : end - begin])
        for (part, _, _), data in zip(fetch[len(missing) :], got[len(missing) :]):
            if not isinstance(data, BaseException):  # read again when it is needed
                self._keep_whole(part, data)
        return [data or b"" for data in found]

    def _keep_whole(self, part: Part, data: bytes) -> None:
        """Cache a whole part fetched ahead (inflated); one that does not inflate is
        left out, to fail where it is read."""
        try:
            self.cache.add(part.path, part.size, 0, inflate_part(part, data))
        except OSError:
            return

    def _wanted_ahead(self, parts: Sequence[Part]) -> list[Part]:
        """The ``parts`` worth fetching ahead: small enough to fetch whole, neither
        cached nor being fetched, with a cache to keep them in."""
        if self.cache.directory is None:
            return []
        with self._lock:
            return [
                part
                for part in parts
                if _fetched_whole(part)
                and (part.path, part.size) not in self._ahead
                and self.cache.held(part.path, part.size) < part.size
                and _sound(part)
            ]

    def _fetch_ahead(self, parts: Sequence[Part]) -> None:
        """Start fetching each of ``parts`` (`_wanted_ahead`) whole into the cache, in
        order, on the implementation's event loop; `_wait_ahead` waits for them."""
        if not self._async:
            self.read_ranges([], parts)  # those wanted, fetched in the one call
            return
        wanted = self._wanted_ahead(parts)
        if not wanted:
            return
        with self._lock:
            for part in wanted:
                key = (part.path, part.size)
                if key not in self._ahead:
                    future = asyncio.run_coroutine_threadsafe(self._into_cache(part), self.fs.loop)
                    self._ahead[key] = future
                    future.add_done_callback(partial(self._forget_ahead, key))

    async def _into_cache(self, part: Part) -> None:
        data = await self.fs._cat_file(self._key(part.path), start=0, end=part.fetched)
        # Inflated, and written to the cache, by threads of their own: the event loop
        # goes on receiving the other parts meanwhile, and Zstandard and the file system
        # let the reader's thread decode; the read takes the bytes without waiting for
        # the cache.
        if part.stored is not None:
            data = await asyncio.get_running_loop().run_in_executor(
                self._thread("inflate"), inflate_part, part, data
            )
        with self._lock:
            key = (part.path, part.size)
            self._fresh_bytes += len(data) - len(self._fresh.pop(key, b""))
            self._fresh[key] = data
            while self._fresh_bytes > FRESH_BYTES:
                self._fresh_bytes -= len(self._fresh.popitem(last=False)[1])
        self._thread("cache").submit(self._cache_fresh, key, data)

    def _cache_fresh(self, key: tuple[str, int], data: bytes) -> None:
        """Write a part fetched ahead to the cache, then let its bytes in memory go."""
        self.cache.add(key[0], key[1], 0, data)
        with self._lock:
            if self._fresh.get(key) is data:
                self._fresh_bytes -= len(self._fresh.pop(key))

    def _take_fresh(self, part: Part, start: int, end: int) -> bytes | None:
        """Bytes ``start:end`` of ``part`` when it was fetched ahead and is still in
        memory (not in the cache yet)."""
        with self._lock:
            data = self._fresh.get((part.path, part.size))
        if data is None or len(data) < end:
            return None
        return data if (start, end) == (0, len(data)) else data[start:end]

    def _thread(self, name: str) -> concurrent.futures.Executor:
        with self._lock:
            if name not in self._threads:
                self._threads[name] = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix=f"tfdbg-tui-object-{name}"
                )
            return self._threads[name]

    def _forget_ahead(self, key: tuple[str, int], _: object) -> None:
        with self._lock:
            self._ahead.pop(key, None)

    def _wait_ahead(self, parts: Sequence[Part]) -> None:
        """Wait for the fetches under way of ``parts``, each at most `CALL_TIMEOUT_S`
        (one that fails or takes longer is fetched again by the read that wants it)."""
        with self._lock:
            futures = [self._ahead.get((part.path, part.size)) for part in parts]
        for future in futures:
            if future is not None:
                try:
                    future.result(timeout=CALL_TIMEOUT_S)
                except concurrent.futures.TimeoutError:
                    future.cancel()
                except Exception:  # the store's own errors: the read asks again
                    continue

    def _request(self, fetch: list[tuple[Part, int, int]]) -> Request:
        """Start fetching each ``(part, start, end)`` concurrently (bytes of the object
        as stored)."""
        keys = [self._key(part.path) for part, _, _ in fetch]
        starts = [start for _, start, _ in fetch]
        ends = [end for _, _, end in fetch]
        if self._async:
            return asyncio.run_coroutine_threadsafe(
                self.fs._cat_ranges(keys, starts, ends, on_error="return"), self.fs.loop
            )
        request: Request = concurrent.futures.Future()
        try:
            request.set_result(
                self.fs.cat_ranges(keys, starts, ends, on_error="return", **self._bounded)
            )
        except Exception as error:  # the store's own errors, as OSError
            request.set_exception(error)
        return request

    def _result(self, request: Request) -> list[Any]:
        """What `_request` fetched: bytes, or an exception, per range. Raises OSError
        when the whole request failed or took longer than `CALL_TIMEOUT_S`."""
        try:
            return list(request.result(timeout=CALL_TIMEOUT_S))
        except concurrent.futures.TimeoutError:
            request.cancel()
            raise OSError(
                errno.ETIMEDOUT, f"no answer from the store within {CALL_TIMEOUT_S:.0f} s"
            ) from None
        except Exception as error:
            raise as_os_error(error) from None

    def makedirs(self, path: str) -> None:
        """Nothing: a bucket has no directories (a key's prefix is one)."""

    def put(self, path: str, data: bytes) -> None:
        try:
            self.fs.pipe_file(self._key(path), data, **self._bounded)
        except Exception as error:
            raise as_os_error(error) from None

    def replace(self, path: str, data: bytes) -> None:
        """An object is replaced whole by a put: readers see the old one or the new."""
        self.put(path, data)

    def read_small(self, paths: list[str], limit: int) -> list[bytes | None]:
        """Each object's first ``limit`` + 1 bytes, fetched concurrently, none cached
        (`Store.read_small`); a call that fails as a whole reads as none found."""
        if not paths:
            return []
        fetch = [(Part(path, limit + 1), 0, limit + 1) for path in paths]
        try:
            got = self._result(self._request(fetch))
        except OSError:
            return [None] * len(paths)
        return [data if isinstance(data, bytes) and len(data) <= limit else None for data in got]

    def remove(self, path: str) -> None:
        try:
            self.fs.rm_file(self._key(path), **self._bounded)
        except Exception as error:
            raise as_os_error(error) from None
