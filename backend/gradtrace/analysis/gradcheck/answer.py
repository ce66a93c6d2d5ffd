"""The gradient check's answer as bytes: one writer and one reader, for the sandbox's child, the
job kind and the routes alike.

NOTE [the answer's bytes]
    The answer is the canonical JSON of a :class:`~gradtrace.schema.gradcheck.GradcheckResult`
    whose ``id`` is the hash of the rest (NOTE [one serialisation] in ``schema/canonical.py``).
    Whatever changes an answer after it was written (the run route fills in the run's node ids
    and its ``run_id``) writes it again with :func:`answer_bytes`, so the id served is always
    the hash of what is served.
"""

from __future__ import annotations

from gradtrace.schema.canonical import canonical_with_id
from gradtrace.schema.gradcheck import GradcheckResult


def answer_bytes(result: GradcheckResult) -> bytes:
    """``result`` as the answer's canonical JSON, its ``id`` the hash of the rest."""
    _, canonical = canonical_with_id(result.model_dump(mode="json"))
    return canonical


def read_answer(raw: bytes | str) -> GradcheckResult:
    """An answer's bytes as a result (pydantic's ValidationError, a ValueError, for bytes that
    are not one)."""
    return GradcheckResult.model_validate_json(raw)
