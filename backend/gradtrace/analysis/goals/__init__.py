"""Exercise goals: parsed from the lines a teacher writes (``parse.py``) and checked on a run
document by gradtrace's own judges (``check.py``). Pure: never imports torch."""

from gradtrace.analysis.goals.check import check_goals
from gradtrace.analysis.goals.parse import goal_text, parse_goal, read_goals

__all__ = ["check_goals", "goal_text", "parse_goal", "read_goals"]
