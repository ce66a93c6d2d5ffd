"""The lessons live in the package (gradtrace.lessons), and the page and the API serve them."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from conftest import Server
from gradtrace.lessons import SNIPPETS, LessonError, all_lessons, lesson, parse_lesson

ROOT = Path(__file__).resolve().parent.parent


def test_fifteen_lessons_numbered_in_order_with_a_title_an_intro_and_code() -> None:
    lessons = all_lessons()
    assert [item.number for item in lessons] == list(range(1, 16))
    assert len({item.id for item in lessons}) == 15
    for item in lessons:
        assert item.title and len(item.intro) > 40 and item.code.startswith("#"), item.stem
        compile(item.code, item.stem, "exec")  # the code is valid Python on its own
        assert '"""' not in item.code.splitlines()[0]
    assert lesson("loop") is lesson("03_loop")
    with pytest.raises(KeyError):
        lesson("no_such_lesson")


def test_a_malformed_lesson_file_is_refused_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "01_bad.py"
    bad.write_text("import torch\n")
    with pytest.raises(LessonError, match=r"01_bad\.py: a lesson starts with a docstring"):
        parse_lesson(bad)
    (tmp_path / "x.py").write_text('"""T\n\nIntro."""\nx = 1\n')
    with pytest.raises(LessonError, match=r"NN_name\.py"):
        parse_lesson(tmp_path / "x.py")


def test_nothing_in_the_project_reads_or_cites_a_folder_outside_the_clone() -> None:
    tracked = [ROOT / p for p in __import__("subprocess").run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()]
    outside = re.compile(r"\.\./shared|GRADTRACE_SHARED_DIR|parents?\b[^\n]{0,12}/ \"shared\"")
    offenders = [str(p.relative_to(ROOT)) for p in tracked
                 if p.is_file() and p.suffix in {".py", ".js", ".mjs", ".md", ".html", ".toml", ".yml", ".css", ""}
                 and p.name != "test_lessons.py" and outside.search(p.read_text(errors="replace"))]
    assert offenders == []


def test_the_api_and_the_page_serve_the_lessons_from_the_package(live_server: Server) -> None:
    r = httpx.get(live_server.url + "/api/lessons", timeout=30)
    assert r.status_code == 200
    body = r.json()
    assert [item["stem"] for item in body] == [item.stem for item in all_lessons()]
    assert body[2]["code"] == lesson("loop").code and body[2]["title"] == lesson("loop").title
    page = httpx.get(live_server.url + "/", timeout=30).text
    assert 'id="gt-lessons"' in page and "A loop unrolls" in page


def test_the_lesson_files_ship_in_the_package_data() -> None:
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "snippets/*.py" in data["gradtrace.lessons"]
    assert sorted(SNIPPETS.glob("*.py"))
