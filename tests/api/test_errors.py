"""One error model for every refusal, and never a 500, whatever arrives."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import httpx
import pytest

from api.helpers import CHAIN_RULE, assert_error
from conftest import Server
from storage.sample_docs import chain_document, variant


def test_invalid_fields_are_422_naming_the_field(api: httpx.Client) -> None:
    err = assert_error(api.post("/api/runs", json={"code": 12}), 422, "invalid_request")
    assert err["message"].startswith("code:") and err["detail"][0]["loc"] == ["body", "code"]
    assert_error(api.post("/api/runs", json={"code": "x", "device": "tpu"}), 422, "invalid_request")
    assert_error(api.post("/api/runs", json={"code": "x", "seed": -1}), 422, "invalid_request")
    assert_error(api.post("/api/runs", json={"code": "x", "surprise": 1}), 422, "invalid_request")
    assert_error(api.post("/api/runs", json={}), 422, "invalid_request")
    assert_error(api.post("/api/runs", json=["code"]), 422, "invalid_request")


def test_code_over_the_limit_is_413_with_sizes(api: httpx.Client, live_server: Server) -> None:
    limit = 64 * 1024
    err = assert_error(api.post("/api/runs", json={"code": "#" * (limit + 1)}), 413, "payload_too_large")
    assert err["detail"] == {"field": "code", "size_bytes": limit + 1, "limit_bytes": limit}
    multibyte = "é" * (limit // 2 + 1)  # under the limit in characters, over it in UTF-8 bytes
    assert_error(api.post("/api/runs", json={"code": multibyte}), 413, "payload_too_large")


def test_a_body_over_the_limit_is_413_before_it_is_read(api: httpx.Client) -> None:
    big = b'{"code": "' + b"x" * (16 * 1024 * 1024) + b'"}'
    assert_error(api.post("/api/runs", content=big, headers={"content-type": "application/json"}),
                 413, "payload_too_large")


def test_a_chunked_body_over_the_limit_is_413_while_reading(api: httpx.Client) -> None:
    def chunks():
        yield b'{"document": "'
        for _ in range(17):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    r = api.post("/api/shares", content=chunks(), headers={"content-type": "application/json"})
    assert_error(r, 413, "payload_too_large")


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_body_that_is_not_json_is_415(api: httpx.Client, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    r = api.post("/api/runs", content=json.dumps({"code": "x"}).encode(), headers=headers)
    if content_type is None:  # httpx sends no content-type for raw bytes
        assert "content-type" not in r.request.headers
    assert_error(r, 415, "unsupported_media_type")


@pytest.mark.parametrize("body", [
    b"{", b'{"code": "x"', b"\x00\x01", b'{"code": "\xff\xfe"}', b"[" * 100_000, b'"just a string"',
    b"null", b'{"code": "x"}{"code": "y"}', b"\xef\xbb\xbf{}",
], ids=["open-brace", "truncated", "binary", "invalid-utf8", "deep-nesting", "string", "null", "two-docs",
        "bom"])
@pytest.mark.parametrize("path", ["/api/runs", "/api/shares"])
def test_malformed_bodies_are_4xx_never_500(api: httpx.Client, path: str, body: bytes) -> None:
    r = api.post(path, content=body, headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500, r.text
    assert_error(r, r.status_code, r.json()["error"]["code"])


def test_a_shared_document_larger_than_any_run_can_make_is_413(tuned_server: Server) -> None:
    with tuned_server.client() as c:  # GRADTRACE_MAX_NODES=50
        err = assert_error(c.post("/api/shares", json={"document": chain_document(60)}), 413,
                           "payload_too_large")
        assert err["detail"] == {"field": "nodes", "count": 63, "limit": 50}
        assert_error(c.post("/api/shares", json=chain_document(60)), 413, "payload_too_large")
        assert c.post("/api/shares", json=variant(chain_document(40), "max nodes")).status_code == 201


def test_nul_characters_in_code_are_a_422(api: httpx.Client) -> None:
    err = assert_error(api.post("/api/runs", json={"code": "x = 1\x00"}), 422, "invalid_request")
    assert "NUL" in err["message"]


def test_lone_surrogates_in_code_are_a_422(api: httpx.Client) -> None:
    r = api.post("/api/runs", content=b'{"code": "x = \\ud800"}',
                 headers={"content-type": "application/json"})
    assert_error(r, 422, "invalid_request")


@pytest.mark.parametrize("document", [
    {"status": "ok"}, {"id": "x", "status": "exploded"}, {"id": "x", "status": "ok", "graph": []},
    {"id": "x", "status": "ok", "graph": {"nodes": [{"id": 1, "kind": "planet"}]}},
    {"id": "x", "status": "ok", "events": "many"}, {"run_id": 5}, {"run_id": "a", "document": {}},
])
def test_wrong_documents_sent_to_shares_are_4xx(api: httpx.Client, document: dict) -> None:
    r = api.post("/api/shares", json=document)
    assert r.status_code in (404, 422), r.text
    assert_error(r, r.status_code, r.json()["error"]["code"])


@pytest.mark.parametrize("depth", [100, 900, 5000])
@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "in-document-field"])
def test_deeply_nested_values_inside_a_document_are_refused(api: httpx.Client, depth: int,
                                                            wrapped: bool) -> None:
    head = json.dumps(chain_document(2))[:-1]
    body = head + ', "extra": ' + "[" * depth + "1" + "]" * depth + "}"
    if wrapped:
        body = '{"document": ' + body + "}"
    r = api.post("/api/shares", content=body.encode(), headers={"content-type": "application/json"})
    assert_error(r, r.status_code, r.json()["error"]["code"])
    assert 400 <= r.status_code < 500


def test_unknown_routes_are_404_and_wrong_methods_405_in_the_error_shape(api: httpx.Client) -> None:
    assert_error(api.get("/api/nothing-here"), 404, "not_found")
    assert_error(api.get("/api/shares/a/b"), 404, "not_found")
    r = api.put("/api/runs", json={"code": "x"})
    assert_error(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "POST"


def test_a_browser_gets_an_html_page_for_an_unknown_share(api: httpx.Client) -> None:
    r = api.get("/s/doesnotexist", headers={"accept": "text/html"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "doesnotexist" in r.text
    # Styled like the page and saying what happened, with the way back (api/error_page.py).
    assert "<style>" in r.text and "This share link leads nowhere" in r.text and 'href="/"' in r.text
    assert "http://" not in r.text and "https://" not in r.text  # offline: nothing from elsewhere
    # Its one style is admitted by its hash in its own policy, with no 'unsafe-inline' (NOTE
    # [styles under the policy] in api/security.py); API answers keep the plain policy.
    style = re.search(r"<style>(.*?)</style>", r.text, re.S)
    assert style is not None
    digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
    policy = r.headers["content-security-policy"]
    assert f"style-src 'self' 'sha256-{digest}';" in policy and "unsafe" not in policy, policy
    assert "sha256" not in api.get("/s/doesnotexist").headers["content-security-policy"]
    assert_error(api.get("/s/doesnotexist"), 404, "not_found")
    gone = api.get("/r/doesnotexist", headers={"accept": "text/html"})
    assert gone.status_code == 404 and "This run is no longer here" in gone.text


def test_the_rate_limit_is_per_client_with_retry_after(start_server) -> None:
    with start_server({"GRADTRACE_RATE_PER_MINUTE": "1", "GRADTRACE_RATE_BURST": "2"}) as srv:
        doc = chain_document(1)
        with srv.client() as a:
            first = a.post("/api/shares", json=doc)
            assert first.status_code == 201
            assert a.post("/api/runs", json={"code": CHAIN_RULE}).status_code == 200
            err = assert_error(a.post("/api/shares", json=doc), 429, "rate_limited")
            assert "per minute" in err["message"]
            assert 1 <= int(a.post("/api/runs", json={"code": "x"}).headers["retry-after"]) <= 60
            assert a.get(f"/api/shares/{first.json()['id']}").status_code == 200, "reads are not limited"
        other = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(base_url=srv.url, transport=other, timeout=30) as b:
            assert b.post("/api/shares", json=doc).status_code == 200, "another client has its own bucket"
