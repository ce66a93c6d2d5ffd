"""``gradtrace.compare(a, b)``: recordings, documents, JSON and ids on a service give the same
comparison, with a notebook repr."""

from __future__ import annotations

import json

import httpx
import pytest
import torch

import gradtrace
from conftest import Server
from gradtrace.analysis.compare import compare_documents
from gradtrace.analysis.kept import KeptTensors
from gradtrace.compare_runs import document_of
from gradtrace.schema.compare import Comparison


def _recording(seed: int) -> object:
    torch.manual_seed(seed)
    with gradtrace.record() as rec:
        w = torch.randn(3, requires_grad=True)
        loss = (w.tanh() * 2).sum()
        loss.backward()
    return rec


def test_recordings_documents_and_json_compare_alike() -> None:
    a, b = _recording(0), _recording(1)
    c = gradtrace.compare(a, b)
    assert isinstance(c, Comparison) and c.same_structure and c.first_divergence is not None
    w = next(p for p in c.pairs if p.name == "w")
    assert w.grad is not None and w.grad.beyond_tolerance
    doc_a = a.document()  # type: ignore[attr-defined]
    doc_b = b.document()  # type: ignore[attr-defined]
    assert gradtrace.compare(doc_a, doc_b) == c  # documents in this process: their tensor files too
    # a dict or JSON carries no tensor file: the documents' stats alone, the same first
    # divergence, in words that give bounds ("at least") where the files gave exact numbers
    as_dict = gradtrace.compare(doc_a.model_dump(mode="json", by_alias=True),
                                doc_b.model_dump(mode="json", by_alias=True))
    as_json = gradtrace.compare(doc_a.model_dump_json(by_alias=True), doc_b.model_dump_json(by_alias=True).encode())
    assert as_dict == as_json
    assert as_dict.first_divergence is not None and c.first_divergence is not None
    exclude = {"sentence", "delta"}
    assert as_dict.first_divergence.model_dump(exclude=exclude) == c.first_divergence.model_dump(exclude=exclude)
    assert gradtrace.compare(a, a).first_divergence is None
    shown = c._repr_html_()
    assert "First divergence" in shown and "Same graph" in shown and str(c) == c.summary


def test_ids_need_a_service_and_other_things_are_refused() -> None:
    with pytest.raises(ValueError, match="client="):
        gradtrace.compare("abc", "def")
    with pytest.raises(TypeError, match="not int"):
        gradtrace.compare(1, 2)


def test_ids_on_a_service_compare_there(live_server: Server) -> None:
    code = "w = torch.randn(3, requires_grad=True)\n(w.tanh() * 2).sum().backward()\n"
    with gradtrace.Client(live_server.url) as client:
        a, b = client.run(code, seed=0), client.run(code, seed=5)
        remote = gradtrace.compare(a.id, b.id, client=client)
        # the service reads both runs' tensor files: the same analysis, given the same files
        files = [KeptTensors.from_bytes(httpx.get(f"{live_server.url}/api/runs/{run.id}/tensors.safetensors").content)
                 for run in (a, b)]
        local = compare_documents(document_of(a), document_of(b), tensors_a=files[0], tensors_b=files[1])
        assert remote.summary == local.summary and remote.pairs == local.pairs
        # without the files only the documents' stats are read: the same first divergence, in
        # words that give bounds ("at least") where the files gave exact numbers
        plain = gradtrace.compare(a, b).first_divergence
        assert plain is not None and remote.first_divergence is not None
        exclude = {"sentence", "delta"}
        assert plain.model_dump(exclude=exclude) == remote.first_divergence.model_dump(exclude=exclude)
        url = client.share(a)
        assert gradtrace.compare(url, b.id, client=client).summary == local.summary
        mixed = client.compare(json.loads(a.model_dump_json(by_alias=True)), b.id)  # A posted: no file
        assert mixed.first_divergence is not None
        assert mixed.first_divergence.model_dump(exclude=exclude) == plain.model_dump(exclude=exclude)


def test_two_recordings_diverge_first_at_the_op_that_read_the_changed_weight() -> None:
    """Another learning rate: iteration 1 is the same, and the first op whose numbers differ is
    iteration 2's convolution, which reads the weight the first step moved. Without the tensor
    files (documents as dicts) the convolution's output has no numbers in the document, and the
    first difference its stats can show is later."""
    from analysis.test_explain_numbers import SMALL_CNN

    runs = []
    for lr in ("lr=0.1", "lr=0.12"):
        torch.manual_seed(0)
        with gradtrace.record() as rec:
            exec(compile(SMALL_CNN.replace("lr=0.1", lr), "<snippet>", "exec"), {"__name__": "__main__"})
        runs.append(rec)
    first = gradtrace.compare(*runs).first_divergence
    assert first is not None and first.phase == "forward" and first.name == "ConvolutionBackward0", first
    assert first.delta is not None and first.delta.exact
    docs = [r.document() for r in runs]  # type: ignore[attr-defined]
    conv = [n.id for n in docs[0].graph.nodes if n.name == "ConvolutionBackward0"]
    assert len(conv) == 6 and first.a == conv[2]  # iteration 2's first
    a, b = (docs[k].tensor(f"{conv[2]}.out0") for k in (0, 1))
    assert not torch.equal(a, b)
    for c in conv[:2]:  # iteration 1's: the same
        assert torch.equal(*(docs[k].tensor(f"{c}.out0") for k in (0, 1)))
