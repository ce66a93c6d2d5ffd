"""``GET /api/runs/{id}/tensors/{key}`` (and ``/api/shares/{id}/tensors/{key}``) on the real
service over HTTP: one tensor's exact bytes with its dtype and shape in headers, the file's
ETag and immutable caching, 404s that say what is missing (the run, its file, or the key),
and a damaged or truncated stored file answered 409 ``tensor_file_damaged``, never a 500
(NOTE [one round trip for the first look] in backend/gradtrace/api/tensor_keys.py)."""

from __future__ import annotations

import hashlib
import json

import httpx
import numpy as np
from sqlalchemy import update

from api.helpers import assert_error
from api.tensor_runs import server_store, store_run
from conftest import Server
from gradtrace.api.tensors import ON_LOOP_BYTES
from gradtrace.storage.tables import tensor_chunks
from gradtrace.storage.tensor_rows import CHUNK_BYTES
from storage.tensor_files import BF16_BITS, BF16_KEY, make_file, read_back, sample_arrays

IMMUTABLE = "public, max-age=31536000, immutable"


def test_every_key_answers_its_exact_bytes_dtype_and_shape(api: httpx.Client, live_server: Server) -> None:
    arrays = sample_arrays(seed=21, big=3 * CHUNK_BYTES // 4)  # n9.out0 spans two stored chunks
    data = make_file(arrays)
    run = store_run(live_server, data)
    etag = f'"{hashlib.sha256(data).hexdigest()}"'
    expected = read_back(data)
    assert set(expected) == set(arrays) | {BF16_KEY}
    for _ in range(2):  # the first parses the header, the second answers from what was kept
        for key, (dtype, shape, raw) in expected.items():
            r = api.get(f"/api/runs/{run.doc_id}/tensors/{key}")
            assert r.status_code == 200, r.text
            assert r.content == raw, key  # bit for bit, whatever the dtype
            assert r.headers["x-tensor-dtype"] == dtype and json.loads(r.headers["x-tensor-shape"]) == shape, key
            assert r.headers["etag"] == etag and r.headers["cache-control"] == IMMUTABLE
            assert r.headers["content-type"] == "application/octet-stream"
    assert api.get(f"/api/runs/{run.doc_id}/tensors/{BF16_KEY}").content == BF16_BITS.astype("<u2").tobytes()
    scalar = api.get(f"/api/runs/{run.doc_id}/tensors/n3.value")
    assert json.loads(scalar.headers["x-tensor-shape"]) == expected["n3.value"][1]
    assert np.frombuffer(scalar.content, "<f4")[0] == np.float32(2.5)
    empty = api.get(f"/api/runs/{run.doc_id}/tensors/n6.out0")
    assert empty.status_code == 200 and empty.content == b"" and json.loads(empty.headers["x-tensor-shape"]) == [0, 3]
    for header in (etag, f"W/{etag}", "*"):
        cached = api.get(f"/api/runs/{run.doc_id}/tensors/n1.out0", headers={"If-None-Match": header})
        assert cached.status_code == 304 and cached.content == b"" and cached.headers["etag"] == etag
    assert api.get(f"/api/runs/{run.doc_id}/tensors/n1.out0", headers={"If-None-Match": '"other"'}).status_code == 200


def test_a_tensor_longer_than_a_loop_read_comes_whole_from_the_thread_pool(api: httpx.Client,
                                                                           live_server: Server) -> None:
    arrays = sample_arrays(seed=22, big=ON_LOOP_BYTES // 4 + 1000)
    data = make_file(arrays, bf16=False)
    run = store_run(live_server, data)
    api.get(f"/api/runs/{run.doc_id}/tensors")  # the header is known: only the length sends it off the loop
    r = api.get(f"/api/runs/{run.doc_id}/tensors/n9.out0")
    assert r.status_code == 200 and json.loads(r.headers["x-tensor-shape"]) == [ON_LOOP_BYTES // 4 + 1000]
    assert r.content == arrays["n9.out0"].astype("<f4").tobytes()


def test_404s_say_whether_the_run_its_file_or_the_key_is_missing(api: httpx.Client, live_server: Server) -> None:
    run = store_run(live_server, make_file(sample_arrays(seed=23)))
    for _ in range(2):  # before and after the header was kept
        error = assert_error(api.get(f"/api/runs/{run.doc_id}/tensors/n99.out0"), 404, "not_found")
        assert error["message"].startswith(f"run {run.doc_id!r} has no tensor 'n99.out0' in its tensor file")
        assert error["detail"] == {"key": "n99.out0", "reason": "no_such_tensor"}
    bare = store_run(live_server, None)
    error = assert_error(api.get(f"/api/runs/{bare.doc_id}/tensors/n1.out0"), 404, "not_found")
    assert error["detail"]["reason"] == "no_tensor_file" and "recorded without tensors" in error["message"]
    error = assert_error(api.get(f"/api/runs/{'0' * 64}/tensors/n1.out0"), 404, "not_found")
    assert error["message"].startswith(f"no run with id {'0' * 64!r}")
    error = assert_error(api.get("/api/shares/deadbeef/tensors/n1.out0"), 404, "not_found")
    assert error["message"] == "no share with id 'deadbeef'"
    assert_error(api.get(f"/api/runs/{run.doc_id}/tensors/{'k' * 201}"), 422, "invalid_request")


def test_a_share_answers_its_own_copy_by_key(api: httpx.Client, live_server: Server) -> None:
    arrays = sample_arrays(seed=24)
    run = store_run(live_server, make_file(arrays))
    share = api.post("/api/shares", json={"run_id": run.doc_id})
    assert share.status_code == 201, share.text
    r = api.get(f"/api/shares/{share.json()['id']}/tensors/n2.out0")
    assert r.status_code == 200 and r.content == arrays["n2.out0"].astype("<f8").tobytes()
    assert r.headers["x-tensor-dtype"] == "F64" and json.loads(r.headers["x-tensor-shape"]) == [2, 3, 4]
    error = assert_error(api.get(f"/api/shares/{share.json()['id']}/tensors/nope"), 404, "not_found")
    assert error["message"].startswith(f"share {share.json()['id']!r} has no tensor 'nope'")


def _damage(server: Server, run_id: str, seq: int, data: bytes) -> None:
    with server_store(server) as store, store.engine.begin() as conn:
        conn.execute(update(tensor_chunks).where(
            (tensor_chunks.c.owner == "run") & (tensor_chunks.c.owner_id == run_id)
            & (tensor_chunks.c.seq == seq)).values(data=data))


def test_a_damaged_or_truncated_file_is_a_409_and_what_holds_together_is_served(api: httpx.Client,
                                                                               live_server: Server) -> None:
    arrays = sample_arrays(seed=25, big=3 * CHUNK_BYTES // 8)
    data = make_file(arrays)
    assert CHUNK_BYTES < len(data) < 2 * CHUNK_BYTES
    truncated, garbled = store_run(live_server, data), store_run(live_server, data)
    _damage(live_server, truncated.doc_id, 1, data[CHUNK_BYTES:-100])
    _damage(live_server, garbled.doc_id, 0, data[:8] + b"{not json" + data[17:CHUNK_BYTES])
    for run, key in ((truncated, "n9.out0"), (garbled, "n1.out0")):
        error = assert_error(api.get(f"/api/runs/{run.doc_id}/tensors/{key}"), 409, "tensor_file_damaged")
        assert error["message"].startswith("the stored tensor file is ")
    # the truncated file's header and its first tensors (in chunk 0) still hold together
    head = api.get(f"/api/runs/{truncated.doc_id}/tensors/n1.out0")
    assert head.status_code == 200 and head.content == arrays["n1.out0"].astype("<f4").tobytes()
    assert live_server.alive()


def test_the_openapi_describes_the_route_its_headers_and_its_errors(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    for path in ("/api/runs/{run_id}/tensors/{key}", "/api/shares/{share_id}/tensors/{key}"):
        answers = paths[path]["get"]["responses"]
        assert set(answers["200"]["headers"]) >= {"ETag", "Cache-Control", "X-Tensor-Dtype", "X-Tensor-Shape"}
        assert "application/octet-stream" in answers["200"]["content"]
        assert {"304", "404", "409", "422"} <= set(answers), sorted(answers)
        assert "no_such_tensor" in answers["404"]["description"]
