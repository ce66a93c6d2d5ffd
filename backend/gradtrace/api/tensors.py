"""A run's (or a share's) tensor file over HTTP: its index, and the file with byte ranges.

``GET /api/runs/{id}/tensors`` answers the index (:class:`~gradtrace.schema.tensor_index.TensorIndex`:
every tensor's key, dtype, shape and absolute byte range); ``GET /api/runs/{id}/tensors.safetensors``
answers the file, whole or one ``Range`` at a time (NOTE [which Range requests are answered
how] in ``ranges.py``). Both carry ``ETag: "<sha256>"`` and immutable caching: a file never
changes under its hash. The same two live under ``/api/shares/{id}/``; one tensor by its key
is ``tensor_keys.py``. No torch here: the header is parsed as JSON
(``storage/tensor_header.py``), the buffers are only sliced.

NOTE [checking a stored file before serving it]
    Every answer checks that the file has all its chunks, and a Range read that each chunk
    it reads has its length (``storage/tensor_rows.py``); the index parses and checks the
    header. The whole file is checked against its SHA-256 before it is sent when it is at
    most ``VERIFIED_IN_MEMORY`` bytes; a larger one is hashed while it streams and its last
    piece is held back until the hash matches, so a client never receives a complete
    answer with wrong bytes (a mismatch cuts the connection short of ``Content-Length``).
    Damage found before the answer starts is a 409 (NOTE [damaged tensor files answer 409]
    in ``errors.py``).

NOTE [cheap reads on the event loop]
    A page asks for each tensor it shows with its own Range request, and on a busy machine
    the hop to the thread pool and back (two thread switches, the GIL passed twice) cost more
    than the read. So a request whose file the store already knows (``Store.known_tensors``:
    no query) and whose bytes are local (SQLite, or a run in memory) is answered on the event
    loop when it reads at most ``ON_LOOP_BYTES`` (a SQLite read of that much takes well under
    a millisecond), or answers a 304, a 400 or a 416. Anything else (a first look, the
    index, PostgreSQL, a whole file, a long range) goes to the thread pool as before. The
    index is built once per stored file and kept (``tensor_indexes.py``): every page that
    draws a run asks for it, and building it parses and checks the whole header; the file is
    still looked up for each, so a deleted one is a 404.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse

from gradtrace.api.errors import ERROR_RESPONSES
from gradtrace.api.ranges import none_match, requested_range
from gradtrace.api.responses import json_response
from gradtrace.api.services import Services, ServicesDep
from gradtrace.api.shares import find_share
from gradtrace.api.tensor_indexes import built_index
from gradtrace.errors import InvalidRange, NotFound, RangeNotSatisfiable, TensorFileDamaged
from gradtrace.schema.tensor_index import TensorIndex
from gradtrace.storage.tensor_rows import TensorSource

router = APIRouter(tags=["tensors"])
log = logging.getLogger("gradtrace.api")
IMMUTABLE = "public, max-age=31536000, immutable"
MEDIA_TYPE = "application/octet-stream"
VERIFIED_IN_MEMORY = 32 << 20
"""Whole files up to this size are hashed before they are sent (NOTE [checking a stored file
before serving it]); ranges up to it are read in one piece."""
ON_LOOP_BYTES = 4 << 20
"""Longest Range read answered on the event loop (NOTE [cheap reads on the event loop])."""

RunId = Annotated[str, Path(max_length=64)]
ShareId = Annotated[str, Path(max_length=64)]
IfNoneMatch = Annotated[str | None, Header(alias="If-None-Match", max_length=1000,
                                           description="A 304 when it names the file's ETag")]
RangeHeader = Annotated[str | None, Header(alias="Range", max_length=1000,
                                           description="One byte range: bytes=start-end, start- or -suffix")]
IfRange = Annotated[str | None, Header(alias="If-Range", max_length=200,
                                       description="Honour Range only when this is the file's ETag")]

CACHING = {"ETag": {"description": 'The file\'s SHA-256 in quotes: "<sha256>"', "schema": {"type": "string"}},
           "Cache-Control": {"description": IMMUTABLE, "schema": {"type": "string"}}}


def _error(description: str) -> dict[str, Any]:
    """An error answer in the OpenAPI: JSON, whatever the route's own media type (a model
    would take the file's ``application/octet-stream``)."""
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}


