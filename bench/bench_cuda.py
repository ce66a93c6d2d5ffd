"""The CUDA path, on a machine with a GPU: recording never changes a program there either, the
tensor file keeps the gradients the program computed, and what recording costs on the device.

    python bench/bench_cuda.py [repeats] [--cpu] [--faithful] [--kept] [--cost]

(``--cpu`` runs the same tables on the CPU: a dry run of the script where no GPU is.)

Three tables:

- **faithful**: every program of tests/capture/faithful_programs.py plus the lessons and the
  README's programs, run bare and under ``gradtrace.record()`` with CUDA as the default device
  (``torch.set_default_device``), one process, the same order, compared as
  tests/capture/test_faithful.py compares them on the CPU (structure exactly, floats to float32
  tolerance): stdout, what was raised, every tensor and gradient left in the namespace;
- **kept**: for the README's programs, each parameter's ``.grad`` of the bare run against what
  the recorded run's tensor file keeps as that leaf's ``.grad`` at the end: its last
  accumulation or an edit made after it (``doc.tensor``);
- **cost**: bare, record + document, and record + document with the tensor file, on the device
  (``torch.cuda.synchronize`` before each clock read), as ratios against bare.

Prints tables; asserts nothing (NOTE in bench/common.py). Without a CUDA device it says so.
"""

from __future__ import annotations

import contextlib
import io
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "capture"), str(ROOT / "backend")]


DEVICE = "cuda"


def _sync(torch: Any) -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


AMP_FP16 = """import torch
from torch import nn
import torch.nn.functional as F
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
x, y = torch.randn(64, 16), torch.randn(64, 1)
for step in range(3):
    opt.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16):
        out = model(x)
        loss = F.mse_loss(out, y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
print(out.dtype, loss.dtype, scaler.get_scale())
"""

AMP_BF16 = """import torch
from torch import nn
model = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
x = torch.randn(2, 5, 32)
with torch.autocast("cuda", dtype=torch.bfloat16):
    out = model(x)
out.float().pow(2).mean().backward()
print(out.dtype, model.linear1.weight.grad.dtype)
"""


def _programs() -> dict[str, str]:
    from faithful_programs import PROGRAMS
    from test_tensor_oracle import GPT_LIKE

    from gradtrace.lessons import all_lessons
    from programs import ADAM_20, GAN_STEP, GRU_200, TRANSFORMER_6

    readme = {"GRU-200": GRU_200, "Adam-20": ADAM_20, "transformer-6": TRANSFORMER_6, "GAN step": GAN_STEP,
              "GPT-like": GPT_LIKE}
    lessons = {f"lesson {les.stem}": les.code for les in all_lessons()}
    device_only = {"AMP fp16 + GradScaler": AMP_FP16, "AMP bf16 transformer layer": AMP_BF16}
    if DEVICE == "cuda":  # torch.compile on the GPU: inductor writes Triton kernels
        from faithful_programs import COMPILED
        device_only.update(COMPILED)
    return {**readme, **lessons, **dict(PROGRAMS), **(device_only if DEVICE == "cuda" else {})}


def faithful(torch: Any) -> None:
    from faithful_runner import run_one
    from test_faithful import _ADDRESS, _close  # compared as the CPU test compares them

    programs = _programs()
    print(f"\n### faithful on {DEVICE} (bare against gradtrace.record(), default device {DEVICE})\n")
    print("| program | bare raised | same stdout | same raised | same tensors | recorder |")
    print("| --- | --- | --- | --- | --- | --- |")
    same_all = 0
    for name, code in programs.items():
        with torch.device(DEVICE):
            bare = run_one(name, code, "bare")
            recorded = run_one(name, code, "record")
        diffs = _close(bare["tensors"], recorded["tensors"])
        doc = recorded.get("document", {})
        status = doc.get("failed") or f"{doc.get('status')}, {len(doc.get('functions', []))} nodes"
        if doc.get("recorder_errors"):
            status += f", recorder_errors: {doc['recorder_errors']}"
        for run in (bare, recorded):
            run["stdout"] = _ADDRESS.sub(" at 0x", run["stdout"])
        ok = (bare["stdout"] == recorded["stdout"] and bare["raised"] == recorded["raised"] and not diffs)
        same_all += ok
        print(f"| {name} | {(bare['raised'] or '-')[:60]} | {bare['stdout'] == recorded['stdout']} | "
              f"{bare['raised'] == recorded['raised']} | {'yes' if not diffs else diffs[0][:80]} | {status[:80]} |")
    print(f"\n{same_all} of {len(programs)} programs ran the same recorded as bare.")


