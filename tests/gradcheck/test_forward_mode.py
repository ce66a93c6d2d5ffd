"""Forward mode (``gradcheck(..., mode="forward")``): a custom Function's ``jvp`` against
central differences, differential against ``torch.autograd.gradcheck(check_forward_ad=True,
check_backward_ad=False)`` in float64. Functions written as the "Extending PyTorch" notes write
forward-mode support: ``setup_context`` with ``ctx.save_for_forward``, and the older style
that saves in ``forward(ctx, ...)``; each right, and with one mistake in its ``jvp``."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from torch.autograd import Function

from gradtrace.gradcheck import check_snippet, gradcheck
from gradtrace.schema.gradcheck import TargetSpec

FACTOR = {"right": 3.0, "wrong": 1.0}


class Cube(Function):
    """``x ** 3`` with ``setup_context``; ``jvp`` multiplies by ``ctx.factor`` (3 is right)."""

    @staticmethod
    def forward(x: torch.Tensor, factor: float) -> torch.Tensor:
        return x ** 3

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        x, factor = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.factor = factor

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        (x,) = ctx.saved_tensors
        return 3 * grad * x ** 2, None

    @staticmethod
    def jvp(ctx: Any, tangent: torch.Tensor, _: Any) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return ctx.factor * tangent * x ** 2


class MulExp(Function):
    """``x * exp(y)``, the older style (``ctx`` in ``forward``); ``jvp`` forgets ``exp(y)`` in
    ``y``'s term when ``ctx.wrong``: one input's tangent wrong, the other's right."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor, wrong: bool) -> torch.Tensor:
        ctx.save_for_forward(x, y)
        ctx.wrong = wrong
        return x * y.exp()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        raise NotImplementedError("only forward mode is checked here")

    @staticmethod
    def jvp(ctx: Any, tx: torch.Tensor, ty: torch.Tensor, _: Any) -> torch.Tensor:
        x, y = ctx.saved_tensors
        return tx * y.exp() + x * ty * (1.0 if ctx.wrong else y.exp())


