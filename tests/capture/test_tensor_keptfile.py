"""The core's ``KeptFile`` (NOTE [the kept file in one place] in ``cxx/keptfile.h``) chooses,
writes and indexes the tensor file as the Python twin does (``tensorfile.build`` over
``Candidate`` rows): the same document and the same bytes, past the budget too, where the
class order and the path to the first non-finite value decide what is left out."""

from __future__ import annotations

import pytest
import torch

import gradtrace
from capture.test_tensor_bulk import GRAD_NAN, GRU
from gradtrace.analysis.dynamics.read import file_reader
from gradtrace.capture import native
from rundoc import run_captured

FORWARD_NAN = """import torch
w = torch.nn.Parameter(torch.randn(6, 6))
x = torch.randn(5, 6)
h = torch.tanh(x @ w)
y = (h - 2).log()     # a forward value that is not finite, its node's inputs before it
z = (y.nan_to_num() * h).sum()
z.backward()
"""

pytestmark = pytest.mark.skipif(native.core is None, reason="the C++ core is not built on this machine")


@pytest.mark.parametrize(("code", "budget"), [(GRAD_NAN, 1), (GRAD_NAN, 300), (GRAD_NAN, 1000), (GRU, 1),
                                              (GRU, 1000), (GRU, 30000), (FORWARD_NAN, 2000), (FORWARD_NAN, 2500)],
                         ids=["grad-nan-1", "grad-nan-300", "grad-nan-1000", "gru-1", "gru-1000", "gru-30000",
                              "forward-nan-2000", "forward-nan-2500"])
def test_both_kernel_sets_leave_out_the_same_tensors_past_the_budget(code: str, budget: int) -> None:
    core = run_captured(code, native=True, tensor_budget=budget, seed=0)
    twin = run_captured(code, native=False, tensor_budget=budget, seed=0)
    assert core.tensors is not None and twin.tensors is not None
    assert core.fields["tensors"] == twin.fields["tensors"]
    assert core.fields["tensors"]["left_out_count"] > 0  # the budget chose
    assert core.tensors == twin.tensors
    assert core.events == twin.events
    assert core.graph == twin.graph
    if budget >= 2000:  # outputs held while recording: spliced into the function nodes
        assert b'"output":[' in core.graph


def test_the_index_in_the_core_reads_as_the_header_says() -> None:
    """The index the core keeps (a mapping read by key, no dict of tuples) equals the one parsed
    from the file's header, key by key, and the analysis' reader reads the same arrays by it."""
    torch.manual_seed(0)
    with gradtrace.record(tensor_budget=64 << 20, native=True) as rec:
        cell = torch.nn.GRUCell(4, 8)
        h = torch.zeros(1, 8)
        for _ in range(4):
            h = cell(torch.randn(1, 4), h)
        h.pow(2).sum().backward()
    rec.document()
    tf = rec.recorder.tensor_file
    assert tf is not None
    index = tf.tensors.index
    assert not isinstance(index, dict)  # the core's
    read_parsed = file_reader(tf.data)
    read_kept = file_reader(tf.data, index)
    assert read_parsed is not None and read_kept is not None
    from gradtrace.capture.tensorfile import file_tensors

    parsed = file_tensors(tf.data).index
    assert len(index) == len(parsed) == tf.info["count"] > 0
    assert list(index) == list(parsed)  # file order
    for key, entry in parsed.items():
        assert key in index and index[key] == entry == index.get(key)
        assert (read_kept(key) == read_parsed(key)).all()
        assert torch.equal(tf.tensors[key], torch.frombuffer(bytearray(read_parsed(key).tobytes()),
                                                             dtype=tf.tensors[key].dtype).view(entry[1]))
    assert "n0.nothing" not in index and index.get("n0.nothing") is None and 3 not in index
    with pytest.raises(KeyError):
        index["n0.nothing"]
