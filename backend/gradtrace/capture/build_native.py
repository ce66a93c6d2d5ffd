"""Build the capture core (``_native.cpp``) next to its source: ``python -m gradtrace.capture.build_native``.

NOTE [building the core]
    ``make install`` runs this once after torch is installed (about 25 s on two cores). It calls
    the C++ compiler directly with the include and library paths of the installed torch, the
    flags torch itself was built with (C++ ABI, pybind11 ABI), and Python's headers: no
    setuptools build isolation (which would fetch a second torch) and no ninja. The result is
    ``_native<EXT_SUFFIX>`` in this package, found by :mod:`gradtrace.capture.native`. Without
    it capture still works, on Python hooks, several times slower (NOTE [why C++] in the
    source).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

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