ERRORS: dict[int | str, dict[str, Any]] = {
    404: _error("Unknown id, or no tensor file was kept for it"),
    409: _error("The stored file is damaged or truncated (code tensor_file_damaged)"),
    422: _error(str(ERROR_RESPONSES[422]["description"])),
    503: _error(str(ERROR_RESPONSES[503]["description"])),
    304: {"description": "Not modified: If-None-Match names the file's ETag", "headers": CACHING},
}
BINARY = {MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}}
_INDEX_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERRORS, 200: {"description": "The index: every tensor's key, dtype, shape and byte range",
                    "headers": CACHING}}
_FILE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    200: {"description": "The whole safetensors file", "content": BINARY,
          "headers": {**CACHING, "Accept-Ranges": {"description": "bytes", "schema": {"type": "string"}}}},
    206: {"description": "One byte range of the file", "content": BINARY,
          "headers": {**CACHING, "Content-Range": {"description": "bytes start-end/size",
                                                   "schema": {"type": "string"}}}},
    400: _error("A Range header that is not a valid byte range (code invalid_range)"),
    416: _error("The Range asks for no byte of the file (Content-Range: bytes */size)"),
}


class SafetensorsResponse(Response):
    media_type = MEDIA_TYPE


@router.get("/api/runs/{run_id}/tensors", response_model=TensorIndex, responses=_INDEX_RESPONSES,
            summary="The index of a run's tensor file: each tensor's key, dtype, shape, byte range")
async def run_tensor_index(request: Request, run_id: RunId, svc: ServicesDep,
                           if_none_match: IfNoneMatch = None) -> Response:
    known = svc.store.known_tensors("run", run_id, max_age_s=svc.run_retention_s)
    return await _index(request, known, lambda: run_file(svc, run_id), if_none_match)


@router.get("/api/runs/{run_id}/tensors.safetensors", response_class=SafetensorsResponse,
            responses=_FILE_RESPONSES, summary="A run's tensor file (safetensors), whole or by Range")
async def run_tensor_file(run_id: RunId, svc: ServicesDep, range_header: RangeHeader = None,
                          if_none_match: IfNoneMatch = None, if_range: IfRange = None) -> Response:
    known = svc.store.known_tensors("run", run_id, max_age_s=svc.run_retention_s)
    return await _file(known, lambda: run_file(svc, run_id), f"run-{run_id}", range_header, if_none_match,
                       if_range)


@router.get("/api/shares/{share_id}/tensors", response_model=TensorIndex, responses=_INDEX_RESPONSES,
            summary="The index of a share's tensor file")
async def share_tensor_index(request: Request, share_id: ShareId, svc: ServicesDep,
                             if_none_match: IfNoneMatch = None) -> Response:
    known = svc.store.known_tensors("share", share_id)
    return await _index(request, known, lambda: share_file(svc, share_id), if_none_match)


@router.get("/api/shares/{share_id}/tensors.safetensors", response_class=SafetensorsResponse,
            responses=_FILE_RESPONSES, summary="A share's tensor file (safetensors), whole or by Range")
async def share_tensor_file(share_id: ShareId, svc: ServicesDep, range_header: RangeHeader = None,
                            if_none_match: IfNoneMatch = None, if_range: IfRange = None) -> Response:
    known = svc.store.known_tensors("share", share_id)
    return await _file(known, lambda: share_file(svc, share_id), f"share-{share_id}", range_header,
                       if_none_match, if_range)


async def _index(request: Request, known: TensorSource | None, find: Callable[[], TensorSource],
                 if_none_match: str | None) -> Response:
    """A 304 on the loop; otherwise the file is looked up (so a file deleted since, maybe by
    another replica, is a 404) and its index built once (NOTE [cheap reads on the event loop])."""
    if known is not None and none_match(if_none_match, etag(known)):
        return index_response(request, known, if_none_match)
    return await run_in_threadpool(lambda: index_response(request, find(), if_none_match))


async def _file(known: TensorSource | None, find: Callable[[], TensorSource], name: str, range_header: str | None,
                if_none_match: str | None, if_range: str | None) -> Response:
    """The file or a range of it, on the loop when that is cheap (NOTE [cheap reads on the event loop])."""
    if known is not None and known.local and _cheap(known, range_header, if_none_match, if_range):
        return file_response(known, name, range_header, if_none_match, if_range)
    return await run_in_threadpool(lambda: file_response(find(), name, range_header, if_none_match, if_range))


