"""What a check executes, again and again: a snippet (by its code) or a Python callable.

Each :meth:`execute` starts from scratch (a fresh namespace, the same seed; fresh copies of the
inputs) under a :class:`~gradtrace.gradcheck.probe.Probe`, and answers the output tensors with
their graph alive. Failures are typed, so the engine can turn each into a reason.
"""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from gradtrace.gradcheck.apply import FunctionApplyPatch
from gradtrace.gradcheck.cuts import not_library
from gradtrace.gradcheck.probe import Probe, Stop

_DYNAMO_GLOBALS = ("__compiled_fn", "__resume_at", "__import_", "___")


class ProgramFailed(Exception):
    """The program raised before it reached its first backward call."""

    def __init__(self, exc: BaseException) -> None:
        first = str(exc).split("\n")[0]
        super().__init__(f"{type(exc).__name__}: {first}" if first else type(exc).__name__)
        self.exc = exc


class NoBackward(Exception):
    """The snippet ended without reaching the backward call to check (nothing to check)."""

    def __init__(self, message: str, *, passes: int = 0) -> None:
        super().__init__(message)
        self.passes = passes
        """How many backward calls it made."""


def _no_backward(probe: Probe) -> NoBackward:
    if probe.backwards == 0:
        return NoBackward("the snippet never calls backward() (nor torch.autograd.grad)")
    return NoBackward(f"the program makes {probe.backwards} backward call(s): there is no backward pass "
                      f"{probe.pass_index} (counted from 0)", passes=probe.backwards)


class Program(Protocol):
    def user_file(self, filename: str) -> bool:
        """Whether code in ``filename`` is the user's (cuts and "your code" count only there)."""
        ...

    def execute(self, probe: Probe) -> list[torch.Tensor]: ...

    def names(self, probe: Probe) -> dict[int, str]:
        """``{leaf ordinal: name}`` for the leaves the execution saw."""
        ...


class _Sink(io.TextIOBase):
    """Where a re-run's prints go: the run already showed them once."""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        return len(s)


_ACCELERATORS = ("cuda", "xpu", "mtia")


@contextlib.contextmanager
def _cpu_seeding() -> Iterator[None]:
    """``torch.manual_seed`` in the snippet without its accelerator half, while the re-runs run
    on the CPU.

    With no accelerator initialised, ``torch.manual_seed`` queues a lazy seeding for CUDA, XPU
    and MTIA, each with a formatted stack trace (about 1.5 ms apiece): for a snippet that seeds,
    that was a fifth of each re-run. The CPU generator is seeded exactly as before; the
    accelerators' generators are never used by these re-runs.
    """
    saved = []
    for name in _ACCELERATORS:
        module = getattr(torch, name, None)
        if module is None or module.is_initialized():
            continue
        saved.append((module, module.manual_seed_all))
        module.manual_seed_all = _no_seed
    try:
        yield
    finally:
        for module, fn in saved:
            module.manual_seed_all = fn


def _no_seed(seed: int) -> None:
    return None


class SnippetProgram:
    """A snippet, executed as ``run_snippet`` does (``torch``, ``nn``, ``F`` predefined, seeded)."""

    def __init__(self, code: str, *, seed: int | None, filename: str = "<snippet>") -> None:
        self.code = compile(code, filename, "exec", dont_inherit=True)
        self.filename = filename
        self.seed = seed
        self.namespace: dict[str, Any] = {}

    def user_file(self, filename: str) -> bool:
        return filename == self.filename

    def execute(self, probe: Probe) -> list[torch.Tensor]:
        import builtins

        # NOTE: torch.compile caches its compiled code on the snippet's code object (the same in
        # every execution) and refers to it by a global name it added to the namespace; those
        # names are carried over, everything the snippet itself bound starts afresh.
        carried = {k: v for k, v in self.namespace.items() if k.startswith(_DYNAMO_GLOBALS)}
        self.namespace = {"__name__": "__main__", "__builtins__": builtins, "torch": torch, "nn": nn, "F": F,
                          **carried}
        if self.seed is not None:
            random.seed(self.seed)
            torch.default_generator.manual_seed(self.seed)  # CPU only: the snippet runs on cpu
        seeded = torch.get_rng_state()
        sink = _Sink()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), _cpu_seeding():
            try:
                with FunctionApplyPatch(probe), probe:
                    exec(self.code, self.namespace)
            except Stop:
                pass
            except Exception as e:  # what the snippet raised: a reason, never a crash
                if probe.outputs is None:
                    raise ProgramFailed(e) from e
        probe.draws = not torch.equal(seeded, torch.get_rng_state())
        if probe.outputs is None:
            raise _no_backward(probe)
        return probe.outputs

    def names(self, probe: Probe) -> dict[int, str]:
        ordinal = {id(t): i for i, t in enumerate(probe.leaves)}
        out: dict[int, str] = {}
        for name, value in list(self.namespace.items()):
            if isinstance(value, torch.Tensor) and id(value) in ordinal:
                out.setdefault(ordinal[id(value)], name)
            elif isinstance(value, nn.Module):
                for pname, p in value.named_parameters():
                    if id(p) in ordinal:
                        out.setdefault(ordinal[id(p)], f"{name}.{pname}")
        return out


class CallableProgram:
    """``fn(*inputs)``: the inputs that require grad are the leaves, in order."""

    def __init__(self, fn: Callable[..., Any], inputs: Sequence[Any], *, seed: int | None) -> None:
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, type) and issubclass(owner, torch.autograd.Function) \
                and getattr(fn, "__name__", "") == "apply":
            # ``Fn.apply`` was bound before the check could watch it: look it up at each call, so
            # the Function's forward is seen as one (its no_grad inside is no cut)
            fn = _Apply(owner)
        self.fn = fn
        self.inputs = list(inputs)
        self.seed = seed

    def user_file(self, filename: str) -> bool:
        return not_library(filename)

    def execute(self, probe: Probe) -> list[torch.Tensor]:
        args: list[Any] = []
        for a in self.inputs:
            if isinstance(a, torch.Tensor):
                c = a.detach().clone()
                if a.requires_grad:
                    c.requires_grad_(True)
                    probe.adopt(c, overlapping=a.layout == torch.strided and torch._debug_has_internal_overlap(a) == 1)
                args.append(c)
            else:
                args.append(a)
        if self.seed is not None:
            torch.default_generator.manual_seed(self.seed)  # CPU only: the snippet runs on cpu
        seeded = torch.get_rng_state()
        try:
            with FunctionApplyPatch(probe), probe:
                out = self.fn(*args)
            probe.draws = not torch.equal(seeded, torch.get_rng_state())
        except Stop:
            raise ProgramFailed(RuntimeError("the function called backward itself")) from None
        except Exception as e:
            raise ProgramFailed(e) from e
        outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]
        if not outs:
            raise ProgramFailed(TypeError("the function returned no tensor"))
        return outs

    def names(self, probe: Probe) -> dict[int, str]:
        return {i: f"inputs[{k}]" for i, k in enumerate(
            k for k, a in enumerate(self.inputs) if isinstance(a, torch.Tensor) and a.requires_grad)}


class _Apply:
    """``cls.apply``, looked up when called."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __call__(self, *args: Any) -> Any:
        return self.cls.apply(*args)  # type: ignore[attr-defined]
