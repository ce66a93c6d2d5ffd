"""The lessons: short snippets a learner runs first, one file each in ``lessons/snippets/``.

Each file is a Python script whose module docstring holds the lesson's title (first line) and
its introduction (the paragraph after it); the code is everything after the docstring, so the
page, the API, the golden tests, the sandbox tests and the benchmarks all run the same text.
The file name gives the order and the id: ``03_loop.py`` is lesson 3, id ``loop``.

NOTE [exercises in lesson files]
    A lesson may end its docstring with an exercise: a paragraph that starts ``Exercise:`` (the
    task), then a ``Goals:`` line and one goal per line, written as the page shows them
    (``- no hint grad-accumulated``; the grammar: NOTE [the goal lines] in
    ``analysis/goals/parse.py``). Its starting code is ``snippets/exercises/NN_name.py`` and
    its reference solution ``snippets/exercises/NN_name.solution.py``: the code a learner
    starts from fails the goals, the solution passes them, and the comparing goals
    (``x.grad equals the reference``) hold a run against the solution's run.

NOTE [lessons are data]
    The snippets are never imported: they are parsed with :mod:`ast` (no torch, so the web
    process can serve them) and run only by capture, in the sandbox or a test. ruff and mypy
    leave ``snippets/`` alone: they are a learner's code, not ours.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import asdict, dataclass
from pathlib import Path

SNIPPETS = Path(__file__).resolve().parent / "snippets"
EXERCISES = SNIPPETS / "exercises"
_NAME = re.compile(r"^(\d{2})_([a-z0-9_]+)\.py$")


class LessonError(ValueError):
    """A lesson file that does not follow the format (a bug in the package, caught by tests)."""


@dataclass(frozen=True)
class Exercise:
    """A lesson's exercise (NOTE [exercises in lesson files])."""

    task: str
    goals: tuple[str, ...]
    """The goal lines as the teacher wrote them, without their ``-``."""
    start: str
    """The code the learner starts from (it fails the goals)."""
    solution: str
    """The reference solution (it passes them)."""


@dataclass(frozen=True)
class Lesson:
    number: int
    id: str
    """The file name without its number: ``chain_rule``."""
    stem: str
    """The file name without ``.py``: ``01_chain_rule``."""
    title: str
    intro: str
    code: str
    exercise: Exercise | None = None

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def parse_lesson(path: Path) -> Lesson:
    """One lesson from its file (see the module docstring for the format)."""
    m = _NAME.match(path.name)
    if m is None:
        raise LessonError(f"{path.name}: a lesson file is named NN_name.py")
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=path.name)
    doc = ast.get_docstring(tree, clean=True)
    first = tree.body[0] if tree.body else None
    if not doc or first is None or first.end_lineno is None:
        raise LessonError(f"{path.name}: a lesson starts with a docstring (title, blank line, introduction)")
    doc, exercise = _split_exercise(path, doc)
    title, _, intro = doc.partition("\n")
    if not title.strip() or not intro.strip():
        raise LessonError(f"{path.name}: the docstring needs a title line and an introduction")
    code = "".join(text.splitlines(keepends=True)[first.end_lineno:]).lstrip("\n")
    if not code.strip():
        raise LessonError(f"{path.name}: no code after the docstring")
    return Lesson(number=int(m.group(1)), id=m.group(2), stem=path.stem, title=title.strip(),
                  intro=" ".join(intro.split()), code=code, exercise=exercise)


def _split_exercise(path: Path, doc: str) -> tuple[str, Exercise | None]:
    """The docstring without its exercise, and the exercise (NOTE [exercises in lesson files])."""
    head, sep, tail = doc.partition("\nExercise:")
    if not sep:
        return doc, None
    task, gsep, goal_text = tail.partition("\nGoals:")
    goals = tuple(g.strip().lstrip("-").strip() for g in goal_text.splitlines() if g.strip())
    if not gsep or not goals or not task.strip():
        raise LessonError(f"{path.name}: an exercise has a task, then 'Goals:' and one goal per line")
    start, solution = EXERCISES / path.name, EXERCISES / f"{path.stem}.solution.py"
    if not start.is_file() or not solution.is_file():
        raise LessonError(f"{path.name}: an exercise needs exercises/{start.name} and exercises/{solution.name}")
    return head, Exercise(task=" ".join(task.split()), goals=goals, start=start.read_text(encoding="utf-8"),
                          solution=solution.read_text(encoding="utf-8"))


@functools.cache
def all_lessons() -> tuple[Lesson, ...]:
    """Every lesson, in order."""
    return tuple(sorted((parse_lesson(p) for p in SNIPPETS.glob("*.py")), key=lambda lesson: lesson.number))


def lesson(key: str) -> Lesson:
    """A lesson by id (``loop``) or stem (``03_loop``); KeyError when there is none."""
    for item in all_lessons():
        if key in (item.id, item.stem):
            return item
    raise KeyError(key)
