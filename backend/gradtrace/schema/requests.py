"""Request and answer bodies of the public API (the run document lives in ``document.py``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gradtrace.schema.document import Device
from gradtrace.schema.goals import Reference


class RunRequest(BaseModel):
    """``POST /api/runs``: a snippet, the device it should run on, and the seed."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Python source; torch, nn and F are predefined.")
    device: Device = "cpu"
    seed: int | None = Field(default=0, ge=0, le=2**63 - 1)
    goals: list[str | dict[str, object]] | None = Field(
        default=None, description="Exercise goals to check on the run: goal lines ('no hint grad-accumulated') "
                                  "or goal objects (docs/CONTRACT.md, GoalResult).")
    reference: Reference | None = Field(default=None, description="The run the comparing goals hold this one against.")
    exercise: str | None = Field(default=None, max_length=64,
                                 description="A lesson's id or stem: check its exercise's goals, against its solution.")


class ShareRequest(BaseModel):
    """``POST /api/shares``: either a stored run's id or a whole run document."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = None
    document: dict[str, object] | None = None


class ShareCreated(BaseModel):
    id: str
    url: str
    delete_token: str | None = None


class ErrorBody(BaseModel):
    code: str
    message: str
    detail: object | None = None


class ErrorResponse(BaseModel):
    """Every 4xx/5xx answer has this shape: ``{"error": {code, message, detail}}``."""

    error: ErrorBody
