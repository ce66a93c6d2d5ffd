"""What every document model builds on: the base model and the optional-addition field.

A module of its own so that the document (:mod:`gradtrace.schema.document`) and the models it
holds from elsewhere (:mod:`gradtrace.schema.analysis`) import it, not each other.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def _optional(description: str) -> Any:
    """An optional addition that is left out of the JSON when absent, with its ``description``.

    Additions made after v1 are omitted rather than written as null, so documents written
    before them stay fixed points of the schema (stored fixtures and goldens do not change).
    """
    return Field(default=None, exclude_if=lambda v: v is None, description=description)


class _Model(BaseModel):
    """Base of every document model: unknown fields are kept (forward compatible)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
