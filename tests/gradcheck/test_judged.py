"""The check's verdicts on programs it had got wrong: each next to torch's answer (its
``gradcheck``, the real ``.grad``, ``detect_anomaly``), with near-misses that must stay quiet."""

from __future__ import annotations

import random
import re
import warnings
from typing import Any

import pytest
import torch

from gradcheck.gradcheck_fixtures import WrongCube
from gradtrace.gradcheck import TargetError, TargetSpec, check_snippet, gradcheck


def f64(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def torch_says(fn: Any, inputs: tuple[Any, ...]) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bool(torch.autograd.gradcheck(fn, inputs, fast_mode=False, raise_exception=False))


def codes(result: Any) -> list[str]:
    return [r.code for r in result.reasons]


# -- the canonical call --------------------------------------------------------------------

def test_fn_apply_with_a_vector_output_fails_on_the_function_as_torch_does() -> None:
    x = f64(1.0, 2.0)
    ours = gradcheck(WrongCube.apply, (x,))
    assert not torch_says(WrongCube.apply, (x,))
    assert ours.verdict == "fail", ours.summary()
    assert "cut" not in codes(ours)  # the Function's forward runs without grad: that is no cut
    assert ours.suspect is not None and ours.suspect.name == "WrongCubeBackward" and ours.suspect.custom


def test_real_cuts_in_the_users_code_still_make_a_mismatch_inconclusive() -> None:
    for cut in (lambda t: t * t.detach(), lambda t: t * t.data):
        ours = gradcheck(lambda t, c=cut: c(t).sum(), (f64(1.5, 2.5),))
        assert ours.verdict == "inconclusive" and "cut" in codes(ours), ours.summary()


def test_the_probe_records_exactly_the_users_cuts() -> None:
    from gradtrace.gradcheck.probe import Probe
    from gradtrace.gradcheck.programs import CallableProgram

    def program(t: torch.Tensor) -> torch.Tensor:
        a = t.detach() + t.data + t.long() + t.to(torch.int32)
        with torch.no_grad():
            b = t * 2
        return (t * a + b + t.mT[0]).sum() + torch.nn.functional.layer_norm(t, (2,)).sum()

    probe = Probe(upcast=False)
    CallableProgram(program, [f64(1.5, 2.5).reshape(1, 2)], seed=0).execute(probe)
    assert sorted(probe.cuts) == sorted([".data", ".long()", ".to(int32)", "detach()", "mul under no_grad"])


def test_torchs_own_no_grad_inside_library_code_is_no_cut() -> None:
    """nn.functional.batch_norm updates running stats inside torch; layer_norm is smooth."""
    ours = gradcheck(lambda t: torch.nn.functional.layer_norm(t, (3,)).pow(2).sum(), (f64(0.3, -1.0, 2.0),))
    assert ours.verdict == "pass" and "cut" not in codes(ours), ours.summary()


# -- random state ---------------------------------------------------------------------------

def test_randomness_is_pinned_and_said_and_the_callers_state_is_put_back() -> None:
    torch.manual_seed(1234)
    random.seed(99)
    expected_torch, expected_py = torch.rand(3), random.random()
    torch.manual_seed(1234)
    random.seed(99)
    ours = gradcheck(lambda t: torch.nn.functional.dropout(t, 0.5).sum(), (f64(1.0, 2.0, 3.0),))
    assert torch.equal(torch.rand(3), expected_torch) and random.random() == expected_py
    assert ours.verdict == "pass" and "seeded" in codes(ours), ours.summary()
    # a function without randomness says nothing about it
    assert "seeded" not in codes(gradcheck(lambda t: (t * t).sum(), (f64(1.0),)))


def test_unpinned_randomness_is_inconclusive_and_says_why() -> None:
    ours = gradcheck(lambda t: torch.nn.functional.dropout(t, 0.5).sum(), (f64(*range(1, 9)),), seed=None)
    assert ours.verdict == "inconclusive" and codes(ours)[-1] == "nondeterministic_forward", ours.summary()
    assert "draws random numbers" in ours.reasons[-1].message


# -- kinks ----------------------------------------------------------------------------------

def test_a_kink_that_passes_by_luck_is_found_by_its_one_sided_differences() -> None:
    fn = lambda t: (t - 1).abs().sum()  # noqa: E731
    assert torch_says(fn, (f64(1.0, 2.0),))  # torch passes it: the subgradient 0 is the central difference
    ours = gradcheck(fn, (f64(1.0, 2.0),))
    assert ours.verdict == "inconclusive" and ours.kinks == 1, ours.summary()
    kink = next(r for r in ours.reasons if r.code == "kink")
    assert kink.node == "AbsBackward0" and "only by luck" in kink.message


@pytest.mark.parametrize("fn, at", [
    (lambda t: t.exp().sum(), (5.0, 8.0)),            # steep and curved
    (lambda t: (t ** 4).sum(), (30.0, -20.0)),          # large second derivative
    (lambda t: (1e6 * t.sin()).sum(), (0.3, 1.1)),      # large values: rounding in one-sided differences
    (lambda t: torch.relu(t).sum(), (0.5, -0.5)),       # kink-prone op away from its kink
], ids=["exp", "quartic", "large-values", "relu-away"])
def test_smooth_functions_raise_no_kink(fn: Any, at: tuple[float, ...]) -> None:
    ours = gradcheck(fn, (f64(*at),))
    assert ours.verdict == "pass" and ours.kinks == 0, ours.summary()
    assert torch_says(fn, (f64(*at),))


# -- non-finite gradients -------------------------------------------------------------------

_ANOMALY = re.compile(r"Function '(\w+)' returned nan values")


def anomaly_names(fn: Any, inputs: tuple[torch.Tensor, ...]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as info, torch.autograd.detect_anomaly():
            fn(*inputs).backward()
    m = _ANOMALY.search(str(info.value))
    assert m, str(info.value)
    return m[1]


NAN_CASES = [
    ("where", lambda x: torch.where(x > 0, x.sqrt(), 0.0).sum(), lambda: (f64(-1.0, 0.0, 4.0),), "torch.where"),
    ("masked_fill", lambda p: (p * torch.log(p).masked_fill(p == 0, 0.0)).sum(), lambda: (f64(0.0, 0.5, 0.25),),
     "masked_fill"),
    ("divide-then-mask", lambda x, d: (x / d)[d != 0].sum(), lambda: (f64(1.0, 2.0), f64(0.0, 1.0)),
     "(x / div)[div != 0]"),
    ("norm-at-zero", lambda w: torch.sqrt((w ** 2).sum()), lambda: (f64(0.0, 0.0, 0.0),), "norm"),
    ("acos-at-one", lambda t: (torch.acos(t) * torch.tensor([0.0, 1.0], dtype=torch.float64)).sum(),
     lambda: (f64(1.0, 0.5),), "acos"),
]


@pytest.mark.parametrize("case", NAN_CASES, ids=[c[0] for c in NAN_CASES])
def test_a_nan_gradient_is_said_with_its_node_and_trap_never_as_a_wrong_backward(case: Any) -> None:
    _name, fn, make, trap_words = case
    ours = gradcheck(fn, make())
    assert ours.verdict != "fail" and ours.suspect is None, ours.summary()
    assert "nondeterministic_backward" not in codes(ours), ours.summary()  # NaN != NaN is not that
    reason = next(r for r in ours.reasons if r.code == "nonfinite_gradient")
    assert reason.node == anomaly_names(fn, make())
    assert trap_words in reason.message and "Fix:" in reason.message, reason.message


def test_log_of_a_clamped_zero_names_log_and_its_fix() -> None:
    ours = gradcheck(lambda t: torch.log(t.clamp(min=0)).sum() * 0 + torch.log(t.clamp(min=0))[1], (f64(0.0, 2.0),))
    reason = next(r for r in ours.reasons if r.code == "nonfinite_gradient")
    assert reason.node == "LogBackward0" and "clamp_min(1e-12)" in reason.message, reason.message


def test_a_nan_next_to_a_wrong_backward_still_fails_on_the_finite_elements() -> None:
    fn = lambda x: torch.where(x > 0, x.sqrt(), 0.0).sum() + WrongCube.apply(x).sum()  # noqa: E731
    ours = gradcheck(fn, (f64(-1.0, 2.0),))
    assert ours.verdict == "fail" and ours.suspect is not None and ours.suspect.name == "WrongCubeBackward"
    assert "nonfinite_gradient" in codes(ours)


# -- backward passes ------------------------------------------------------------------------

ADAM = '''import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.1)
x = torch.randn(8, 3)
y = torch.randn(8, 1)
for step in range(5):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
'''


def test_a_later_pass_of_a_training_loop_is_checked_at_that_iterations_values() -> None:
    ns: dict[str, Any] = {}
    exec(compile(ADAM, "<bare>", "exec"), ns)
    final = ns["model"][2].bias.grad.double()
    last = check_snippet(ADAM, TargetSpec(kind="leaf", name="model.2.bias", pass_index=4))
    first = check_snippet(ADAM, TargetSpec(kind="leaf", name="model.2.bias"))
    assert last.verdict == first.verdict == "pass"
    assert (last.pass_index, first.pass_index) == (4, 0)
    assert float(last.elements[0].analytic) == pytest.approx(float(final[0]), rel=1e-4)
    assert float(first.elements[0].analytic) != pytest.approx(float(final[0]), rel=1e-2)
    with pytest.raises(TargetError, match="5 backward call"):
        check_snippet(ADAM, TargetSpec(kind="leaf", name="model.2.bias", pass_index=5))


AFTER_TORCH_GRADCHECK = '''import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x ** 2


t = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
print(torch.autograd.gradcheck(torch.sin, (t,)))
x = torch.tensor([1.0, 2.0], requires_grad=True)
Cube.apply(x).sum().backward()
'''


def test_a_function_after_torchs_own_gradcheck_is_reachable_in_its_pass() -> None:
    """The snippet calls torch.autograd.gradcheck first: its backward calls are folded out of the
    document (NOTE [torch's own checks are folded] in capture/folded.py), and the re-run counts
    passes the same way (NOTE [torch's checks inside a re-run] in gradcheck/apply.py)."""
    from gradtrace.gradcheck.probe import Probe
    from gradtrace.gradcheck.programs import SnippetProgram

    program = SnippetProgram(AFTER_TORCH_GRADCHECK, seed=0)
    probe = Probe(upcast=False, pass_index=10_000)
    with pytest.raises(Exception, match="backward call"):
        program.execute(probe)
    assert probe.backwards == 1  # the user's own backward is the only call counted
    ours = check_snippet(AFTER_TORCH_GRADCHECK, TargetSpec(kind="function", name="Cube"))
    assert ours.verdict == "fail" and ours.suspect is not None and ours.suspect.name == "CubeBackward"
    assert ours.suspect.custom and ours.pass_index == 0
    with pytest.raises(TargetError):
        check_snippet(AFTER_TORCH_GRADCHECK, TargetSpec(kind="function", name="Cube", pass_index=1))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; the CPU generator is tested above")
def test_the_callers_cuda_random_state_is_put_back_too() -> None:
    torch.cuda.manual_seed_all(77)
    expected = torch.rand(4, device="cuda")
    torch.cuda.manual_seed_all(77)
    gradcheck(lambda t: (t * torch.rand(2, device="cuda", dtype=torch.float64).cpu()).sum(), (f64(1.0, 2.0),))
    assert torch.equal(torch.rand(4, device="cuda"), expected)
