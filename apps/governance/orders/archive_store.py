"""The export store: export bundles and archives as rows of chunks in PostgreSQL.

A web process receives an owner's bundle, a worker builds the archive, and any web
process serves it: they share nothing but PostgreSQL and Redis, so nothing an export
needs lies on one host's disk. A file is the `ExportChunk` rows under its key, in
`seq` order, each CHUNK bytes but the last; the order's tenant owns them, and
row-level security keeps them its own.

A file is written in the caller's transaction and tenant scope (`FileWriter`), so a
refused upload or a failed assembly leaves no chunk behind; it is read one chunk at a
time (`chunks`, `FileReader`), so no file is ever whole in memory. Expiry and a
tenant's deletion remove the chunks (`delete_files`, `delete_tenant_files`).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Iterator

from django.db import connection

from apps.core.scope import tenant_scope
from apps.governance.models import ExportChunk

CHUNK = 1 << 20
BUNDLES = "bundles/"


def bundle_key(order_id, name: str) -> str:
    """Where an order's bundle is kept until the archive takes it in."""
    return f"{BUNDLES}{order_id}/{name}"


class FileWriter(io.RawIOBase):
    """A new file under `key`, written chunk by chunk in the caller's transaction (in
    the tenant's scope); `size` and `sha256` say what was written. Not seekable: a ZIP
    written through it records each member's sizes after the member."""

    def __init__(self, *, tenant_id, order_id, key: str):
        super().__init__()
        self.tenant_id, self.order_id, self.key = tenant_id, order_id, key
        self.size, self._seq = 0, 0
        self._digest = hashlib.sha256()
        self._pending = bytearray()
        self._abandoned = False

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        data = bytes(data)
        self._digest.update(data)
        self.size += len(data)
        self._pending += data
        while len(self._pending) >= CHUNK:
            self._store(bytes(self._pending[:CHUNK]))
            del self._pending[:CHUNK]
        return len(data)

    def tell(self) -> int:
        return self.size

    def __exit__(self, kind, *details):
        if kind is not None:
            # The caller's transaction is rolled back; a last write would only bury the
            # error in another (a broken connection's, or an aborted transaction's).
            self._abandoned = True
        return super().__exit__(kind, *details)

    def close(self) -> None:
        try:
            if not self._abandoned and not self.closed and (self._pending or self._seq == 0):
                self._store(bytes(self._pending))  # an empty file is one empty chunk
        finally:
            # Closed even when the last chunk was refused: otherwise the garbage
            # collector's close() would write it again, later, in whatever transaction
            # the process has open then.
            self._pending.clear()
            super().close()

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()

    def _store(self, data: bytes) -> None:
        ExportChunk.objects.create(
            tenant_id=self.tenant_id, order_id=self.order_id, key=self.key, seq=self._seq, data=data
        )
        self._seq += 1


def _chunk(tenant_id, key: str, seq: int) -> bytes | None:
    with tenant_scope(tenant_id):
        found = ExportChunk.objects.filter(key=key, seq=seq).values_list("data", flat=True)
        data = found.first()
    return None if data is None else bytes(data)


def chunks(*, tenant_id, key: str) -> Iterator[bytes]:
    """The file's bytes, a chunk at a time, each read in its own short transaction: a
    download streams without holding a transaction or the file."""
    seq = 0
    while (data := _chunk(tenant_id, key, seq)) is not None:
        yield data
        seq += 1


class FileReader(io.RawIOBase):
    """A stored file of `size` bytes as a seekable file (a Parquet bundle is read from
    its end), one chunk held at a time."""

    def __init__(self, *, tenant_id, key: str, size: int):
        super().__init__()
        self.tenant_id, self.key, self.size = tenant_id, key, size
        self._position = 0
        self._held: tuple[int, bytes] | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:
        if self._position >= self.size:
            return 0
        seq, offset = divmod(self._position, CHUNK)
        if self._held is None or self._held[0] != seq:
            data = _chunk(self.tenant_id, self.key, seq)
            if data is None:
                raise OSError(f"the stored file {self.key} lacks its chunk {seq}")
            self._held = (seq, data)
        data = self._held[1]
        count = min(len(buffer), len(data) - offset)
        buffer[:count] = data[offset : offset + count]
        self._position += count
        return count


def _delete(where: str, params: list) -> int:
    # SQL, not QuerySet.delete(): Django may fetch the rows (their bytes) before deleting
    # them when any deletion signal has a receiver.
    table = ExportChunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE {where}", params)  # noqa: S608 - names only
        return cursor.rowcount


def delete_files(keys: Iterable[str]) -> int:
    """Remove the files under `keys` (the caller's transaction, in their tenant's scope);
    how many were there to remove."""
    keys = list(keys)
    if not keys:
        return 0
    table = ExportChunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH gone AS (DELETE FROM {table} WHERE key = ANY(%s) RETURNING key)"  # noqa: S608 - names only
            " SELECT count(DISTINCT key) FROM gone",
            [keys],
        )
        return cursor.fetchone()[0]


def delete_bundles(order_id) -> int:
    """Remove an order's bundles, once its archive holds them (the caller's scope)."""
    return _delete("order_id = %s AND starts_with(key, %s)", [order_id, BUNDLES])


def delete_tenant_files(tenant_id) -> int:
    """Remove every bundle and archive of a tenant: its deletion."""
    with tenant_scope(tenant_id):
        return _delete("tenant_id = %s", [tenant_id])
