"""The one error hierarchy of gradtrace; ``api.errors`` maps it to HTTP in one place.

::

    GradtraceError                      500 internal (never expected to reach a user)
    ├── RequestRejected                 4xx: the request itself was refused
    │   ├── InvalidRequest              422 invalid_request
    │   ├── PayloadTooLarge             413 payload_too_large
    │   ├── UnsupportedMediaType        415 unsupported_media_type
    │   ├── Forbidden                   403 forbidden (e.g. a wrong share delete token)
    │   ├── NotFound                    404 not_found
    │   ├── InvalidRange                400 invalid_range (a Range header that does not parse)
    │   ├── RangeNotSatisfiable         416 range_not_satisfiable (carries the file's size)
    │   ├── DeviceUnavailable           422 device_unavailable (cuda asked, none here)
    │   └── RateLimited                 429 rate_limited (carries retry_after)
    ├── TensorFileDamaged               409 tensor_file_damaged (a stored file that cannot be served)
    └── ServiceUnavailable              503 unavailable (carries retry_after)
        ├── PoolSaturated               503 pool_saturated
        └── StorageUnavailable          503 storage_unavailable

A snippet that fails, times out or hits a limit is *not* an error here: it is a normal run
document with a status (docs/CONTRACT.md).
"""

from __future__ import annotations


class GradtraceError(Exception):
    """Base of every error gradtrace raises on purpose."""

    status_code = 500
    code = "internal"

    def __init__(self, message: str, *, detail: object | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class RequestRejected(GradtraceError):
    status_code = 400
    code = "bad_request"


class InvalidRequest(RequestRejected):
    status_code = 422
    code = "invalid_request"


class PayloadTooLarge(RequestRejected):
    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(RequestRejected):
    status_code = 415
    code = "unsupported_media_type"


class Forbidden(RequestRejected):
    status_code = 403
    code = "forbidden"


class NotFound(RequestRejected):
    status_code = 404
    code = "not_found"


class InvalidRange(RequestRejected):
    status_code = 400
    code = "invalid_range"


class RangeNotSatisfiable(RequestRejected):
    """No byte of the asked range exists; ``size`` goes into ``Content-Range: bytes */size``."""

    status_code = 416
    code = "range_not_satisfiable"

    def __init__(self, message: str, *, size: int, detail: object | None = None) -> None:
        super().__init__(message, detail=detail)
        self.size = size


class DeviceUnavailable(RequestRejected):
    status_code = 422
    code = "device_unavailable"


class RateLimited(RequestRejected):
    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: float, detail: object | None = None) -> None:
        super().__init__(message, detail=detail)
        self.retry_after = retry_after


class TensorFileDamaged(GradtraceError):
    """A stored tensor file whose bytes do not hold together (truncated, a header that does
    not parse, a hash that does not match).

    NOTE [damaged tensor files answer 409]
        The request is fine and retrying will not help, so neither a 4xx about the request
        (400/422) nor a 503; a 500 would say the server has a bug. 409 says what is true: the
        stored resource is in a state that cannot satisfy the request.
    """

    status_code = 409
    code = "tensor_file_damaged"


class ServiceUnavailable(GradtraceError):
    status_code = 503
    code = "unavailable"

    def __init__(self, message: str, *, retry_after: float = 1.0, detail: object | None = None) -> None:
        super().__init__(message, detail=detail)
        self.retry_after = retry_after


class PoolSaturated(ServiceUnavailable):
    code = "pool_saturated"


class StorageUnavailable(ServiceUnavailable):
    code = "storage_unavailable"
