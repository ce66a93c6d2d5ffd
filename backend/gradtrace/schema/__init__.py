"""The graph document: pydantic models shared by the API, storage and the notebook client.

This package must never import torch: the web process loads it.
"""

from gradtrace.schema.canonical import canonical_json, content_hash, document_id
from gradtrace.schema.document import (
    SCHEMA_VERSION,
    VALUES_LIMIT,
    BackwardPass,
    Cut,
    Edge,
    Event,
    Graph,
    MemorySummary,
    Node,
    RunDocument,
    RunError,
    SavedTensor,
    Status,
    TensorFile,
    TensorStats,
    TensorValue,
)
from gradtrace.schema.requests import ErrorBody, ErrorResponse, RunRequest, ShareCreated, ShareRequest

__all__ = [
    "SCHEMA_VERSION", "VALUES_LIMIT", "BackwardPass", "Cut", "Edge", "ErrorBody", "ErrorResponse",
    "Event", "Graph", "MemorySummary", "Node", "RunDocument", "RunError", "RunRequest",
    "SavedTensor", "ShareCreated", "ShareRequest", "Status", "TensorFile", "TensorStats", "TensorValue",
    "canonical_json", "content_hash", "document_id",
]
