"""``/api/runs/{id}/tensors`` and ``/tensors.safetensors`` (and the same under ``/api/shares``)
on the real service over HTTP: the index, the file whole and by Range, ETag and 304, 416 past
the end, 400 for a Range that does not parse, 404s that say what is missing, and a damaged or
truncated stored file answered 409 ``tensor_file_damaged``, never a 500."""

from __future__ import annotations

import hashlib
import json

import httpx
import numpy as np
import pytest
from sqlalchemy import update

from api.helpers import assert_error
from api.tensor_runs import server_store, store_run
from conftest import Server
from gradtrace.api.tensor_indexes import GZIP_INDEX_BYTES
from gradtrace.api.tensors import VERIFIED_IN_MEMORY
from gradtrace.storage import tensor_rows
from gradtrace.storage.tables import tensor_chunks
from gradtrace.storage.tensor_rows import CHUNK_BYTES
from storage.tensor_files import BF16_BITS, BF16_KEY, assert_same_tensors, make_file, sample_arrays

IMMUTABLE = "public, max-age=31536000, immutable"


def _file_url(run_id: str) -> str:
    return f"/api/runs/{run_id}/tensors.safetensors"


def test_the_index_locates_every_tensor_and_a_range_read_gives_its_exact_bits(api: httpx.Client,
                                                                             live_server: Server) -> None:
    arrays = sample_arrays(seed=7, big=3 * CHUNK_BYTES // 4)
    data = make_file(arrays)
    run = store_run(live_server, data)
    r = api.get(f"/api/runs/{run.doc_id}/tensors")
    assert r.status_code == 200, r.text
    index = r.json()
    sha = hashlib.sha256(data).hexdigest()
    assert (index["format"], index["sha256"], index["bytes"]) == ("safetensors", sha, len(data))
    assert r.headers["etag"] == f'"{sha}"' and r.headers["cache-control"] == IMMUTABLE
    assert {t["key"] for t in index["tensors"]} == set(arrays) | {BF16_KEY}
    dtypes = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int64": "<i8", "bool": "?"}
    for entry in index["tensors"]:
        if entry["end"] == entry["start"]:
            continue  # an empty tensor has no byte to ask for
        part = api.get(_file_url(run.doc_id), headers={"Range": f"bytes={entry['start']}-{entry['end'] - 1}"})
        assert part.status_code == 206, part.text
        assert part.headers["content-range"] == f"bytes {entry['start']}-{entry['end'] - 1}/{len(data)}"
        if entry["key"] == BF16_KEY:
            assert part.content == BF16_BITS.astype("<u2").tobytes() and entry["dtype"] == "BF16"
            continue
        expected = arrays[entry["key"]]
        got = np.frombuffer(part.content, dtype=dtypes[expected.dtype.name]).reshape(entry["shape"])
        np.testing.assert_array_equal(got, expected.reshape(entry["shape"]), strict=False)
        assert got.tobytes() == expected.astype(dtypes[expected.dtype.name]).tobytes()  # bit for bit


def test_the_whole_file_is_the_stored_file_with_caching_headers_and_304(api: httpx.Client,
                                                                        live_server: Server) -> None:
    data = make_file(sample_arrays(seed=8))
    run = store_run(live_server, data)
    whole = api.get(_file_url(run.doc_id))
    assert whole.status_code == 200 and whole.content == data
    assert_same_tensors(whole.content, sample_arrays(seed=8))
    etag = f'"{hashlib.sha256(data).hexdigest()}"'
    assert whole.headers["etag"] == etag and whole.headers["cache-control"] == IMMUTABLE
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["content-type"] == "application/octet-stream"
    assert whole.headers["content-length"] == str(len(data))
    for url in (_file_url(run.doc_id), f"/api/runs/{run.doc_id}/tensors"):
        for header in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
            cached = api.get(url, headers={"If-None-Match": header, "Range": "bytes=0-3"})
            assert cached.status_code == 304 and cached.content == b"" and cached.headers["etag"] == etag
        assert api.get(url, headers={"If-None-Match": '"other"'}).status_code == 200


def test_range_answers_follow_rfc_9110(api: httpx.Client, live_server: Server) -> None:
    data = make_file(sample_arrays(seed=9))
    run = store_run(live_server, data)
    url, size = _file_url(run.doc_id), len(data)
    etag = f'"{hashlib.sha256(data).hexdigest()}"'
    for header, (start, end) in {"bytes=0-7": (0, 8), "bytes=-10": (size - 10, size), "bytes=100-": (100, size),
                                 f"bytes=5-{10 * size}": (5, size)}.items():
        r = api.get(url, headers={"Range": header})
        assert r.status_code == 206 and r.content == data[start:end], header
        assert r.headers["content-range"] == f"bytes {start}-{end - 1}/{size}"
        assert r.headers["content-length"] == str(end - start) and r.headers["etag"] == etag
    for header in (f"bytes={size}-", f"bytes={size + 5}-{size + 9}", "bytes=-0"):
        error = assert_error(api.get(url, headers={"Range": header}), 416, "range_not_satisfiable")
        assert str(size) in error["message"]
        assert api.get(url, headers={"Range": header}).headers["content-range"] == f"bytes */{size}"
    for header in ("bytes=9-3", "bytes=x-1", "bytes="):
        assert_error(api.get(url, headers={"Range": header}), 400, "invalid_range")
    for header in ("items=0-3", "bytes=0-1,4-5"):  # ignored: the whole file
        r = api.get(url, headers={"Range": header})
        assert r.status_code == 200 and r.content == data
    assert api.get(url, headers={"Range": "bytes=0-3", "If-Range": etag}).status_code == 206
    stale = api.get(url, headers={"Range": "bytes=0-3", "If-Range": '"an older file"'})
    assert stale.status_code == 200 and stale.content == data


def test_404s_say_whether_the_run_or_its_tensor_file_is_missing(api: httpx.Client, live_server: Server) -> None:
    bare = store_run(live_server, None)
    for suffix in ("/tensors", "/tensors.safetensors"):
        error = assert_error(api.get(f"/api/runs/{bare.doc_id}{suffix}"), 404, "not_found")
        assert error["message"] == f"run {bare.doc_id!r} has no tensor file: it was recorded without tensors"
        assert error["detail"]["reason"] == "no_tensor_file"
        error = assert_error(api.get(f"/api/runs/{'0' * 64}{suffix}"), 404, "not_found")
        assert error["message"].startswith(f"no run with id {'0' * 64!r}")
        error = assert_error(api.get(f"/api/shares/deadbeef{suffix}"), 404, "not_found")
        assert error["message"] == "no share with id 'deadbeef'"
        assert_error(api.get(f"/api/runs/{'a' * 65}{suffix}"), 422, "invalid_request")


def test_a_share_of_a_run_keeps_its_own_copy_and_a_posted_document_has_none(api: httpx.Client,
                                                                           live_server: Server) -> None:
    data = make_file(sample_arrays(seed=10))
    run = store_run(live_server, data)
    by_id = api.post("/api/shares", json={"run_id": run.doc_id})
    assert by_id.status_code == 201, by_id.text
    share = by_id.json()
    whole = api.get(f"/api/shares/{share['id']}/tensors.safetensors")
    assert whole.status_code == 200 and whole.content == data
    assert whole.headers["content-disposition"] == f'attachment; filename="share-{share["id"]}.safetensors"'
    index = api.get(f"/api/shares/{share['id']}/tensors").json()
    assert index["sha256"] == hashlib.sha256(data).hexdigest()
    first = index["tensors"][0]
    part = api.get(f"/api/shares/{share['id']}/tensors.safetensors",
                   headers={"Range": f"bytes={first['start']}-{first['end'] - 1}"})
    assert part.status_code == 206 and part.content == data[first["start"]:first["end"]]

    # The page shares the document POST /api/runs answered: the same run, so the same file.
    page = store_run(live_server, make_file(sample_arrays(seed=11)))
    posted = api.post("/api/shares", json=json.loads(page.raw))
    assert posted.status_code == 201, posted.text
    assert api.get(f"/api/shares/{posted.json()['id']}/tensors").status_code == 200

    other = api.post("/api/shares", json={"document": {**json.loads(page.raw), "stdout": "edited"}})
    error = assert_error(api.get(f"/api/shares/{other.json()['id']}/tensors"), 404, "not_found")
    assert error["detail"]["reason"] == "no_tensor_file"

    gone = api.delete(f"/api/shares/{share['id']}", headers={"X-Delete-Token": share["delete_token"]})
    assert gone.status_code == 204
    assert_error(api.get(f"/api/shares/{share['id']}/tensors.safetensors"), 404, "not_found")
    assert api.get(_file_url(run.doc_id)).content == data  # the run's own file stays


def _damage(server: Server, run_id: str, seq: int, data: bytes) -> None:
    with server_store(server) as store, store.engine.begin() as conn:
        conn.execute(update(tensor_chunks).where(
            (tensor_chunks.c.owner == "run") & (tensor_chunks.c.owner_id == run_id)
            & (tensor_chunks.c.seq == seq)).values(data=data))


def test_a_damaged_or_truncated_stored_file_is_a_409_never_a_500(api: httpx.Client, live_server: Server) -> None:
    data = make_file(sample_arrays(seed=12, big=3 * CHUNK_BYTES // 8))
    assert CHUNK_BYTES < len(data) < 2 * CHUNK_BYTES
    truncated, garbled, flipped = (store_run(live_server, data) for _ in range(3))
    _damage(live_server, truncated.doc_id, 1, data[CHUNK_BYTES:-100])
    _damage(live_server, garbled.doc_id, 0, b"\xff" * 8 + data[8:CHUNK_BYTES])
    _damage(live_server, flipped.doc_id, 1, data[CHUNK_BYTES:-1] + bytes([data[-1] ^ 1]))

    tail = {"Range": f"bytes={len(data) - 50}-"}
    for run, requests in {truncated: [("/tensors.safetensors", {}), ("/tensors.safetensors", tail)],
                          garbled: [("/tensors", {}), ("/tensors.safetensors", {})],
                          flipped: [("/tensors.safetensors", {})]}.items():
        for suffix, headers in requests:
            error = assert_error(api.get(f"/api/runs/{run.doc_id}{suffix}", headers=headers), 409,
                                 "tensor_file_damaged")
            assert error["message"].startswith("the stored tensor file is ")
    assert "truncated" in api.get(_file_url(truncated.doc_id)).json()["error"]["message"]
    assert "SHA-256" in api.get(_file_url(flipped.doc_id)).json()["error"]["message"]
    # What still holds together is served: the head of the truncated file, the flipped one's index.
    assert api.get(_file_url(truncated.doc_id), headers={"Range": "bytes=0-99"}).content == data[:100]
    assert api.get(f"/api/runs/{flipped.doc_id}/tensors").status_code == 200


@pytest.mark.timeout(300)
def test_a_large_file_whose_bytes_changed_is_never_received_whole(api: httpx.Client, live_server: Server) -> None:
    """Beyond VERIFIED_IN_MEMORY the file streams and its hash is checked as it goes: a mismatch
    cuts the answer short of its Content-Length (NOTE [checking a stored file before serving it])."""
    data = make_file(sample_arrays(seed=13, big=VERIFIED_IN_MEMORY // 4 + 1000), bf16=False)
    intact, flipped = store_run(live_server, data), store_run(live_server, data)
    _damage(live_server, flipped.doc_id, 5, bytes([data[5 * CHUNK_BYTES] ^ 1])
            + data[5 * CHUNK_BYTES + 1:6 * CHUNK_BYTES])
    whole = api.get(_file_url(intact.doc_id))
    assert whole.status_code == 200 and hashlib.sha256(whole.content).digest() == hashlib.sha256(data).digest()
    with pytest.raises(httpx.RemoteProtocolError), api.stream("GET", _file_url(flipped.doc_id)) as r:
        assert r.status_code == 200
        received = sum(len(piece) for piece in r.iter_bytes())
        assert received < len(data)
    assert live_server.alive()


def test_a_big_index_comes_gzip_to_a_client_that_takes_it_and_is_the_same_json(live_server: Server) -> None:
    """A run's index is asked for by every page that draws the run (NOTE [tensor sources] in
    frontend/src/tensors/source.js): past GZIP_INDEX_BYTES it is gzip'd for a client that takes
    gzip, plain for one that does not, the same JSON either way; a small one is never gzip'd."""
    rng = np.random.default_rng(3)
    many = {f"n{i}.out0": rng.standard_normal((2,)).astype(np.float32) for i in range(2000)}
    big, small = store_run(live_server, make_file(many)), store_run(live_server, make_file(sample_arrays()))
    with httpx.Client(base_url=live_server.url, timeout=30) as client:
        zipped = client.get(f"/api/runs/{big.doc_id}/tensors", headers={"Accept-Encoding": "gzip"})
        plain = client.get(f"/api/runs/{big.doc_id}/tensors", headers={"Accept-Encoding": "identity"})
        tiny = client.get(f"/api/runs/{small.doc_id}/tensors", headers={"Accept-Encoding": "gzip"})
    assert zipped.status_code == plain.status_code == tiny.status_code == 200
    assert zipped.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert len(plain.content) > GZIP_INDEX_BYTES > int(zipped.headers["content-length"])
    assert zipped.json() == plain.json() and {t["key"] for t in plain.json()["tensors"]} == set(many) | {BF16_KEY}
    assert zipped.headers["etag"] == plain.headers["etag"] and zipped.headers["cache-control"] == IMMUTABLE
    assert "content-encoding" not in tiny.headers


def test_a_file_deleted_after_it_was_read_is_a_404_and_reads_before_it_stay_exact(api: httpx.Client,
                                                                                  live_server: Server) -> None:
    """The service remembers a file it found (NOTE [files the store has found]) and answers a
    small Range of it on the event loop (NOTE [cheap reads on the event loop]): the bytes are
    the stored ones, repeated reads agree, and once the file is deleted from the database by
    someone else (another replica's retention purge) its next read is a 404, never a 409 or
    a 500, and so are its index and a 304 check."""
    data = make_file(sample_arrays(seed=14, big=3 * CHUNK_BYTES // 8))
    run = store_run(live_server, data)
    for _ in range(3):  # the first finds the file, the others read what the service remembers
        part = api.get(_file_url(run.doc_id), headers={"Range": f"bytes={CHUNK_BYTES - 5}-{CHUNK_BYTES + 4}"})
        assert part.status_code == 206 and part.content == data[CHUNK_BYTES - 5:CHUNK_BYTES + 5]
        assert part.headers["etag"] == f'"{hashlib.sha256(data).hexdigest()}"'
    assert_error(api.get(_file_url(run.doc_id), headers={"Range": f"bytes={len(data)}-"}), 416,
                 "range_not_satisfiable")
    with server_store(live_server) as store, store.engine.begin() as conn:
        tensor_rows.remove(conn, "run", [run.doc_id])
    error = assert_error(api.get(_file_url(run.doc_id), headers={"Range": "bytes=8-15"}), 404, "not_found")
    assert "no longer stored" in error["message"]
    assert_error(api.get(f"/api/runs/{run.doc_id}/tensors"), 404, "not_found")
