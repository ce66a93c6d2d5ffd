"""The stored form: canonical JSON, one serialisation, gzip, and the content id."""

from __future__ import annotations

import gzip
import json

import pytest
from pydantic import ValidationError

from gradtrace.schema import RunDocument, canonical_json, document_id
from gradtrace.storage.codec import canonical_with_id, current_bytes, encode, encode_validated, load
from storage.sample_docs import chain_document


@pytest.mark.parametrize("doc", [
    chain_document(1),
    chain_document(40, seed=3, code="print('ünïcödé', '</script>', '\\u2028')\n"),
    {"status": "error", "id": "x", "error": {"type": "RuntimeError", "message": "é", "line": 2},
     "extra_field": {"b": [1, 2.5, "nan"], "a": None}},
])
def test_one_serialisation_is_byte_identical_to_canonical_json(doc: dict) -> None:
    dumped = RunDocument.model_validate(doc).model_dump(mode="json", by_alias=True)
    doc_id, raw = canonical_with_id(dumped)
    assert doc_id == document_id(dumped)
    assert raw == canonical_json({**dumped, "id": doc_id})


def test_encoding_is_deterministic_down_to_the_gzip_bytes() -> None:
    a, b = encode(chain_document(20)), encode(chain_document(20))
    assert a.raw == b.raw and a.blob.gz == b.blob.gz and a.doc_id == b.doc_id
    assert gzip.decompress(a.blob.gz) == a.raw
    assert a.blob.size == len(a.raw)


def test_unknown_fields_are_kept_so_newer_documents_survive() -> None:
    doc = chain_document(2)
    doc["from_the_future"] = {"x": 1}
    assert load(encode(doc).blob)["from_the_future"] == {"x": 1}


def test_encoding_refuses_a_document_that_is_not_a_run_document() -> None:
    with pytest.raises(ValidationError):
        encode({"status": "exploded", "id": "x"})


def test_runner_output_is_encoded_without_changing_its_id() -> None:
    dumped = RunDocument.model_validate(chain_document(5)).model_dump(mode="json", by_alias=True)
    dumped["id"] = document_id(dumped)
    enc = encode_validated(dumped)
    assert enc.doc_id == dumped["id"] and json.loads(enc.raw) == dumped


def test_current_documents_are_served_as_stored_gzip() -> None:
    enc = encode(chain_document(3))
    data, is_gzip = current_bytes(enc.blob)
    assert is_gzip and data is enc.blob.gz


def test_a_current_document_is_served_as_its_stored_bytes_and_an_other_version_is_written_again() -> None:
    """NOTE [stored bytes served as they are]: the page gets the stored JSON of a current
    document as it is; a document of another version goes through the normalizer and writer."""
    from dataclasses import replace

    from gradtrace.schema import SCHEMA_VERSION
    from gradtrace.storage.codec import current_json

    enc = encode(chain_document(3, code="print('</script> \u2028 é')\n"))
    assert current_json(enc.blob) == enc.raw
    # the stored bytes of a version this code does not write: parsed and written again, so
    # different stored spellings come out canonical
    loose = json.dumps(json.loads(enc.raw), indent=1).encode()
    other = replace(enc.blob, schema_version=SCHEMA_VERSION + 1, gz=gzip.compress(loose))
    assert current_json(other) == canonical_json(json.loads(enc.raw))
    assert current_json(other) != loose