def _run(torch: Any, code: str, mode: str) -> tuple[float, dict[str, Any], Any]:
    import gradtrace

    torch.manual_seed(0)
    ns: dict[str, Any] = {"__name__": "__main__"}
    compiled = compile(code, "<snippet>", "exec")
    _sync(torch)
    start = time.perf_counter()
    doc = None
    with torch.device(DEVICE), contextlib.redirect_stdout(io.StringIO()):
        if mode == "bare":
            exec(compiled, ns)
        else:
            with gradtrace.record(tensor_budget=(256 << 20) if mode == "tensors" else None) as rec:
                exec(compiled, ns)
            doc = rec.document()
            doc.id  # noqa: B018 - the id and analysis are computed on first use; time them
    _sync(torch)
    return time.perf_counter() - start, ns, doc


def _leaf_grads(torch: Any, ns: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, value in ns.items():
        if isinstance(value, torch.nn.Module):
            for pname, p in value.named_parameters():
                if p.grad is not None:
                    out[f"{name}.{pname}"] = p.grad
    return out


def kept(torch: Any) -> None:
    from test_tensor_oracle import GPT_LIKE

    from programs import ADAM_20, GAN_STEP, GRU_200, TRANSFORMER_6

    print(f"\n### kept on {DEVICE}: each parameter's last .grad in the tensor file against the bare run\n")
    print("| program | parameters | bit-equal | within float32 tolerance | not kept |")
    print("| --- | --- | --- | --- | --- |")
    programs = {"GRU-200": GRU_200, "Adam-20": ADAM_20, "transformer-6": TRANSFORMER_6,
                "GAN step": GAN_STEP, "GPT-like": GPT_LIKE}
    if DEVICE == "cuda":
        programs["AMP fp16 + GradScaler"] = AMP_FP16
    for name, code in programs.items():
        _, bare_ns, _ = _run(torch, code, "bare")
        _, _, doc = _run(torch, code, "tensors")
        bare = _leaf_grads(torch, bare_ns)
        by_param = {}
        for node in doc.graph.nodes:  # named from this module's frame: ns['model'].0.weight
            name_here = re.sub(r"^ns\['(\w+)'\]", r"\1", node.name or "")
            if node.kind == "tensor" and name_here in bare and node.grad_history:
                # .grad at the end: the last accumulation, or an edit made after it (GradScaler's
                # unscale_, clipping: docs/CONTRACT.md, grad_edits)
                last = node.grad_history[-1].key
                for edit in node.grad_edits or ():
                    if edit.at == len(node.grad_history) and edit.value is not None:
                        last = edit.value.key
                by_param[name_here] = last
        equal = close = missing = 0
        for pname, grad in bare.items():
            key = by_param.get(pname)
            try:
                got = doc.tensor(key) if key else None
            except KeyError:
                got = None
            if got is None:
                missing += 1
                continue
            got = torch.as_tensor(got).to(grad.device)
            equal += bool(torch.equal(got, grad))
            close += bool(torch.allclose(got, grad, rtol=1e-5, atol=1e-6))
        print(f"| {name} | {len(bare)} | {equal} | {close} | {missing} |")


def cost(torch: Any, repeats: int) -> None:
    from test_tensor_oracle import GPT_LIKE

    from programs import ADAM_20, GRU_200, TRANSFORMER_6

    print(f"\n### cost on {DEVICE}, median of {repeats}\n")
    print("| program | bare | record + document | ratio | with tensor file | ratio | against record |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, code in {"GRU-200": GRU_200, "Adam-20": ADAM_20, "transformer-6": TRANSFORMER_6,
                       "GPT-like": GPT_LIKE}.items():
        for mode in ("bare", "record", "tensors"):  # warm every path once
            _run(torch, code, mode)
        times = {m: statistics.median(_run(torch, code, m)[0] for _ in range(repeats))
                 for m in ("bare", "record", "tensors")}
        b, r, t = times["bare"], times["record"], times["tensors"]
        print(f"| {name} | {b * 1e3:.1f} ms | {r * 1e3:.1f} ms | {r / b:.2f}× | {t * 1e3:.1f} ms | {t / b:.2f}× | "
              f"{t / r:.2f}× |")


def main() -> None:
    import torch

    from gradtrace.capture import native

    global DEVICE
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    repeats = int(args[0]) if args else 5
    if "--cpu" in sys.argv:
        DEVICE = "cpu"
    elif not torch.cuda.is_available():
        print("no CUDA device: nothing to measure (--cpu runs the tables on the CPU)")
        return
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU"
    print(f"torch {torch.__version__}, {name}, kernels: "
          f"{'C++ core' if native.default_native() else 'Python twin'}")
    tables = [a for a in ("faithful", "kept", "cost") if f"--{a}" in sys.argv] or ["faithful", "kept", "cost"]
    if "faithful" in tables:
        faithful(torch)
    if "kept" in tables:
        kept(torch)
    if "cost" in tables:
        cost(torch, repeats)


if __name__ == "__main__":
    main()
