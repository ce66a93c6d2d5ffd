"""The project's layout promises: the package list, the torch boundary, the settings table."""

from __future__ import annotations

import tomllib
from pathlib import Path

from gradtrace.cli import settings_table

ROOT = Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_python_package_in_the_tree_is_listed_in_pyproject() -> None:
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT / "backend").parts)
        for p in (ROOT / "backend").rglob("__init__.py")
    }
    found.add("gradtrace.frontend")
    assert found == listed, f"missing from pyproject: {found - listed}; stale: {listed - found}"


def test_the_version_is_stated_once_for_the_code_and_once_for_the_wheel_and_they_agree() -> None:
    import gradtrace
    from gradtrace.version import __version__

    assert _pyproject()["project"]["version"] == __version__ == gradtrace.__version__


def test_torch_is_pinned_exactly_to_the_cpu_build_on_disk() -> None:
    deps = _pyproject()["project"]["dependencies"]
    assert "torch==2.13.0" in deps


def test_readme_lists_every_setting_with_its_default() -> None:
    readme = (ROOT / "README.md").read_text()
    for line in settings_table().splitlines()[2:]:
        assert line in readme, f"README's configuration table lacks or misstates: {line}"


def test_the_page_ships_inside_the_package() -> None:
    from gradtrace import frontend

    assert (frontend.TEMPLATES / "index.html").is_file()
    data = _pyproject()["tool"]["setuptools"]["package-data"]["gradtrace.frontend"]
    assert "templates/*.html" in data and "dist/*.js" in data and "dist/*.css" in data  # bundles, not source maps
