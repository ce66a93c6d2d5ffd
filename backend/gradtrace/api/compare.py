"""Compare two runs: ``POST /api/compare``, ``GET /api/compare/{a}..{b}`` and compare links.

A side is a stored run (``run_id``, while runs are kept), a share (``share_id``, forever) or a
whole run document. ``GET`` names both sides by id, a share id or a run id (shares first), as
the compare page ``/c/{a}..{b}`` does. ``POST /api/compare/links`` shares both runs and
answers the page's link, so a comparison outlives run retention: the link names two shares.

The answer is :class:`gradtrace.schema.compare.Comparison` (``analysis/compare/``);
refusals come from the error hierarchy: an unknown id 404, a document of another schema version
or not a run document 422, a run too large to compare 413.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from gradtrace.analysis.compare import check_document, compare_documents, read_for_compare
from gradtrace.analysis.kept import KeptTensors
from gradtrace.api.errors import ERROR_RESPONSES
from gradtrace.api.kept_files import kept_tensors
from gradtrace.api.services import Services, ServicesDep, client_key
from gradtrace.collector import gc_paused
from gradtrace.errors import InvalidRequest, NotFound
from gradtrace.schema import SCHEMA_VERSION, RunDocument
from gradtrace.schema.compare import MAX_ID, CompareLink, CompareRequest, CompareSide, Comparison
from gradtrace.storage.codec import StoredBlob, decompress, encode, load
from gradtrace.storage.normalize import normalize

router = APIRouter(prefix="/api/compare", tags=["compare"])


@router.post("", response_model=Comparison, summary="Compare two runs (stored, shared or given whole)",
             responses=ERROR_RESPONSES)
async def compare_runs(body: CompareRequest, request: Request, svc: ServicesDep) -> Response:
    svc.buckets.take(client_key(request))
    return _answer(await run_in_threadpool(compare_answer, svc, body.a, body.b))


@router.get("/{pair}", response_model=Comparison, summary="Compare two runs by id: {a}..{b}",
            responses=ERROR_RESPONSES)
async def compare_by_ids(pair: Annotated[str, Path(max_length=2 * MAX_ID + 2)], svc: ServicesDep) -> Response:
    a_id, b_id = split_pair(pair)
    return _answer(await run_in_threadpool(compare_answer, svc, CompareSide(share_id=a_id),
                                           CompareSide(share_id=b_id)))


@router.post("/links", response_model=CompareLink, status_code=201,
             summary="Share both runs and answer the compare page's link", responses=ERROR_RESPONSES)
async def create_link(body: CompareRequest, request: Request, svc: ServicesDep) -> Response:
    svc.buckets.take(client_key(request))
    ids = await run_in_threadpool(lambda: [_share(svc, side, name) for side, name in ((body.a, "a"), (body.b, "b"))])
    link = CompareLink(url=f"{svc.public_base(request)}/c/{ids[0]}..{ids[1]}", a=ids[0], b=ids[1])
    return JSONResponse(link.model_dump(), status_code=201)


def _answer(body: bytes) -> Response:
    return Response(body, media_type="application/json")


def split_pair(pair: str) -> tuple[str, str]:
    """``"{a}..{b}"`` → ``(a, b)``, or a 422 that says what a pair looks like."""
    a, sep, b = pair.partition("..")
    if not sep or not a or not b or ".." in b or len(a) > MAX_ID or len(b) > MAX_ID:
        raise InvalidRequest(f"{pair[:140]!r} is not two run or share ids joined by '..' (a..b)",
                             detail={"pair": pair[:140]})
    return a, b


def side_document(svc: Services, side: CompareSide, name: str) -> dict[str, Any]:
    """The run document a side names, upgraded to the current schema when it is stored."""
    _exactly_one(side, name)
    if side.document is None:
        return _parsed(svc, _stored(svc, side, name))
    limits = {"max_nodes": svc.settings.max_nodes, "max_events": svc.settings.max_events}
    check_document(name, side.document, **limits)
    try:
        RunDocument.model_validate(side.document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "document"
        raise InvalidRequest(f"run {name.upper()} is not a valid run document: {where}: {first.get('msg')}",
                             detail={"side": name, "loc": [str(p) for p in first.get("loc", ())]}) from exc
    return side.document


def _parsed(svc: Services, blob: StoredBlob) -> dict[str, Any]:
    """A stored document as the comparison reads it, parsed once (NOTE [parsed documents] in
    ``api/documents.py``); the comparison only reads it."""
    return svc.documents.get(blob, "compare", _load)


def _load(blob: StoredBlob) -> dict[str, Any]:
    """A stored document as a dict: of the current schema, only what the comparison reads
    (NOTE [what a comparison reads] in ``analysis/compare/read.py``); an older one whole, and
    upgraded (``codec.load``'s steps, parsed by orjson)."""
    raw = decompress(blob.gz)
    if blob.schema_version == SCHEMA_VERSION:
        try:
            return read_for_compare(raw)
        except ValueError as exc:
            raise InvalidRequest("the stored document is not a run document") from exc
    doc = orjson.loads(raw)
    if not isinstance(doc, dict):
        raise InvalidRequest("the stored document is not a JSON object")
    return normalize(doc)


def document_url(svc: Services, side: CompareSide, name: str) -> str:
    """Where the compare page fetches a stored side's document: its share, else its kept run
    (404 when neither is there). Both are served as stored (``api/responses.py``)."""
    _exactly_one(side, name)
    ident = side.share_id or side.run_id or ""
    if side.share_id is not None and svc.store.get_share(ident) is not None:
        return f"/api/shares/{quote(ident, safe='')}"
    _stored(svc, side, name)  # a kept run, or the 404 that names both kinds
    return f"/api/runs/{quote(ident, safe='')}"


def _exactly_one(side: CompareSide, name: str) -> None:
    given = [k for k in ("run_id", "share_id", "document") if getattr(side, k) is not None]
    if len(given) != 1:
        raise InvalidRequest(f"run {name.upper()}: give exactly one of run_id, share_id or document",
                             detail={"side": name, "fields": given})


def _stored(svc: Services, side: CompareSide, name: str) -> StoredBlob:
    """A share by ``share_id`` (falling back to a kept run of that id), or a kept run."""
    ident = side.share_id or side.run_id or ""
    blob = svc.store.get_share(ident) if side.share_id is not None else None
    if blob is None:
        blob = svc.kept_run(ident)
    if blob is None:
        kind = "share or run" if side.share_id is not None else "run"
        days = svc.settings.run_retention_days
        kept = f"runs are kept {days} days" if days else "runs are kept forever"
        raise NotFound(f"run {name.upper()}: no {kind} with id {ident!r} ({kept}, shares forever)",
                       detail={"side": name, "id": ident})
    return blob


def compare_answer(svc: Services, a: CompareSide, b: CompareSide) -> bytes:
    """The comparison of two sides as the answer's JSON. Two stored documents are known by
    their content hashes, and their answer is kept (NOTE [comparison caches])."""
    blobs = [_blob_of(svc, side, name) for side, name in ((a, "a"), (b, "b"))]
    hashes = [blob.content_hash if blob is not None else None for blob in blobs]
    key = (hashes[0], hashes[1]) if hashes[0] and hashes[1] else None

    def make() -> tuple[bytes, int]:
        with gc_paused():  # two parsed documents are ~1M acyclic objects: no collection walks them
            doc_a, doc_b = (side_document(svc, side, name) if blob is None else _parsed(svc, blob)
                            for side, name, blob in ((a, "a", blobs[0]), (b, "b", blobs[1])))
            ta, tb = (None if blob is None else _tensors(svc, side) for side, blob in ((a, blobs[0]), (b, blobs[1])))
            body = compare_documents(doc_a, doc_b, max_nodes=svc.settings.max_nodes,
                                     max_events=svc.settings.max_events, tensors_a=ta,
                                     tensors_b=tb).model_dump_json().encode()
        return body, len(body)
    return svc.compare_answers.get_or_make(key, make)


def _tensors(svc: Services, side: CompareSide) -> KeptTensors | None:
    """A stored side's tensor file, read by range (NOTE [exact deltas from the tensor files] in
    ``analysis/compare/exact.py``); its document's id covers the file's hash, so the answer
    kept by the documents' hashes stays right."""
    source = svc.store.share_tensors(side.share_id) if side.share_id is not None else None
    if source is None:
        source = svc.store.run_tensors(side.share_id or side.run_id or "", max_age_s=svc.run_retention_s)
    return kept_tensors(source)


def _blob_of(svc: Services, side: CompareSide, name: str) -> StoredBlob | None:
    """The stored document a side names, or None for a document given whole."""
    _exactly_one(side, name)
    return None if side.document is not None else _stored(svc, side, name)


def _share(svc: Services, side: CompareSide, name: str) -> str:
    """The share id of a side (sharing a kept run now); a document must be shared first."""
    _exactly_one(side, name)
    if side.document is not None:
        raise InvalidRequest(f"run {name.upper()}: a compare link names stored runs; share the document "
                             "first (POST /api/shares) and give its share_id", detail={"side": name})
    if side.share_id is not None and svc.store.get_share(side.share_id) is not None:
        return side.share_id
    blob = _stored(svc, side, name)
    if blob.schema_version != SCHEMA_VERSION:
        blob = encode(load(blob)).blob
    return svc.store.create_share(blob).id
