"""What the analysis (:mod:`gradtrace.analysis`) found in a run: part of the run document.

Computed once, from the document itself, where the document is built
(:func:`gradtrace.capture.document.build_document`), and only read after that: by the page, the
widget, saved HTML and Python. The page never re-derives any of it (one rule, one side).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gradtrace.schema.base import _Model, _optional

Severity = Literal["error", "warning", "info"]


class Evidence(_Model):
    """One fact a hint rests on, as the user would read it (``shape``, ``[3, 1]``)."""

    label: str = Field(description="what the fact is (`input shape`)")
    value: str = Field(description="its value as shown (`[3, 1]`)")


class Hint(_Model):
    """A likely mistake, said once, with what shows it and how to fix it."""

    code: str = Field(description=(
        "stable identifier: `grad-accumulated` (also a module's parameters no optimizer holds, cleared and moved "
        "while others are), `gradients-discarded` (no parameter ever changed: `zero_grad()` between `backward()` "
        "and `step()`, or `step()` before `backward()`), `stepped-twice` (a parameter two optimizers hold, both "
        "updating it with one backward's gradient: `Node.stepped_twice`), `optimizer-recreated` (an optimizer that "
        "keeps state made inside the loop, so its state starts from zero at most steps: `Node.state_restarts`), "
        "`leaf-cut-off`, `backward-without-graph` "
        "(backward from a tensor autograd recorded nothing for, torch's \"does not require grad\" error, with what "
        "left it without a graph: gradients off, a cut, an op with no gradient), "
        "`leaf-changed-in-place` (torch's \"a leaf Variable that requires grad is being used in an in-place "
        "operation\": an update by hand or an "
        "initialization outside `torch.no_grad()`), `backward-non-scalar` (backward() from a tensor of many "
        "elements: a loss not reduced), `float64-input` (a float64 tensor, as numpy makes, given to float32 "
        "weights), `target-dtype` (float class labels to cross-entropy or NLL, integer labels to BCE, one-hot integer "
        "labels to cross-entropy), `target-shape` (labels of shape [N, 1], a sequence's classes last, logits "
        "flattened and targets not, BCE's [N, 1] outputs against [N] targets), `target-out-of-range` (a class "
        "index the model has no output for: labels counted from 1), `input-shape` (a layer given another layout: "
        "images with their channels last, a convolution's output into `nn.Linear` unflattened, an `in_features` "
        "that is not what reaches the layer, batch norm on a batch of one while training, an image without its "
        "channel and batch dims, a sequence with features and time swapped), "
        "`requires-grad-after-cut` (also tensors with history rebuilt by `torch.tensor()`), `nonleaf-grad`, "
        "`graph-freed`, `clip-before-backward` (`clip_grad_norm_` or `clip_grad_value_` run before the backward "
        "of its block: it clips nothing, and the gradients step() uses exceed its limit), `clip-before-unscale` "
        "(a clip of a GradScaler's scaled gradients, before `scaler.unscale_`), `grad-edited` (a "
        "`.grad` changed in place after backward: clipping, GradScaler's unscale; "
        "its line from `Node.grad_edits`), `double-softmax` (a softmax's or a sigmoid's output fed to "
        "CrossEntropyLoss, which applies log_softmax itself), `nll-on-probabilities` (a softmax's probabilities "
        "fed to NLLLoss, which takes log-probabilities), `softmax-wrong-dim` (a log_softmax along another dim "
        "than the classes' fed to NLLLoss), `sigmoid-bce` (a sigmoid's output fed to BCELoss, "
        "or to BCEWithLogitsLoss, which applies its own), `unstable-math`, `loss-broadcast`, "
        "`graph-kept-alive`, `zero-gradient-op`, `non-differentiable-op` (argmax, a comparison or an integer cast "
        "cut a leaf off), `gradients-vanish` / `gradients-explode` (weight gradients change by 1e4 or more from the "
        "last layer to the first over three or more weight layers, 1e2 or more over five or more, 4x or more per "
        "layer; or half or more of the 8 or more calls of a module one backward pass walks get less than 2⁻²⁴ of "
        "the largest gradient at a call's output, `Dynamics.calls`), `update-ratio-high` / `update-ratio-low` (a "
        "weight's update:data ratio far from 1e-3; not for a weight that started all zeros, nor \"high\" where "
        "each looped backward line's loss fell), `relu-dead` (a ReLU layer mostly 0), `activation-saturated` "
        "(a tanh or sigmoid layer mostly saturated), `train-mode-in-eval` (dropout or batch norm in training "
        "mode under `no_grad`, unless the snippet calls `.train()` after its last backward and before that line: "
        "Monte Carlo dropout; or `F.dropout` without `training=` in the forward of a module in eval mode), "
        "`eval-mode-in-training` (a model put in eval mode for an evaluation and trained on in it: "
        "`ModuleInfo.modes`), "
        "`threads-unrecorded` (a thread the run started built graphs that were not recorded), `symmetric-init` "
        "(two layers in a row whose weights start with every element equal, as `nn.init.zeros_` on both makes: "
        "the hidden units between them stay identical), `view-not-permute` (a `view` or `reshape` of [B, T, C] to "
        "[B, C, T] or another order of the same sizes, where a transpose was meant: the data keeps its memory "
        "order)"))
    severity: Severity = Field(description="`error`, `warning` or `info`")
    title: str = Field(description="one line")
    message: str = Field(description="what happened, with the run's own names and numbers")
    line: int | None = Field(None, description="the snippet line it concerns")
    nodes: list[str] = Field(default_factory=list, description="ids of the nodes it concerns, most relevant first")
    evidence: list[Evidence] = Field(default_factory=list, description="the facts it rests on (`Evidence`)")
    fix: str = Field(description="the fix, as code")
    lesson: str | None = Field(None, description="the lesson that teaches it (a lesson's file stem), or null")


class NonFinite(_Model):
    """The first NaN (or infinity) of a run, in one direction, and the node that made it.

    The producer is the first node whose output holds a non-finite value while everything it
    received was finite; the nodes after it that only carried the value on are ``passed_on``.
    """

    phase: Literal["forward", "backward"] = Field(description="`forward` or `backward`")
    kind: Literal["nan", "inf"] = Field(description="`nan` or `inf`")
    node: str = Field(description=(
        "backward: the node that produced it (the first whose returned gradient holds it while what it received did "
        "not: the node `torch.autograd.detect_anomaly` names); forward: the first recorded tensor holding it"))
    name: str | None = Field(None, description="that node's name")
    line: int | None = Field(None, description="its snippet line")
    pass_: int | None = Field(default=None, alias="pass", description="the backward pass, or null forward")
    event: int | None = Field(None, description="index of the producer's event in `events`, or null")
    output: int | None = Field(None, description="which of its returned gradients first holds it, or null")
    elements: list[int] = Field(default_factory=list, description=(
        "flat indices of the first non-finite elements (at most 8), when the values were recorded"))
    count: int | None = Field(None, description="how many elements are non-finite, when the values were recorded")
    cause: str | None = Field(None, description=(
        "the arithmetic that made it, when it can be told (`0 × inf/nan`); for a NaN made of an infinity, also the op "
        "that first made that infinity from finite inputs"))
    passed_on: list[str] = Field(default_factory=list, description="ids of the nodes after it that only carried it on")
    sentence: str = Field(description="one sentence saying all of this")
    trap: str | None = Field(None, description=(
        "the pattern behind it, when known (`torch.where` and `masked_fill`: the unselected branch), or null"))
    fix: str | None = _optional("the fix for that pattern, as code")
    handled: str | None = _optional(
        "what the program already does about it, when the document shows it (a GradScaler that skipped the "
        "optimizer's step after this backward pass), or null")


class GradOffBlock(_Model):
    """Lines of the snippet that run with gradients off: no graph is recorded there."""

    kind: Literal["no_grad", "inference_mode", "set_grad_enabled"] = Field(description=(
        "`no_grad`, `inference_mode` or `set_grad_enabled`"))
    line: int = Field(description="the `with` statement or decorator that turns gradients off")
    start: int = Field(description="the first line of its body")
    end: int = Field(description="the last line of its body")


class Starved(_Model):
    """A leaf or parameter that ends the run with no gradient, and what starved it
    (``analysis/starved.py``)."""

    name: str = Field(description="the leaf's or parameter's name (`model.0.weight`)")
    node: str | None = Field(None, description="its tensor node, or null (a frozen parameter has none)")
    reason: Literal["unused", "cut", "frozen"] = Field(description=(
        "`unused` (no backward reached it), `cut` (a `detach`, `.data` or `no_grad` cut it off, a distribution's "
        "`.sample()` drew from it where `rsample()` keeps the path, or the loss was rebuilt from numbers: `.item()`, "
        "`torch.tensor()` of tensors with history) or `frozen` (it does not require grad)"))
    line: int | None = Field(None, description="the cut's line, or where the leaf was defined")
    detail: str = Field(description="one sentence saying it")


# --- training dynamics (analysis/dynamics/) -------------------------------------------------

Series = list[int | float | str | None]


class ParamSeries(_Model):
    """One parameter's series by iteration (NOTE [dynamics from the recorded numbers] in
    analysis/dynamics/series.py)."""

    node: str = Field(description="its tensor node")
    name: str | None = Field(None, description="its name (`model.0.weight`)")
    module: str | None = Field(None, description="the module path it belongs to (`model.0`), or null")
    grad_norm: Series = Field(description="‖grad‖ (of `.grad` after the iteration's backward) per iteration, or null")
    grad_mean: Series = Field(description="mean |grad| per iteration, from the tensor file, or null")
    grad_max: Series = Field(description="max |grad| per iteration, or null")
    update: Series = Field(description=(
        "log10 of the update:data ratio ‖Δw‖/‖w‖ of the step that applied this iteration's gradient, or null"))


class LayerSeries(_Model):
    """One activation layer's saturated (tanh, sigmoid) or dead (ReLU) share by iteration
    (NOTE [saturated and dead] in analysis/dynamics/layers.py)."""

    module: str | None = Field(None, description="the module that ran it, or null")
    kind: Literal["tanh", "sigmoid", "relu"] = Field(description="`tanh`, `sigmoid` or `relu`")
    line: int | None = Field(None, description="its snippet line")
    nodes: list[str | None] = Field(description="its function node per iteration (the first call), or null")
    share: Series = Field(description=(
        "per iteration: the share of outputs with |y| > threshold (tanh), |2y − 1| > threshold (sigmoid) or exactly "
        "0 (relu), over all its calls in that iteration; null when not kept"))


class CallSeries(_Model):
    """‖grad‖ at the output of each call of a module that one backward pass walked through
    many times: an RNN cell unrolled over a sequence (NOTE [the gradient at each call] in
    analysis/dynamics/calls.py)."""

    module: str = Field(description="the module's path (`cell`, `model.rnn`)")
    type: str | None = Field(None, description="its class (`GRUCell`), or null")
    pass_: int = Field(alias="pass", description="the backward pass (`passes[].index`)")
    calls: list[int] = Field(description="the calls it walked, in order (`Node.module_stack[].call`, from 0)")
    nodes: list[str] = Field(description="per call: its first output's function node")
    grad_norm: Series = Field(description=(
        "per call: ‖grad‖ (float64) over the call's outputs, of the gradient this pass brought there (`h_t.grad` for "
        "`h = cell(x[t], h)`), from the tensor file; null where it was left out"))


class Dynamics(_Model):
    """Series by iteration of a run with two or more backward passes, each list one entry per
    iteration (`iterations`); and series by call of any run whose backward pass walked a
    module many times (`calls`): a run with one pass has those alone, its `params` and
    `layers` empty."""

    threshold: float = Field(description="the saturation threshold (0.97, Karpathy's makemore lecture)")
    iterations: list[int] = Field(description="the backward pass (`passes[].index`) of each iteration")
    loss: Series = Field(description="the value of each pass's (scalar) root, or null")
    params: list[ParamSeries] = Field(description="each parameter that got a gradient, in network order")
    layers: list[LayerSeries] = Field(description="each tanh, sigmoid or ReLU layer, in network order")
    calls: list[CallSeries] | None = _optional(
        "‖grad‖ by call of each module a backward pass walked 3 or more times (`CallSeries`), outermost modules "
        "only; absent when none did or the run has no tensor file")


class Analysis(_Model):
    """Everything the analysis says about one run."""

    badge: str | None = Field(None, description="a short addition to the status (\"x.grad has NaN\"), or null")
    nonfinite: list[NonFinite] = Field(default_factory=list, description=(
        "the first NaN (else infinity) in forward, then in backward, each when there is one (`NonFinite`)"))
    hints: list[Hint] = Field(default_factory=list, description="likely mistakes, in catalogue order (`Hint`)")
    grad_off: list[GradOffBlock] | None = _optional(
        "the code's blocks under `torch.no_grad()`, `torch.inference_mode()` or `torch.set_grad_enabled(False)` (a "
        "`with` or a decorator), in source order, where no graph is recorded (`GradOffBlock`); absent when there is "
        "none")
    dynamics: Dynamics | None = _optional(
        "series by iteration and by call for the dynamics panel (`Dynamics`); absent with fewer than two backward "
        "passes and no module walked 3 or more times in one")
    starved: list[Starved] | None = _optional(
        "every leaf and parameter that ends with no gradient, with what starved it (`Starved`); absent when none "
        "does or no backward ran")
