"""Every file a comment or docstring names exists in the repository.

A comment that cites a file sends the reader there; once the file is renamed or was never
written, the comment misleads. This reads the comments and docstrings (not the code: a string
such as a path inside a wheel is data) of ``backend/``, ``tests/``, ``bench/`` and
``frontend/src/`` and checks every ``tests/…py``, ``backend/…py``, ``bench/…py``,
``frontend/…js`` and ``docs/…md`` path they name, plus ``gradtrace/…py`` (read as
``backend/gradtrace/…``). The front end's bundles (``frontend/dist/``) are built, not committed,
so a fresh clone has none: they are not checked.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("backend", "tests", "bench", "frontend/src")
CITED = re.compile(r"(?<![\w/.-])((?:tests|backend|bench|gradtrace)/[\w./-]*\w\.py"
                   r"|frontend/[\w./-]*\w\.js|docs/[\w./-]*\w\.md)\b")
BUILT = "frontend/dist/"
JS_COMMENT = re.compile(r"/\*[\s\S]*?\*/|(?<![:\w\"'`\\])//[^\n]*")

def python_prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python module."""
    found = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:  # module, class and function docstrings, and attribute docstrings
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                found.append((stmt.lineno, stmt.value.value))
    return found


def js_prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every ``/* */`` and ``//`` comment of a JS module (not ``://`` in URLs)."""
    return [(source.count("\n", 0, m.start()) + 1, m.group()) for m in JS_COMMENT.finditer(source)]


def sources() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in (".py", ".js") and not {"node_modules", "__pycache__", "dist"} & set(path.parts):
                files.append(path)
    return files


def missing_citations() -> set[tuple[str, str, int]]:
    """(file, cited path, line) of every cited path that does not exist."""
    missing = set()
    for path in sources():
        source = path.read_text(encoding="utf-8")
        prose = python_prose(source) if path.suffix == ".py" else js_prose(source)
        for line, text in prose:
            for match in CITED.finditer(text):
                cited = match.group(1)
                if cited.startswith(BUILT):
                    continue
                target = ROOT / ("backend/" + cited if cited.startswith("gradtrace/") else cited)
                if not target.exists():
                    missing.add((path.relative_to(ROOT).as_posix(), cited, line))
    return missing


def test_every_path_a_comment_cites_exists() -> None:
    missing = missing_citations()
    assert sorted(missing) == []


def test_the_scan_reads_comments_and_docstrings_but_not_code() -> None:
    source = ('"""Cites tests/a_missing.py."""\n'
              "# and docs/MISSING.md\n"
              "WHEEL_PATH = 'gradtrace/frontend/dist/app.py'\n"
              "def f() -> None:\n"
              '    """backend/nowhere.py"""\n')
    texts = " ".join(text for _, text in python_prose(source))
    assert sorted(CITED.findall(texts)) == ["backend/nowhere.py", "docs/MISSING.md", "tests/a_missing.py"]
    js = "const u = 'http://x/frontend/a.js'; // frontend/src/b.js\n/* docs/C.md */\n"
    assert CITED.findall(" ".join(text for _, text in js_prose(js))) == ["frontend/src/b.js", "docs/C.md"]
