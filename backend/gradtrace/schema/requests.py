"""Request and answer bodies of the public API (the run document lives in ``document.py``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gradtrace.schema.document import Device
from gradtrace.schema.goals import Reference


class RunRequest(BaseModel):
    """``POST /api/runs``: a snippet, the device it should run on, and the seed."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Python source; torch, nn and F are predefined.")
    device: Device = Field("cpu", description="`cpu`, `cuda` or `auto` (cuda when the service has it).")
    seed: int | None = Field(default=0, ge=0, le=2**63 - 1, description=(
        "Passed to `torch.manual_seed` before the snippet runs; null for no seeding."))
    goals: list[str | dict[str, object]] | None = Field(
        default=None, description="Exercise goals to check on the run: goal lines ('no hint grad-accumulated') "
                                  "or goal objects (docs/CONTRACT.md, GoalResult).")
    reference: Reference | None = Field(default=None, description="The run the comparing goals hold this one against.")
    exercise: str | None = Field(default=None, max_length=64,
                                 description="A lesson's id or stem: check its exercise's goals, against its solution.")


class ShareRequest(BaseModel):
    """``POST /api/shares``: either a stored run's id or a whole run document."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(None, description="A stored run's id: share that run.")
    document: dict[str, object] | None = Field(None, description=(
        "A whole run document: share it as it is (validated first)."))


class ShareCreated(BaseModel):
    id: str = Field(description="The share's id: the same document always gets the same id.")
    url: str = Field(description="The page that shows it (`/s/{id}`).")
    delete_token: str | None = Field(None, description=(
        "The token that deletes the share (`X-Delete-Token`); only the answer that created it shows it."))


class ErrorBody(BaseModel):
    code: str = Field(description="A stable identifier of the error (`invalid_request`, `not_found`).")
    message: str = Field(description="One sentence for the user.")
    detail: object | None = Field(None, description="What exactly was wrong (the invalid fields), or null.")


class ErrorResponse(BaseModel):
    """Every 4xx/5xx answer has this shape: ``{"error": {code, message, detail}}``."""

    error: ErrorBody = Field(description="The error (`ErrorBody`).")
