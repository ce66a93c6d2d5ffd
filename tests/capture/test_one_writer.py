"""One canonical writer and one document id: nothing in the package hashes or writes a document
any other way (NOTE [one serialisation] in ``gradtrace/schema/canonical.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "gradtrace"
HOME = PACKAGE / "schema" / "canonical.py"
SHA256_ELSEWHERE = {
    "capture/build_native.py": "the cache folder of the compiled core",
    "storage/store.py": "API tokens, never documents",
    "api/services.py": "the snippet's hash in the access log",
    "sandbox/kinds/registry.py": "a unique module name for a job kind loaded from a file",
    "api/fairshare.py": "a client's API key, kept only as a hash for its fair share",
    "api/error_page.py": "the CSP hash that admits the error page's own <style>",
    "capture/tensorfile.py": "the tensor file's SHA-256, which the document records (its id covers it)",
    "api/tensors.py": "the tensor file's SHA-256 checked while it streams (a damaged stored file is cut short)",
    "storage/tensor_rows.py": "the tensor file's SHA-256 checked against what the run recorded",
}


def _sources() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(PACKAGE)), ast.parse(p.read_text(), str(p)))
            for p in sorted(PACKAGE.rglob("*.py"))]


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def test_only_the_schema_hashes_documents() -> None:
    users = {path for path, tree in _sources() for c in _calls(tree) if _name(c) == "sha256"}
    assert users - {"schema/canonical.py"} == set(SHA256_ELSEWHERE), "a new hash: is it a document id?"
    home = ast.parse(HOME.read_text())
    cuts = [n for n in ast.walk(home) if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice)
            and isinstance(n.value, ast.Call) and _name(n.value) == "hexdigest"]
    assert len(cuts) == 1, "one place cuts a hash to an id"
    assert ast.unparse(cuts[0].slice) == ":ID_LENGTH"


def test_no_hash_is_cut_by_a_literal_length() -> None:
    for path, tree in _sources():
        for n in ast.walk(tree):
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice) and isinstance(n.value, ast.Call) \
                    and _name(n.value) == "hexdigest":
                assert not isinstance(n.slice.upper, ast.Constant), f"{path}: a literal length, not a named one"


def test_only_the_schema_writes_sorted_json() -> None:
    """Canonical JSON is sorted, compact JSON: every orjson OPT_SORT_KEYS and every compact
    json.dumps(sort_keys=True) lives in the one writer (the CLI's is for people to read)."""
    writers = set()
    for path, tree in _sources():
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and n.attr == "OPT_SORT_KEYS":
                writers.add(path)
            if isinstance(n, ast.Call) and {"sort_keys", "separators"} <= {k.arg for k in n.keywords}:
                writers.add(path)
    assert writers == {"schema/canonical.py"}


def test_the_web_process_and_capture_get_ids_from_the_one_function() -> None:
    """Whoever sets a document's id takes it from canonical_with_id (or document_id, built on it)."""
    import gradtrace.schema.canonical as canonical

    assert canonical.document_id.__code__.co_names == ("canonical_with_id",)
    for path, tree in _sources():
        if path == "schema/canonical.py":
            continue
        for n in ast.walk(tree):
            targets = n.targets if isinstance(n, ast.Assign) else []
            for t in targets:
                for leaf in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(leaf, ast.Subscript) and ast.unparse(leaf.slice) == "'id'":
                        value = ast.unparse(n.value)  # type: ignore[attr-defined]
                        assert "canonical_with_id" in value or "document_id" in value, f"{path}: {value}"