class NoJvp(Function):
    """A right backward and no ``jvp``: forward-mode AD cannot run through it."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * x.exp()


def _x(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def torch_forward_verdict(fn: Any, inputs: tuple[Any, ...]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = torch.autograd.gradcheck(fn, inputs, check_forward_ad=True, check_backward_ad=False,
                                      fast_mode=False, raise_exception=False)
    return "pass" if ok else "fail"


@pytest.mark.parametrize("kind", ["right", "wrong"])
def test_cube_jvp_verdict_equals_torch_and_a_wrong_one_names_the_function(kind: str) -> None:
    inputs = (_x(1.0, 2.0, -0.5), FACTOR[kind])
    expected = torch_forward_verdict(Cube.apply, inputs)
    assert expected == ("pass" if kind == "right" else "fail")  # the cases are what they say
    ours = gradcheck(Cube.apply, inputs, mode="forward")
    assert ours.mode == "forward" and ours.verdict == expected, ours.summary()
    assert ours.checked == ours.total == 3 and [t.name for t in ours.tensors] == ["inputs[0]"]
    if kind == "right":
        assert ours.failed == 0 and ours.suspect is None and not ours.reasons, ours.summary()
        return
    assert ours.failed == 3 and ours.suspect is not None, ours.summary()
    assert ours.suspect.name == "CubeBackward" and ours.suspect.custom
    worst = ours.worst_element()
    assert worst is not None and not worst.ok
    # the tangent is a third of the finite difference: relative error 2/3 at every element
    assert float(worst.rel_error) == pytest.approx(2 / 3, rel=1e-6)
    assert float(worst.analytic) == pytest.approx(float(worst.numeric) / 3, rel=1e-6)
    summary = ours.summary()
    assert "forward mode" in summary and "suspect: CubeBackward" in summary
    assert "a Function your code defines" in summary and "Cube.jvp is wrong" in summary


def test_a_function_without_jvp_is_inconclusive_with_the_reason_where_torch_raises() -> None:
    inputs = (_x(0.5, -1.0),)
    with pytest.raises(NotImplementedError, match="jvp"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.autograd.gradcheck(NoJvp.apply, inputs, check_forward_ad=True, check_backward_ad=False)
    ours = gradcheck(NoJvp.apply, inputs, mode="forward")
    assert ours.verdict == "inconclusive" and ours.checked == 0, ours.summary()
    reason = next(r for r in ours.reasons if r.code == "no_jvp")
    assert "NoJvp defines no jvp" in reason.message
    assert gradcheck(NoJvp.apply, inputs).verdict == "pass"  # its backward is right: only forward mode says no


@pytest.mark.parametrize("wrong", [False, True])
def test_two_inputs_with_one_tangent_wrong_fail_only_at_that_input(wrong: bool) -> None:
    def inputs() -> tuple[Any, ...]:
        return (_x(0.3, -1.2, 2.0), _x(0.5, 1.5, -0.7), wrong)

    expected = torch_forward_verdict(MulExp.apply, inputs())
    assert expected == ("fail" if wrong else "pass")
    ours = gradcheck(MulExp.apply, inputs(), mode="forward")
    assert ours.verdict == expected, ours.summary()
    assert [t.name for t in ours.tensors] == ["inputs[0]", "inputs[1]"] and ours.checked == 6
    bad = {(e.tensor, tuple(e.index)) for e in ours.elements if not e.ok}
    if not wrong:
        assert not bad and ours.suspect is None
        return
    assert bad == {(1, (0,)), (1, (1,)), (1, (2,))}, ours.summary()  # x's tangent is right, y's is not
    worst = ours.worst_element()
    assert worst is not None and worst.tensor == 1
    assert ours.suspect is not None and ours.suspect.name == "MulExpBackward" and ours.suspect.custom


def test_float32_inputs_are_upcast_and_tolerances_are_torchs() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)  # float32, as a user writes it
    ours = gradcheck(Cube.apply, (x, 1.0), mode="forward")
    assert ours.verdict == "fail" and ours.dtype == "float64"
    assert (ours.eps, ours.atol, ours.rtol) == (1e-6, 1e-5, 1e-3)
    assert x.dtype == torch.float32 and x.grad is None  # the caller's tensor is untouched


def test_an_unknown_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="'backward' or 'forward'"):
        gradcheck(Cube.apply, (_x(1.0), 3.0), mode="sideways")  # type: ignore[arg-type]


SNIPPET = '''import torch.autograd.forward_ad as fwAD

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_forward(x, w)
        return x * w.sin()

    @staticmethod
    def jvp(ctx, tx, tw):
        x, w = ctx.saved_tensors
        return tx * w.sin() + x * tw * w.FUNC()

x = torch.randn(3)
w = torch.randn(3)
with fwAD.dual_level():
    y = Scale.apply(fwAD.make_dual(x, torch.ones(3)), fwAD.make_dual(w, torch.ones(3)))
    print(fwAD.unpack_dual(y).tangent)
'''


@pytest.mark.parametrize(("func", "verdict"), [("cos", "pass"), ("sin", "fail")])
def test_a_snippet_that_never_calls_backward_has_its_jvp_checked_at_the_call(func: str, verdict: str) -> None:
    code = SNIPPET.replace("FUNC", func)
    r = check_snippet(code, TargetSpec(kind="function", name="Scale"), mode="forward")
    assert r.verdict == verdict and r.mode == "forward", r.summary()
    assert [t.name for t in r.tensors] == ["Scale input 0", "Scale input 1"]
    if verdict == "fail":
        assert {e.tensor for e in r.elements if not e.ok} == {1}
        assert r.suspect is not None and r.suspect.name == "ScaleBackward" and r.suspect.custom
    with pytest.raises(ValueError, match="called 1 time"):
        check_snippet(code, TargetSpec(kind="function", name="Scale", occurrence=1), mode="forward")
    with pytest.raises(ValueError, match="kind 'function'"):
        check_snippet(code, TargetSpec(kind="leaf", name="x"), mode="forward")


def _db_samples() -> list[tuple[str, Any, tuple[Any, ...]]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the opinfo machinery's import-time warnings
        from torch.testing._internal.autograd_function_db import autograd_function_db
    return [(op.name, op.op, (s.input, *s.args)) for op in autograd_function_db
            for s in list(op.sample_inputs("cpu", torch.float64, requires_grad=True))[:1]]


DB = _db_samples()


@pytest.mark.parametrize("sample", DB, ids=[s[0] for s in DB])
def test_torchs_own_function_db_in_forward_mode_agrees_with_torch(sample: tuple[str, Any, tuple[Any, ...]]) -> None:
    """torch's ``autograd_function_db`` (one sample each): where torch's forward-mode check raises
    (a Function with no jvp), ours is inconclusive and says so; elsewhere the same verdict, and
    every fail names one of the Functions the call ran."""
    _name, fn, inputs = sample
    try:
        expected = torch_forward_verdict(fn, inputs)
    except NotImplementedError:
        expected = "no jvp"
    ours = gradcheck(fn, inputs, mode="forward", max_elements=512)
    if expected == "no jvp":
        assert ours.verdict == "inconclusive" and [r.code for r in ours.reasons] == ["no_jvp"], ours.summary()
        return
    assert ours.verdict == expected, ours.summary()
    if expected == "fail":
        assert ours.suspect is not None and ours.suspect.name.removesuffix("Backward") in {
            c.__name__ for c in _classes(fn, inputs)}, ours.summary()


def _classes(fn: Any, inputs: tuple[Any, ...]) -> list[type]:
    """The Function classes a call of ``fn`` applies (``fn`` itself when it is ``Fn.apply``,
    bound before the patch below could see it)."""
    owner = getattr(fn, "__self__", None)
    seen: list[type] = [owner] if isinstance(owner, type) and issubclass(owner, Function) else []
    original = Function.__dict__["apply"].__func__

    def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        seen.append(cls)
        return original(cls, *args, **kwargs)

    Function.apply = classmethod(apply)  # type: ignore[method-assign,assignment]
    try:
        with torch.no_grad():
            fn(*inputs)
    finally:
        Function.apply = classmethod(original)  # type: ignore[method-assign,assignment]
    return seen


class RaisingJvp(Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 2

    @staticmethod
    def jvp(ctx: Any, t: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("my jvp is broken")


def test_a_wrong_jvp_inside_torch_ops_is_found_and_a_raising_jvp_is_said() -> None:
    def chain(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(Cube.apply(x.exp(), 1.0)) * 2

    inputs = (_x(0.1, -0.4, 0.7),)
    assert torch_forward_verdict(chain, inputs) == "fail"
    ours = gradcheck(chain, inputs, mode="forward")
    assert ours.verdict == "fail" and ours.suspect is not None and ours.suspect.name == "CubeBackward", ours.summary()
    right = gradcheck(lambda x: torch.sin(Cube.apply(x.exp(), 3.0)) * 2, inputs, mode="forward")
    assert right.verdict == "pass" and torch_forward_verdict(lambda x: torch.sin(Cube.apply(x.exp(), 3.0)),
                                                             inputs) == "pass"
    raised = gradcheck(RaisingJvp.apply, inputs, mode="forward")
    assert raised.verdict == "inconclusive" and raised.reasons[0].code == "jvp_error", raised.summary()
    assert "my jvp is broken" in raised.reasons[0].message


class CubeInFloat32(Function):
    """Casts back to float32 (no upcast possible) and forgets the factor 3 in its jvp."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_forward(x)
        return (x ** 3).float()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("only forward mode is checked here")

    @staticmethod
    def jvp(ctx: Any, t: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return (t * x ** 2).float()


def test_a_function_that_insists_on_float32_is_checked_there_and_still_blamed() -> None:
    r = gradcheck(CubeInFloat32.apply, torch.tensor([1.0, 2.0], requires_grad=True), mode="forward")
    assert r.verdict == "fail" and r.dtype == "float32" and (r.eps, r.atol, r.rtol) == (1e-3, 1e-2, 1e-2)
    assert "no_upcast" in [x.code for x in r.reasons]
    assert r.suspect is not None and r.suspect.name == "CubeInFloat32Backward", r.summary()
