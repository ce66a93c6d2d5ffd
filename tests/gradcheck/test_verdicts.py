"""The check's pass/fail verdicts equal ``torch.autograd.gradcheck(fast_mode=False)`` in float64.

On every fixture of ``fixtures.py`` and on the fifteen lessons. A lesson is a function of its
leaves through the probe's substitution (``Probe(substitute=...)``: every torch call sees the
given tensor in the leaf's place), so torch checks exactly the function our check re-runs; on
a lesson with more elements than the check samples, torch checks the same function of the
sampled elements (the rest held at their values).
"""

from __future__ import annotations

import random
import warnings

import pytest
import torch

from gradcheck.gradcheck_fixtures import FIXTURES, Fixture, WrongCube
from gradtrace.gradcheck import TargetSpec, check_snippet, gradcheck
from gradtrace.gradcheck.probe import Probe
from gradtrace.gradcheck.programs import SnippetProgram
from gradtrace.lessons import all_lessons


def torch_verdict(fn: object, inputs: tuple[torch.Tensor, ...]) -> str:
    ok = torch.autograd.gradcheck(fn, inputs, fast_mode=False, raise_exception=False)  # type: ignore[arg-type]
    return "pass" if ok else "fail"


def test_there_are_at_least_twenty_fixtures_with_both_verdicts() -> None:
    assert len(FIXTURES) >= 20
    assert {f[3] for f in FIXTURES} == {"pass", "fail"}


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_fixture_verdict_equals_torch(fixture: Fixture) -> None:
    _name, fn, make, expected = fixture
    ours = gradcheck(fn, make(), max_elements=512)
    assert ours.verdict == expected, ours.summary()
    assert torch_verdict(fn, make()) == ours.verdict


def test_relu_at_an_exact_zero_is_inconclusive_with_the_kink_on_relu() -> None:
    ours = gradcheck(lambda x: torch.relu(x).sum(), (torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64,
                                                                   requires_grad=True),))
    assert ours.verdict == "inconclusive"
    kink = [r for r in ours.reasons if r.code == "kink"]
    assert kink and kink[0].node == "ReluBackward0", ours.reasons
    worst = ours.worst_element()
    assert worst is not None and worst.kink and worst.index == [0]
    assert (float(worst.left), float(worst.right)) == pytest.approx((0.0, 1.0), abs=1e-6)
    assert torch_verdict(lambda x: torch.relu(x).sum(),
                         (torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64, requires_grad=True),)) == "fail"


def test_float32_only_function_is_checked_in_float32_and_says_so() -> None:
    def needs_float32(x: torch.Tensor) -> torch.Tensor:
        assert x.dtype == torch.float32, "this kernel only takes float32"
        return (x.sin() * x).sum()

    x = torch.tensor([0.3, -1.2, 2.0], requires_grad=True)
    ours = gradcheck(needs_float32, (x,))
    assert ours.verdict == "pass" and ours.dtype == "float32"
    assert [r.code for r in ours.reasons][:1] == ["no_upcast"]
    assert "AssertionError" in ours.reasons[0].message
    # torch in float64 cannot run it at all; in float32 with the same step and tolerances it agrees
    with pytest.raises(AssertionError):
        torch_verdict(needs_float32, (x.detach().double().requires_grad_(),))
    with warnings.catch_warnings():  # torch warns that float32 inputs will likely fail
        warnings.simplefilter("ignore", UserWarning)
        assert torch.autograd.gradcheck(needs_float32, (x,), eps=ours.eps, atol=ours.atol, rtol=ours.rtol,
                                        fast_mode=False, raise_exception=False)


def test_wrong_cube_fails_with_the_cube_as_suspect_and_two_thirds_error() -> None:
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    ours = gradcheck(lambda t: WrongCube.apply(t.exp()).sum(), (x,))
    assert ours.verdict == "fail"
    assert ours.suspect is not None and ours.suspect.name == "WrongCubeBackward" and ours.suspect.custom
    assert float(ours.elements[ours.worst or 0].rel_error) == pytest.approx(2 / 3, rel=1e-4)
    with pytest.raises(AssertionError, match=r"inputs\[0\]\[\d\]: analytic .* numeric .*"):
        ours.raise_if_failed()


