"""Reading only what a comparison reads (``analysis/compare/read.py``) changes no answer:
every lesson against another seed of itself, and runs with an inserted line, a fixed custom
backward and checkpointing switched off, compared from the slim read and from the whole
stored document."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from conftest import LESSONS, lesson_code
from gradcheck.cube import IN_A_CHAIN, RIGHT_FACTOR, WRONG_FACTOR, cube
from gradtrace.analysis.compare import compare_documents, read_for_compare
from gradtrace.analysis.compare import read as slim_read
from gradtrace.schema import Event, Graph, Node, RunDocument, SavedTensor
from gradtrace.storage.codec import encode
from rundoc import run_doc

MLP = """import torch
from torch import nn
l1, l2 = nn.Linear(4, 8), nn.Linear(8, 1)
x = torch.randn(5, 4)
h = torch.relu(l1(x))
out = l2(h).sum()
out.backward()
"""
CUSTOM = cube("2 * ", IN_A_CHAIN)
CHECKPOINT = lesson_code("12_checkpoint_memory")


def _stored(code: str, seed: int) -> bytes:
    return encode(run_doc(code, seed=seed)).raw


def _both_ways(raw_a: bytes, raw_b: bytes) -> tuple[str, str]:
    whole = compare_documents(orjson.loads(raw_a), orjson.loads(raw_b)).model_dump_json()
    slim = compare_documents(read_for_compare(raw_a), read_for_compare(raw_b)).model_dump_json()
    return whole, slim


@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.stem)
def test_every_lesson_against_another_seed_compares_the_same_from_the_slim_read(item: Any) -> None:
    whole, slim = _both_ways(_stored(item.code, 0), _stored(item.code, 1))
    assert slim == whole


@pytest.mark.parametrize(("code_a", "code_b"), [
    (MLP, MLP.replace("h = torch.relu(l1(x))\n", "h = torch.relu(l1(x))\nh = h.tanh()\n")),
    (CUSTOM, CUSTOM.replace(WRONG_FACTOR, RIGHT_FACTOR)),
    (CHECKPOINT, CHECKPOINT.replace("checkpoint(block, h, use_reentrant=False)", "block(h)")),
], ids=["inserted-line", "fixed-backward", "checkpointing-off"])
def test_edited_runs_compare_the_same_from_the_slim_read(code_a: str, code_b: str) -> None:
    raw_a, raw_b = _stored(code_a, 0), _stored(code_b, 0)
    whole, slim = _both_ways(raw_a, raw_b)
    assert slim == whole
    c = orjson.loads(slim)
    assert c["only_b"] or c["first_divergence"] or c["memory_a"]["peak"] != c["memory_b"]["peak"]


def test_the_slim_read_keeps_none_of_what_the_comparison_skips() -> None:
    raw = _stored(CHECKPOINT, 0)
    whole, slim = orjson.loads(raw), read_for_compare(raw)
    node = next(n for n in slim["graph"]["nodes"] if n.get("saved"))
    assert "outputs" not in node and "grad_history" not in node and "dtype" not in node
    assert set(node["saved"][0]) <= {"bytes", "is_parameter", "freed_after_pass"}
    assert "line" not in slim["events"][0] and "stdout" not in slim
    assert len(slim["graph"]["nodes"]) == len(whole["graph"]["nodes"])


def test_what_is_not_a_run_document_is_a_value_error() -> None:
    for raw in (b"[1, 2]", b'{"graph": {"nodes": 3}}', b"{not json"):
        with pytest.raises(ValueError, match="not a run document"):
            read_for_compare(raw)


@pytest.mark.parametrize(("struct", "model"), [
    (slim_read._Document, RunDocument), (slim_read._Graph, Graph), (slim_read._Node, Node),
    (slim_read._Event, Event), (slim_read._Saved, SavedTensor)])
def test_the_slim_read_names_only_fields_the_schema_has(struct: Any, model: Any) -> None:
    """NOTE [a subset named by hand] in analysis/compare/read.py: every name is the model's."""
    fields = {f.alias or name for name, f in model.model_fields.items()}
    named = set(struct.__annotations__)
    assert named and named <= fields, sorted(named - fields)
