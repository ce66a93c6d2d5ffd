"""Build the capture core (``_native.cpp``) next to its source: ``python -m gradtrace.capture.build_native``,
or on first use into a per-user cache (:func:`load_or_build`).

NOTE [building the core]
    ``make install`` runs this once after torch is installed (about 25 s on two cores). A wheel
    (``pip install gradtrace``) carries the source instead, and the first recording compiles it
    into ``~/.cache/gradtrace/native/<key>/`` (``$XDG_CACHE_HOME`` when set), keyed by the source,
    torch's version and the interpreter, so an upgrade of either builds afresh. It calls
    the C++ compiler directly with the include and library paths of the installed torch, the
    flags torch itself was built with (C++ ABI, pybind11 ABI), and Python's headers: no
    setuptools build isolation (which would fetch a second torch) and no ninja. The result is
    ``_native<EXT_SUFFIX>`` in this package, found by :mod:`gradtrace.capture.native`. Without
    it capture still works, on Python hooks, several times slower (NOTE [why C++] in the
    source). A torch outside :data:`SUPPORTED_TORCH` is refused before compiling.

NOTE [what the core relies on]
    The core reaches past torch's and CPython's stable interfaces in these places; each is
    why :data:`SUPPORTED_TORCH` is one minor version wide, and each is what to check first
    when moving it:

    - torch's ``torch/csrc`` headers (``cxx/prelude.h``): ``autograd/function.h`` (``Node``,
      ``add_post_hook``, ``FunctionPostHook``, ``next_edges``, ``sequence_nr``),
      ``autograd/graph_task.h`` (``get_current_graph_task_id``, ``get_current_node``: which
      backward a hook runs in), ``autograd/functions/accumulate_grad.h`` (``AccumulateGrad``
      and its ``variable``), ``autograd/python_function.h`` / ``python_cpp_function.h``
      (``THPFunction::cdata``, ``THPCppFunction``, ``functionToPyObject``),
      ``autograd/python_variable.h`` (``THPVariable_Wrap`` / ``_Unpack`` / ``_Check``),
      ``DynamicTypes.h`` (``getTHPDtype``), ``Exceptions.h``, and ATen's
      ``at::sequence_number::peek`` (lines by sequence number);
    - the mangled C++ name of a custom Function's node class, ``N5torch8autograd6PyNodeE``
      (``kPyNode`` in ``cxx/prelude.h``): libtorch_python does not export ``PyNode``'s
      ``type_info``, so it is compared by name;
    - c10's ``TensorImpl`` / ``StorageImpl`` / ``intrusive_ptr`` layout through the headers
      (the values kernel reads a tensor's data and sizes directly) and torch's pybind11 ABI
      flags (``torch._C._PYBIND11_*``, ``_GLIBCXX_USE_CXX11_ABI``), passed to the compiler;
    - CPython's frame API (``cxx/tracer.h``): ``PyEval_SetTrace`` with a C trace function,
      ``PyFrame_GetCode``, ``PyFrame_GetBack``, ``PyFrame_GetLineNumber`` and
      ``PyCodeObject.co_filename`` read directly (``frameobject.h``), so an interpreter
      whose tracing changes (``sys.monitoring`` replacing ``settrace``) needs a look;
    - the compiled module's name embeds ``EXT_SUFFIX`` and its cache key torch's version and
      ``sys.version``: another interpreter or torch never loads a stale build.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_native.cpp"
PARTS = HERE / "cxx"
"""The parts ``_native.cpp`` includes (one translation unit)."""


SUPPORTED_TORCH = ((2, 13), (2, 14))
"""The torch versions the core builds against: from the first (major, minor) up to, not
including, the second (NOTE [what the core relies on]). ``pyproject.toml`` pins one of them."""


def check_torch(version: str) -> None:
    """Raise BuildError unless torch ``version`` (``2.13.0+cpu``) is in :data:`SUPPORTED_TORCH`."""
    parts = version.split("+")[0].split(".")
    try:
        found = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        raise BuildError(f"cannot read torch's version {version!r}") from None
    first, last = SUPPORTED_TORCH
    if not first <= found < last:
        raise BuildError(f"torch {version} is outside what the capture core supports "
                         f"(>= {first[0]}.{first[1]}, < {last[0]}.{last[1]}): capture runs on Python hooks")


def target() -> Path:
    return HERE / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"


class BuildError(RuntimeError):
    """The core could not be built; the message says what is missing."""


def command(output: Path) -> list[str]:
    """The compiler command line for ``output``."""
    import torch
    from torch.utils.cpp_extension import include_paths, library_paths

    check_torch(str(torch.__version__))
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if cxx is None or shutil.which(cxx) is None:
        raise BuildError(f"no C++ compiler{f' ({cxx} is not there)' if cxx else ''}: "
                         "install g++ (Debian: apt-get install g++)")
    py_include = sysconfig.get_paths()["include"]
    if not (Path(py_include) / "Python.h").exists():
        raise BuildError(f"Python's headers are missing ({py_include}/Python.h): "
                         "install python3-dev (Debian: apt-get install python3.11-dev)")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    flags = ["-O2", "-fopenmp-simd", "-std=c++20", "-shared", "-fPIC", "-fvisibility=hidden", "-w",
             f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-DTORCH_EXTENSION_NAME=_native"]
    for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
        value = getattr(torch._C, f"_PYBIND11_{name}", None)
        if value is not None:
            flags.append(f'-DPYBIND11_{name}="{value}"')
    includes = [f"-I{p}" for p in [*include_paths(), py_include]]
    libs = []
    for p in library_paths():
        libs += [f"-L{p}", f"-Wl,-rpath,{p}"]
    libs += ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
    return [cxx, *flags, *includes, str(SOURCE), *libs, "-o", str(output)]


def build(*, force: bool = False, quiet: bool = False) -> Path:
    """Compile the core unless an up-to-date one exists; returns its path."""
    out = target()
    newest = max(p.stat().st_mtime for p in [SOURCE, *PARTS.glob("*.h")])
    if not force and out.exists() and out.stat().st_mtime >= newest:
        return out
    with tempfile.TemporaryDirectory(dir=HERE) as tmp:
        partial = Path(tmp) / out.name
        cmd = command(partial)
        if not quiet:
            print(f"building {out.name} (C++, ~25 s)", file=sys.stderr)
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"compiling {SOURCE.name} failed:\n{proc.stderr[-4000:]}")
        os.replace(partial, out)  # atomic: a half-written module is never importable
    return out


CACHE_KEY_LENGTH = 20
"""Hex digits of the hash that names a cached build's folder."""


