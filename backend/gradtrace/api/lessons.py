"""``GET /api/lessons``: the lesson gallery (title, introduction, code), read from
:mod:`gradtrace.lessons`, the one source the page, the tests and the benchmarks share."""

from __future__ import annotations

from fastapi import APIRouter

from gradtrace.lessons import Lesson, all_lessons

router = APIRouter(prefix="/api/lessons", tags=["lessons"])


@router.get("", response_model=list[Lesson], summary="The lessons, in order")
def list_lessons() -> list[Lesson]:
    return list(all_lessons())
