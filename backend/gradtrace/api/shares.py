"""Share links: ``POST /api/shares``, ``GET /api/shares/{id}``, ``DELETE /api/shares/{id}``.

A share is created from a stored run (``{"run_id": ...}``) or from a whole run document
(``{"document": {...}}`` or the document itself as the body). Its id is a prefix of the
content hash of the canonical document (NOTE [share ids] in ``storage/store.py``), so the
same document always gets the same link. The answer is 201 when this request created the
share, with a ``delete_token`` that only this answer ever shows, and 200 when it existed.

Shares are kept forever and served as stored; ``/s/{id}`` (``pages.py``) shows the same
document in the page without running anything.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from gradtrace.api.errors import ERROR_RESPONSES
from gradtrace.api.responses import blob_response
from gradtrace.api.services import Services, ServicesDep, client_key
from gradtrace.errors import Forbidden, InvalidRequest, NotFound, PayloadTooLarge
from gradtrace.schema import SCHEMA_VERSION, RunDocument, ShareCreated, ShareRequest
from gradtrace.schema.canonical import check_json
from gradtrace.storage.codec import (
    MAX_DEPTH,
    StoredBlob,
    current_json,
    decompress,
    encode,
    encode_validated,
    load,
)

router = APIRouter(prefix="/api/shares", tags=["shares"])
SHARE_CACHE = "public, max-age=3600"


@router.post("", response_model=ShareCreated, status_code=201,
             summary="Share a stored run (run_id) or a whole run document",
             responses={**ERROR_RESPONSES, 200: {"model": ShareCreated, "description": "Already shared"}})
async def create_share(body: ShareRequest | RunDocument, request: Request,
                       svc: ServicesDep) -> Response:
    svc.buckets.take(client_key(request))
    blob, run_id = await run_in_threadpool(_blob_from_body, body, svc)
    result = await run_in_threadpool(svc.store.create_share, blob, tensors_of_run=run_id)
    if result.created:
        svc.metrics.shares.inc()
    request.state.share_id = result.id
    out = ShareCreated(id=result.id, url=f"{svc.public_base(request)}/s/{result.id}",
                       delete_token=result.delete_token)
    return JSONResponse(out.model_dump(exclude_none=True), status_code=201 if result.created else 200,
                        headers={"Location": f"/api/shares/{result.id}"})


@router.get("/{share_id}", response_model=RunDocument, summary="The shared run document",
            responses={404: ERROR_RESPONSES[404]})
def get_share(request: Request, share_id: Annotated[str, Path(max_length=64)],
              svc: ServicesDep) -> Response:
    blob = find_share(svc, share_id)
    return blob_response(request, blob, headers={"Cache-Control": SHARE_CACHE, "ETag": f'"{share_id}"'})


@router.delete("/{share_id}", status_code=204, summary="Remove a share with its delete token",
               responses={404: ERROR_RESPONSES[404], 403: {"description": "Wrong delete token"}})
def delete_share(share_id: Annotated[str, Path(max_length=64)],
                 x_delete_token: Annotated[str, Header(min_length=1, max_length=200)],
                 svc: ServicesDep) -> Response:
    outcome = svc.store.delete_share(share_id, x_delete_token)
    if outcome is None:
        raise NotFound(f"no share with id {share_id!r}", detail={"share_id": share_id})
    if not outcome:
        raise Forbidden("the delete token does not match this share", detail={"share_id": share_id})
    return Response(status_code=204)


def find_share(svc: Services, share_id: str) -> StoredBlob:
    blob = svc.store.get_share(share_id)
    if blob is None:
        raise NotFound(f"no share with id {share_id!r}", detail={"share_id": share_id})
    return blob


def shared_json(svc: Services, share_id: str) -> bytes:
    """The stored document of a share as canonical JSON of the current schema, for the page
    (NOTE [stored bytes served as they are] in ``storage/codec.py``)."""
    return current_json(find_share(svc, share_id))


def _blob_from_body(body: ShareRequest | RunDocument, svc: Services) -> tuple[StoredBlob, str | None]:
    """The document to share, and the stored run it is (whose tensor file the share copies:
    NOTE [tensor files go with their owner] in ``storage/store.py``), if it is one."""
    if isinstance(body, RunDocument):  # validated by FastAPI already
        _check_size({"graph": {"nodes": body.graph.nodes}, "events": body.events}, svc)
        if (same := _stored_run_equal_to(svc, body.id, body)) is not None:
            return same, body.id
        try:
            dumped = body.model_dump(mode="json", by_alias=True)
        except ValueError as exc:  # pydantic refuses values nested beyond its own depth limit
            raise InvalidRequest(f"the document cannot be serialised: {exc}") from exc
        return _encode_checked(dumped, validated=True), _tensor_file_owner(svc, dumped)
    if (body.run_id is None) == (body.document is None):
        raise InvalidRequest("give exactly one of run_id or document (or send a run document as the body)",
                             detail={"fields": ["run_id", "document"]})
    if body.document is not None:
        _check_size(body.document, svc)
        if (same := _stored_run_equal_to(svc, body.document.get("id"), body.document)) is not None:
            return same, str(body.document["id"])
        return _encode_checked(body.document), _tensor_file_owner(svc, body.document)
    assert body.run_id is not None
    run_id = body.run_id[:64]
    blob = svc.require_kept_run(run_id, instead="share the document itself instead")
    if blob.schema_version == SCHEMA_VERSION:
        return blob, run_id  # stored runs are canonical already: share the very same bytes
    return _encode_checked(load(blob)), run_id


def _check_size(doc: dict[str, Any], svc: Services) -> None:
    """A shared document may be as large as a run may make it, not larger."""
    graph = doc.get("graph")
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    events = doc.get("events")
    counts = {"nodes": (len(nodes) if isinstance(nodes, list) else 0, svc.settings.max_nodes),
              "events": (len(events) if isinstance(events, list) else 0, svc.settings.max_events)}
    for what, (count, limit) in counts.items():
        if count > limit:
            raise PayloadTooLarge(f"the document has {count} {what}, over the limit of {limit}",
                                  detail={"field": what, "count": count, "limit": limit})


def _tensor_file_owner(svc: Services, doc: dict[str, Any]) -> str | None:
    """The kept run whose tensor file ``doc`` names, for a document that is no longer equal
    to it (a checked exercise adds its goals): its ``id`` names the run and the file's hash is
    the one that run stored, so the share keeps the numbers the document points to."""
    run_id, named = doc.get("id"), doc.get("tensors")
    if not isinstance(run_id, str) or not 0 < len(run_id) <= 64 or not isinstance(named, dict):
        return None
    source = svc.store.run_tensors(run_id, max_age_s=svc.run_retention_s)
    return run_id if source is not None and source.sha256 == named.get("sha256") else None


def _stored_run_equal_to(svc: Services, run_id: object,
                         doc: dict[str, Any] | RunDocument) -> StoredBlob | None:
    """The stored run that ``doc`` is a copy of, if any.

    NOTE [sharing a document the service answered]
        The page and the client share the document ``POST /api/runs`` gave them. When its
        ``id`` names a run that is still kept and the content is equal, the run's stored
        canonical bytes are shared as they are: one JSON parse and a comparison instead of
        validating, dumping and re-serialising megabytes, and the link is the same as sharing
        by ``run_id`` (JavaScript re-serialises ``1.0`` as ``1``; equal values, same link).
    """
    if not isinstance(run_id, str) or not 0 < len(run_id) <= 64:
        return None
    blob = svc.kept_run(run_id)
    if blob is None or blob.schema_version != SCHEMA_VERSION:
        return None
    stored = json.loads(decompress(blob.gz))
    same = RunDocument.model_validate(stored) == doc if isinstance(doc, RunDocument) else stored == doc
    return blob if same else None


def _encode_checked(doc: dict[str, Any], *, validated: bool = False) -> StoredBlob:
    try:
        if validated:  # encode() checks the depth itself
            check_json(doc, MAX_DEPTH)
            return encode_validated(doc).blob
        return encode(doc).blob
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid"}
        where = ".".join(str(p) for p in first.get("loc", ())) or "document"
        raise InvalidRequest(f"the document is not a valid run document: {where}: {first.get('msg')}",
                             detail=[{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg"))}
                                     for e in exc.errors()[:20]]) from exc
    except RecursionError as exc:
        raise InvalidRequest("the document is nested too deeply") from exc
    except (UnicodeEncodeError, ValueError) as exc:
        message = f"the document cannot be stored as JSON: {type(exc).__name__}: {exc}"
        raise InvalidRequest(message[:300]) from exc