def test_the_same_seed_picks_the_same_elements_and_another_seed_others() -> None:
    def picked(seed: int) -> list[list[int]]:
        r = gradcheck(lambda x: (x * x).sum(), (torch.ones(40, 40, dtype=torch.float64, requires_grad=True),),
                      seed=seed, max_elements=16)
        assert r.checked == 16 and r.total == 1600 and any(x.code == "sampled" for x in r.reasons)
        return [e.index for e in r.elements]

    assert picked(3) == picked(3)
    assert picked(3) != picked(4)


def test_an_expanded_leaf_is_reported_and_not_perturbed() -> None:
    x = torch.tensor([1.0], dtype=torch.float64).expand(3).requires_grad_()
    r = gradcheck(lambda t: (t * t).sum(), (x,))
    assert r.verdict == "inconclusive" and [c.code for c in r.reasons if c.code == "overlapping_memory"]


def test_a_nondeterministic_backward_is_inconclusive() -> None:
    class Noisy(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: object, g: torch.Tensor) -> torch.Tensor:
            return g * 2 + random.random() * 1e-9

    r = gradcheck(lambda t: Noisy.apply(t).sum(), (torch.ones(2, dtype=torch.float64, requires_grad=True),))
    assert r.verdict == "inconclusive"
    assert "nondeterministic_backward" in [c.code for c in r.reasons]


# -- the lessons ------------------------------------------------------------------------------

LESSONS = {lesson.stem: lesson.code for lesson in all_lessons()}


def _lesson_as_function(code: str, result_names: list[str], elements: list[tuple[int, int]]) -> tuple:
    """The lesson as torch sees it: the checked elements as inputs, every leaf rebuilt from them."""
    program = SnippetProgram(code, seed=0)
    probe = Probe(upcast=True, keep_sites=True)
    program.execute(probe)
    names = program.names(probe)
    ordinals = [next(i for i in range(len(probe.leaves)) if names.get(i, f"leaf {i}") == n) for n in result_names]
    bases = [probe.leaves[o].detach().clone() for o in ordinals]
    inputs = tuple(torch.stack([bases[ti].reshape(-1)[k] for tt, k in elements if tt == ti]).requires_grad_()
                   for ti in range(len(bases)) if any(tt == ti for tt, _ in elements))
    used = [ti for ti in range(len(bases)) if any(tt == ti for tt, _ in elements)]

    def fn(*values: torch.Tensor) -> torch.Tensor:
        subs = {}
        for ti, v in zip(used, values, strict=True):
            idx = torch.tensor([k for tt, k in elements if tt == ti])
            subs[ordinals[ti]] = bases[ti].reshape(-1).index_put((idx,), v).reshape(bases[ti].shape)
        return program.execute(Probe(upcast=True, substitute=subs))[0]

    return fn, inputs


@pytest.mark.parametrize("name", sorted(LESSONS))
def test_lesson_verdict_equals_torch(name: str) -> None:
    ours = check_snippet(LESSONS[name], TargetSpec(kind="parameters") if name == "14_transformer_block" else None,
                         max_elements=24 if name == "14_transformer_block" else 64)
    if ours.verdict == "inconclusive":
        # only where the lesson itself gives the check no function to differentiate
        assert {r.code for r in ours.reasons} & {"no_backward", "backward_error", "program_error", "cut"}, \
            ours.summary()
        return
    assert ours.verdict == "pass", ours.summary()  # no false alarm on a lesson
    elements = [(e.tensor, sum(i * s for i, s in zip(e.index, _strides(ours.tensors[e.tensor].shape), strict=True)))
                for e in ours.elements]
    if name == "15_compiled":
        # The probe cannot put a tensor in x's place inside a compiled region (dynamo runs it
        # without torch-function modes), so torch checks the lesson's function as written.
        def f(x: torch.Tensor) -> torch.Tensor:
            return (torch.sin(x) * x).sum()

        torch.manual_seed(0)
        x = torch.randn(8, dtype=torch.float32).double().requires_grad_()
        assert torch_verdict(torch.compile(f, backend="aot_eager"), (x,)) == ours.verdict
        return
    fn, inputs = _lesson_as_function(LESSONS[name], [t.name for t in ours.tensors], elements)
    assert torch_verdict(fn, inputs) == ours.verdict


def _strides(shape: list[int]) -> list[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return list(reversed(out))
