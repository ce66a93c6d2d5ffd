"""The notebook client: ``gradtrace.Client(base_url)`` over the REST API (httpx).

::

    import gradtrace
    gt = gradtrace.Client("http://127.0.0.1:8000")
    doc = gt.run("x = torch.ones(2, requires_grad=True)\\n(x * x).sum().backward()")
    doc                      # in Jupyter: the widget (with anywidget), else a picture and a summary
    url = gt.share(doc)      # or gt.share(doc.id) while the run is kept
    same = gt.get_share(url.rsplit("/", 1)[-1])

Every refusal of the service raises :class:`GradtraceAPIError`, which carries the API's error
(``status``, ``code``, ``message``, ``detail``, and ``retry_after`` for 429/503). A snippet
that fails is *not* an exception: its document has ``status == "error"`` and an ``error``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
from pydantic import PrivateAttr

from gradtrace.notebook.run import NotebookRunDocument
from gradtrace.notebook.summary import render_html
from gradtrace.schema import RunDocument, document_id
from gradtrace.schema.compare import Comparison
from gradtrace.version import __version__

DEFAULT_TIMEOUT_S = 120.0


class GradtraceAPIError(Exception):
    """The service refused a request; the fields are those of its ``{"error": ...}`` body."""

    def __init__(self, status: int, code: str, message: str, detail: object | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.detail = detail
        self.retry_after = retry_after

    @classmethod
    def from_response(cls, response: httpx.Response) -> GradtraceAPIError:
        retry = response.headers.get("retry-after")
        retry_after = float(retry) if retry and retry.replace(".", "", 1).isdigit() else None
        try:
            err = response.json()["error"]
            return cls(response.status_code, str(err["code"]), str(err["message"]), err.get("detail"),
                       retry_after)
        except (ValueError, KeyError, TypeError):
            text = response.text[:300] or response.reason_phrase
            return cls(response.status_code, "http_error", text, None, retry_after)


class ClientRunDocument(NotebookRunDocument):
    """A run document that knows the server it came from, so it can link to its page."""

    _base_url: str | None = PrivateAttr(default=None)
    _share_url: str | None = PrivateAttr(default=None)

    @property
    def _run_url(self) -> str | None:
        """The run's page on its server (``/r/{id}``, read-only) or its share link."""
        if self._share_url:
            return self._share_url
        return f"{self._base_url}/r/{quote(self.id, safe='')}" if self._base_url else None

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """In a notebook with anywidget, the run shows as the widget; else as ``_repr_html_``."""
        from gradtrace.notebook.show import widget_available

        if widget_available():
            from gradtrace.notebook.widget import GradtraceWidget

            bundle: Any = GradtraceWidget(self, run_url=self._run_url)._repr_mimebundle_()
            data = dict(bundle[0] if isinstance(bundle, tuple) else bundle)
            return {**data, "text/html": self._repr_html_()}
        return {"text/html": self._repr_html_(), "text/plain": repr(self)}

    def _repr_html_(self) -> str:
        return render_html(self, run_url=self._run_url)


class Client:
    """A gradtrace service at ``base_url`` (for example ``http://127.0.0.1:8000``)."""

    def __init__(self, base_url: str = "http://127.0.0.1:8000", *, timeout: float = DEFAULT_TIMEOUT_S,
                 headers: dict[str, str] | None = None, transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        all_headers = {"User-Agent": f"gradtrace-client/{__version__}", **(headers or {})}
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport,
                                  headers=all_headers)

    # --- the API -----------------------------------------------------------------------------

    def run(self, code: str, device: str = "cpu", seed: int | None = 0) -> ClientRunDocument:
        """Run ``code`` on the service; answers its run document (any run status)."""
        return self._document(self._request("POST", "/api/runs",
                                             json={"code": code, "device": device, "seed": seed}))

    def get_run(self, run_id: str) -> ClientRunDocument:
        """A run stored on the service (runs are kept for the service's retention period)."""
        return self._document(self._request("GET", f"/api/runs/{_path_id(run_id)}"))

    def share(self, doc_or_run_id: RunDocument | dict[str, Any] | str) -> str:
        """Create (or find) the share link of a document or of a stored run; answers its URL."""
        if isinstance(doc_or_run_id, str):
            body: dict[str, Any] = {"run_id": doc_or_run_id}
        elif isinstance(doc_or_run_id, RunDocument):
            body = {"document": doc_or_run_id.model_dump(mode="json", by_alias=True)}
        elif isinstance(doc_or_run_id, dict):
            body = {"document": doc_or_run_id}
        else:
            raise TypeError(f"share() takes a RunDocument, a document dict or a run id, "
                            f"not {type(doc_or_run_id).__name__}")
        data = self._create_share(body)
        url = str(data["url"])
        if isinstance(doc_or_run_id, ClientRunDocument):
            doc_or_run_id._share_url = url
        return url

    def _create_share(self, body: dict[str, Any]) -> dict[str, Any]:
        """Share an unmodified run by its id when the server still keeps it (a few ms, nothing
        re-sent); otherwise, or for an edited document, post the whole document."""
        doc = body.get("document")
        if isinstance(doc, dict) and isinstance(doc.get("id"), str) and doc["id"] == document_id(doc):
            try:
                return dict(self._request("POST", "/api/shares", json={"run_id": doc["id"]}).json())
            except GradtraceAPIError as exc:
                if exc.status != 404:
                    raise
        return dict(self._request("POST", "/api/shares", json=body).json())

    def get_share(self, share_id: str) -> ClientRunDocument:
        """The document behind a share id (or a full share URL)."""
        share_id = share_id.rstrip("/").rsplit("/", 1)[-1]
        doc = self._document(self._request("GET", f"/api/shares/{_path_id(share_id)}"))
        doc._share_url = f"{self.base_url}/s/{share_id}"
        return doc

    def delete_share(self, share_id: str, delete_token: str) -> None:
        self._request("DELETE", f"/api/shares/{_path_id(share_id)}",
                      headers={"X-Delete-Token": delete_token})

    def compare(self, a: RunDocument | dict[str, Any] | str, b: RunDocument | dict[str, Any] | str) -> Comparison:
        """Compare two runs on the service (``POST /api/compare``): each a document, or the id of
        a share or of a kept run. ``gradtrace.compare`` does the same without a service."""
        body = {"a": _compare_side(a), "b": _compare_side(b)}
        return Comparison.model_validate_json(self._request("POST", "/api/compare", json=body).content)

    def health(self) -> dict[str, Any]:
        data = self._request("GET", "/healthz").json()
        assert isinstance(data, dict)
        return data

    # --- plumbing ----------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise GradtraceAPIError(0, "timeout", f"no answer from {self.base_url} in time: {exc}") from exc
        except httpx.TransportError as exc:
            raise GradtraceAPIError(0, "unreachable", f"cannot reach {self.base_url}: {exc}") from exc
        if response.status_code >= 400:
            raise GradtraceAPIError.from_response(response)
        return response

    def _document(self, response: httpx.Response) -> ClientRunDocument:
        doc = ClientRunDocument.model_validate_json(response.content)
        doc._base_url = self.base_url
        return doc


def _compare_side(side: RunDocument | dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(side, str):
        return {"share_id": side.rstrip("/").rsplit("/", 1)[-1]}
    if isinstance(side, RunDocument):
        return {"document": side.model_dump(mode="json", by_alias=True)}
    if isinstance(side, dict):
        return {"document": side}
    raise TypeError(f"compare() takes run documents or run/share ids, not {type(side).__name__}")


def _path_id(value: str) -> str:
    return quote(value, safe="")
