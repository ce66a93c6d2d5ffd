"""``GET /api/lessons``: the lesson gallery (title, introduction, code), read from
:mod:`gradtrace.lessons`, the one source the page, the tests and the benchmarks share."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from gradtrace.lessons import all_lessons

router = APIRouter(prefix="/api/lessons", tags=["lessons"])


class LessonOut(BaseModel):
    number: int
    id: str
    stem: str
    title: str
    intro: str
    code: str


@router.get("", response_model=list[LessonOut], summary="The lessons, in order")
def list_lessons() -> list[dict[str, object]]:
    return [lesson.as_json() for lesson in all_lessons()]
