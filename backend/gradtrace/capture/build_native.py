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
    source).
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


def target() -> Path:
    return HERE / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"


class BuildError(RuntimeError):
    """The core could not be built; the message says what is missing."""


def command(output: Path) -> list[str]:
    """The compiler command line for ``output``."""
    import torch
    from torch.utils.cpp_extension import include_paths, library_paths

    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise BuildError("no C++ compiler: install g++ (Debian: apt-get install g++)")
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


def cache_target() -> Path:
    """Where a first-use build goes: a per-user cache keyed by everything the binary depends on."""
    import torch

    h = hashlib.sha256()
    for p in [SOURCE, *sorted(PARTS.glob("*.h"))]:
        h.update(p.read_bytes())
    h.update(f"{torch.__version__}|{sys.version}|{sysconfig.get_config_var('EXT_SUFFIX')}".encode())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gradtrace" / "native"
    return base / h.hexdigest()[:20] / target().name


def load_or_build() -> ModuleType | None:
    """The core from the per-user cache, compiled there first if needed (NOTE [building the
    core]); None when it cannot be built here, after saying why once on stderr."""
    out = cache_target()
    if not out.exists():
        print("gradtrace: compiling the C++ capture core for this torch, once (about a minute)…", file=sys.stderr)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
                partial = Path(tmp) / out.name
                proc = subprocess.run(command(partial), capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise BuildError(f"compiling {SOURCE.name} failed:\n{proc.stderr[-2000:]}")
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
