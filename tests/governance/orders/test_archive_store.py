"""The export store: files as chunks in PostgreSQL, written in the caller's transaction,
read back in pieces (sequentially for a download, from anywhere for a Parquet footer)."""

import io
import os
import zipfile

import pytest

from apps.core.errors import NotFound
from apps.core.scope import tenant_scope
from apps.governance.models import ExportChunk
from apps.governance.orders import archive_store, exports
from tests.governance.factories import export_row, store_file

pytestmark = pytest.mark.django_db
CHUNK = archive_store.CHUNK


@pytest.fixture
def order(tenant_a):
    return export_row(tenant_a)


def test_a_file_is_fixed_size_chunks_that_read_back_whole_and_from_anywhere(order):
    data = os.urandom(2 * CHUNK + 12_345)
    out = store_file(order, "bundles/x.bin", data)
    with tenant_scope(order.tenant_id):
        sizes = list(
            ExportChunk.objects.filter(key="bundles/x.bin")
            .order_by("seq")
            .values_list("seq", "data")
        )
    assert [(seq, len(piece)) for seq, piece in sizes] == [(0, CHUNK), (1, CHUNK), (2, 12_345)]
    assert (out.size, len(data)) == (len(data), len(data))
    chunks = archive_store.chunks(tenant_id=order.tenant_id, key="bundles/x.bin")
    assert b"".join(chunks) == data
    raw = archive_store.FileReader(tenant_id=order.tenant_id, key="bundles/x.bin", size=out.size)
    reader = io.BufferedReader(raw, 4096)
    reader.seek(CHUNK - 10)
    assert reader.read(30) == data[CHUNK - 10 : CHUNK + 20]  # across a chunk's end
    reader.seek(-5, io.SEEK_END)
    assert reader.read() == data[-5:]


def test_a_zip_written_through_the_store_reads_back(order):
    sink = io.BytesIO()
    members = {"a.bin": os.urandom(CHUNK + 1), "b.txt": b"hello\n" * 1000}
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as reference:
        for name, data in members.items():
            reference.writestr(name, data)
    out = store_file(order, "archives/z.zip", sink.getvalue(), piece=CHUNK // 3)
    reader = archive_store.FileReader(
        tenant_id=order.tenant_id, key="archives/z.zip", size=out.size
    )
    archive = zipfile.ZipFile(io.BufferedReader(reader))
    assert {name: archive.read(name) for name in archive.namelist()} == members


def test_a_download_whose_chunks_went_meanwhile_breaks_off(order):
    out = store_file(order, "archives/gone.zip", os.urandom(CHUNK + 10))
    artifact = exports.ExportArtifact(
        tenant_id=order.tenant_id, order=order, path="archives/gone.zip", size=out.size
    )
    stream = exports.export_archive_stream(artifact)
    assert len(next(stream)) == CHUNK
    with tenant_scope(order.tenant_id):
        archive_store.delete_files(["archives/gone.zip"])
    with pytest.raises(exports.ArchiveIncomplete):
        next(stream)


def test_an_archive_whose_bytes_are_not_stored_is_not_found_before_any_answer(order):
    artifact = exports.ExportArtifact(
        tenant_id=order.tenant_id, order=order, path="archives/on-an-old-disk.zip", size=10
    )
    with pytest.raises(NotFound):
        exports.export_archive_stream(artifact)