def _cheap(source: TensorSource, range_header: str | None, if_none_match: str | None, if_range: str | None) -> bool:
    """A 304, a refused Range, or one range of at most ON_LOOP_BYTES."""
    if none_match(if_none_match, etag(source)):
        return True
    try:
        wanted = requested_range(range_header, source.size, if_range=if_range, etag=etag(source))
    except (InvalidRange, RangeNotSatisfiable):
        return True
    return wanted is not None and wanted.end - wanted.start <= ON_LOOP_BYTES


def run_file(svc: Services, run_id: str) -> TensorSource:
    source = svc.store.run_tensors(run_id, max_age_s=svc.run_retention_s)
    if source is None:
        svc.require_kept_run(run_id)  # an unknown (or forgotten) run: its own 404
        raise NotFound(f"run {run_id!r} has no tensor file: it was recorded without tensors",
                       detail={"run_id": run_id, "reason": "no_tensor_file"})
    return source


def share_file(svc: Services, share_id: str) -> TensorSource:
    source = svc.store.share_tensors(share_id)
    if source is None:
        find_share(svc, share_id)  # an unknown share: its own 404
        raise NotFound(f"share {share_id!r} has no tensor file: it was shared as a document, or its run "
                       "was recorded without tensors", detail={"share_id": share_id, "reason": "no_tensor_file"})
    return source


def etag(source: TensorSource) -> str:
    return f'"{source.sha256}"'


def caching(source: TensorSource) -> dict[str, str]:
    return {"ETag": etag(source), "Cache-Control": IMMUTABLE}


def index_response(request: Request, source: TensorSource, if_none_match: str | None) -> Response:
    """The index, gzip'd when it is big and the client takes gzip: a page asks for it once the
    graph is drawn (NOTE [tensor sources] in frontend/src/tensors/source.js), whether or not a
    tensor is looked at, and a GRU-200's is 1.05 MB of JSON (13,223 tensors; 126 KB gzip'd)."""
    headers = caching(source)
    if none_match(if_none_match, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    built = built_index(source)
    if built.gz is not None:
        return json_response(request, raw=built.body, gz=built.gz, headers=headers)
    return Response(built.body, media_type="application/json", headers=headers)


def file_response(source: TensorSource, name: str, range_header: str | None, if_none_match: str | None,
                  if_range: str | None) -> Response:
    headers = {**caching(source), "Accept-Ranges": "bytes"}
    if none_match(if_none_match, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    wanted = requested_range(range_header, source.size, if_range=if_range, etag=headers["ETag"])
    if wanted is not None:
        headers["Content-Range"] = wanted.content_range
        return bytes_response(source, wanted.start, wanted.end, 206, headers)
    built_index(source)  # a damaged header is a 409 before any byte goes out
    headers["Content-Disposition"] = f'attachment; filename="{re.sub(r"[^A-Za-z0-9_-]", "", name)}.safetensors"'
    if source.size <= VERIFIED_IN_MEMORY:
        data = source.read(0, source.size)
        if hashlib.sha256(data).hexdigest() != source.sha256:
            raise _hash_mismatch()
        return SafetensorsResponse(data, headers=headers)
    headers["Content-Length"] = str(source.size)
    return StreamingResponse(_verified(source), media_type=MEDIA_TYPE, headers=headers)


def bytes_response(source: TensorSource, start: int, end: int, status: int, headers: dict[str, str]) -> Response:
    if end - start <= VERIFIED_IN_MEMORY:
        return SafetensorsResponse(source.read(start, end), status_code=status, headers=headers)
    headers["Content-Length"] = str(end - start)
    return StreamingResponse(source.stream(start, end), status_code=status, media_type=MEDIA_TYPE,
                             headers=headers)


def _verified(source: TensorSource) -> Iterator[bytes]:
    """The whole file, its last piece held back until the hash matches (NOTE [checking a
    stored file before serving it])."""
    digest = hashlib.sha256()
    held: bytes | None = None
    for piece in source.stream(0, source.size):
        digest.update(piece)
        if held is not None:
            yield held
        held = piece
    if digest.hexdigest() != source.sha256:
        log.error("tensor file %s: its bytes do not match its SHA-256; the answer was cut short", source.sha256)
        raise _hash_mismatch()
    if held is not None:
        yield held


def _hash_mismatch() -> TensorFileDamaged:
    why = "its bytes do not hash to the SHA-256 recorded when it was stored"
    return TensorFileDamaged(f"the stored tensor file is damaged: {why}", detail={"reason": why})
