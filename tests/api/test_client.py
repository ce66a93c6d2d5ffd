"""The notebook client (``gradtrace.Client``) against the real service."""

from __future__ import annotations

import re

import httpx
import pytest

import gradtrace
from api.helpers import CHAIN_RULE
from conftest import Server
from gradtrace.schema import RunDocument


@pytest.fixture()
def client(live_server: Server):
    with gradtrace.Client(live_server.url) as c:
        yield c


def test_run_returns_the_pydantic_document_the_api_answers(client: gradtrace.Client,
                                                           api: httpx.Client) -> None:
    doc = client.run(CHAIN_RULE, device="cpu", seed=0)
    assert isinstance(doc, RunDocument) and doc.status == "ok"
    raw = api.post("/api/runs", json={"code": CHAIN_RULE}).json()
    assert doc.model_dump(mode="json", by_alias=True) == raw
    assert client.get_run(doc.id).id == doc.id


def test_share_takes_a_document_or_a_run_id_and_gives_the_same_url(client: gradtrace.Client) -> None:
    doc = client.run(CHAIN_RULE)
    by_doc = client.share(doc)
    by_id = client.share(doc.id)
    assert by_doc == by_id and re.search(r"/s/[0-9a-f]{8,}$", by_doc)
    assert client.get_share(by_doc) == client.get_share(by_doc.rsplit("/", 1)[-1])
    assert client.get_share(by_doc).model_dump() == doc.model_dump()


def test_an_edited_document_is_shared_as_edited_not_as_the_stored_run(client: gradtrace.Client) -> None:
    doc = client.run(CHAIN_RULE)
    edited = doc.model_copy(update={"stdout": "a note for my class\n"})
    url = client.share(edited)
    assert url != client.share(doc)
    assert client.get_share(url).stdout == "a note for my class\n"


def test_refusals_raise_with_the_api_error(client: gradtrace.Client) -> None:
    with pytest.raises(gradtrace.GradtraceAPIError) as info:
        client.get_share("0000000000")
    assert info.value.status == 404 and info.value.code == "not_found"
    assert "0000000000" in info.value.message and info.value.detail == {"share_id": "0000000000"}
    with pytest.raises(gradtrace.GradtraceAPIError) as too_big:
        client.run("#" * (65 * 1024))
    assert too_big.value.status == 413 and too_big.value.detail["limit_bytes"] == 64 * 1024
    with pytest.raises(TypeError):
        client.share(42)  # type: ignore[arg-type]


def test_an_unreachable_service_is_a_clear_error() -> None:
    from conftest import free_port

    with gradtrace.Client(f"http://127.0.0.1:{free_port()}", timeout=2) as c, \
            pytest.raises(gradtrace.GradtraceAPIError) as info:
        c.run("x = 1")
    assert info.value.code == "unreachable" and "cannot reach" in info.value.message


def test_a_failing_snippet_is_a_document_not_an_exception(client: gradtrace.Client) -> None:
    doc = client.run("x = torch.ones(2)\nraise KeyError('nope')\n")
    assert doc.status == "error" and doc.error is not None and doc.error.type == "KeyError"
    assert doc.error.line == 2


def test_a_document_shows_itself_in_a_notebook(client: gradtrace.Client) -> None:
    doc = client.run("w = torch.tensor([1.0, 2.0], requires_grad=True)\n(w * w).sum().backward()\n")
    before = doc._repr_html_()
    assert f'href="{client.base_url}/r/{doc.id}"' in before and "status <code>ok</code>" in before
    assert "<svg" in before and ">MulBackward0<" in before, "a picture of the graph, not only a table"
    page = httpx.get(f"{client.base_url}/r/{doc.id}")
    assert page.status_code == 200 and f"run {doc.id}" in page.text and '"mode":"share"' in page.text.replace(" ", "")
    url = client.share(doc)
    html = doc._repr_html_()
    assert f'href="{url}"' in html
    assert "<td>w</td>" in html and "[2.0, 4.0]" in html, "the leaf and its grad are listed"
    failing = client.run("y = 1 / 0\n")
    assert "ZeroDivisionError" in failing._repr_html_()