def cache_target() -> Path:
    """Where a first-use build goes: a per-user cache keyed by everything the binary depends on."""
    import torch

    h = hashlib.sha256()
    for p in [SOURCE, *sorted(PARTS.glob("*.h"))]:
        h.update(p.read_bytes())
    h.update(f"{torch.__version__}|{sys.version}|{sysconfig.get_config_var('EXT_SUFFIX')}".encode())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gradtrace" / "native"
    return base / h.hexdigest()[:CACHE_KEY_LENGTH] / target().name


def load_or_build() -> ModuleType | None:
    """The core from the per-user cache, compiled there first if needed (NOTE [building the
    core]); None when it cannot be built here, after saying why once on stderr."""
    out = cache_target()
    failed = out.with_name("FAILED")
    """A compile that failed here is not tried again by every process (each try costs a whole
    compile): its message is kept beside where the core would be, until deleted."""
    if not out.exists():
        try:
            if failed.exists():
                raise BuildError(f"{failed.read_text().strip()} [an earlier attempt; delete {failed} "
                                 "to try again]")
            out.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
                partial = Path(tmp) / out.name
                cmd = command(partial)  # no compiler or headers: said before any "compiling"
                print("gradtrace: compiling the C++ capture core for this torch, once (about a minute)…",
                      file=sys.stderr)
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    message = f"compiling {SOURCE.name} failed:\n{proc.stderr[-2000:]}"
                    failed.write_text(message)
                    raise BuildError(message)
                os.replace(partial, out)
        except (BuildError, OSError) as e:
            print(f"gradtrace: the C++ capture core could not be built ({e}); recording runs on the "
                  "pure-Python kernels instead, several times slower. Install g++ and Python's headers "
                  "to get it.", file=sys.stderr)
            return None
    spec = importlib.util.spec_from_file_location("gradtrace.capture._native", out)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        print(f"gradtrace: the cached capture core ({out}) does not load ({e}); recording runs on the "
              "pure-Python kernels instead.", file=sys.stderr)
        return None
    sys.modules[spec.name] = module
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = ap.parse_args()
    try:
        path = build(force=args.force)
    except BuildError as e:
        print(f"gradtrace: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
