"""One tensor of a run's (or a share's) file by its key: ``GET /api/runs/{id}/tensors/{key}``.

The answer is the tensor's raw little-endian bytes, exactly as the file holds them, with its
dtype and shape in ``X-Tensor-Dtype`` (a safetensors dtype, ``F32``) and ``X-Tensor-Shape``
(a JSON list, ``[256,256]``; ``[]`` for a scalar), and the file's ``ETag`` and immutable
caching: the bytes of a key never change under the file's hash. Only the header and the
tensor's own bytes are read from the stored file (the header once per stored file, kept with
the index: ``tensor_indexes.py``). The same lives under ``/api/shares/{id}/tensors/{key}``.

NOTE [one round trip for the first look]
    A page that has the index reads a tensor with one Range request on the file
    (``tensors.py``). A page whose index has not arrived yet (a node selected at once, the
    index asked for in idle time still on its way) would need two requests in a row, the
    index and then its Range; the key alone names the tensor here, so it needs one
    (frontend/src/tensors/source.js, NOTE [tensor sources]). A key the file does not hold is
    a 404 that says so; a damaged file is the same 409 as the file's own routes (NOTE
    [checking a stored file before serving it] in ``tensors.py``). Like a Range read, the
    answer is on the event loop when its bytes are local, the header already parsed and the
    tensor at most ``ON_LOOP_BYTES`` (NOTE [cheap reads on the event loop]).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from gradtrace.api.ranges import none_match
from gradtrace.api.services import ServicesDep
from gradtrace.api.tensor_indexes import built_index, cached_index
from gradtrace.api.tensors import (
    BINARY,
    CACHING,
    ERRORS,
    ON_LOOP_BYTES,
    IfNoneMatch,
    RunId,
    SafetensorsResponse,
    ShareId,
    bytes_response,
    caching,
    etag,
    run_file,
    share_file,
)
from gradtrace.errors import NotFound
from gradtrace.storage.tensor_rows import TensorSource

router = APIRouter(tags=["tensors"])

Key = Annotated[str, Path(max_length=200, description="The tensor's key, as the document names it (`n12.out0`)")]
_TENSOR_HEADERS = {
    **CACHING,
    "X-Tensor-Dtype": {"description": "The tensor's safetensors dtype (F32, BF16, I64, BOOL, ...)",
                       "schema": {"type": "string"}},
    "X-Tensor-Shape": {"description": "The tensor's shape as a JSON list ([256,256]; [] for a scalar)",
                       "schema": {"type": "string"}},
}
_KEY_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    200: {"description": "The tensor's raw little-endian bytes, as the file holds them", "content": BINARY,
          "headers": _TENSOR_HEADERS},
}
_KEY_RESPONSES[404] = {**ERRORS[404], "description": "Unknown id, no tensor file kept for it, or a key its "
                                                      "file does not hold (detail.reason: no_such_tensor)"}


@router.get("/api/runs/{run_id}/tensors/{key}", response_class=SafetensorsResponse, responses=_KEY_RESPONSES,
            summary="One tensor of a run's file by its key: its bytes, dtype and shape")
async def run_tensor(run_id: RunId, key: Key, svc: ServicesDep, if_none_match: IfNoneMatch = None) -> Response:
    known = svc.store.known_tensors("run", run_id, max_age_s=svc.run_retention_s)
    return await _tensor(known, lambda: run_file(svc, run_id), key, f"run {run_id!r}", if_none_match)


@router.get("/api/shares/{share_id}/tensors/{key}", response_class=SafetensorsResponse,
            responses=_KEY_RESPONSES, summary="One tensor of a share's file by its key")
async def share_tensor(share_id: ShareId, key: Key, svc: ServicesDep, if_none_match: IfNoneMatch = None) -> Response:
    known = svc.store.known_tensors("share", share_id)
    return await _tensor(known, lambda: share_file(svc, share_id), key, f"share {share_id!r}", if_none_match)


async def _tensor(known: TensorSource | None, find: Callable[[], TensorSource], key: str, owner: str,
                  if_none_match: str | None) -> Response:
    """On the loop when that is cheap (NOTE [one round trip for the first look]), else in the
    thread pool, where the file is looked up (a deleted one is a 404) and its header parsed."""
    if known is not None:
        if none_match(if_none_match, etag(known)):
            return Response(status_code=304, headers=caching(known))
        built = cached_index(known)
        place = built.places.get(key) if built is not None else None
        if known.local and built is not None and (place is None or place[1] - place[0] <= ON_LOOP_BYTES):
            return tensor_response(known, key, owner, if_none_match)
    return await run_in_threadpool(lambda: tensor_response(find(), key, owner, if_none_match))


def tensor_response(source: TensorSource, key: str, owner: str, if_none_match: str | None) -> Response:
    headers = caching(source)
    if none_match(if_none_match, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    place = built_index(source).places.get(key)
    if place is None:
        raise NotFound(f"{owner} has no tensor {key!r} in its tensor file: the document names no such key, or "
                       "that tensor was left out (the document's tensors.left_out says why)",
                       detail={"key": key, "reason": "no_such_tensor"})
    start, end, dtype, shape = place
    headers["X-Tensor-Dtype"] = dtype
    headers["X-Tensor-Shape"] = orjson.dumps(shape).decode()
    if end == start:
        return SafetensorsResponse(b"", headers=headers)
    return bytes_response(source, start, end, 200, headers)
