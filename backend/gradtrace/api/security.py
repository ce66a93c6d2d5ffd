"""Security headers on every answer, and ``HEAD`` wherever ``GET`` answers.

NOTE [security headers]
    The service shows strangers' code, output and errors on share pages, so every answer
    (pages, JSON, static files, errors, the middleware's own refusals) carries:

    * ``Content-Security-Policy``: scripts, styles, workers, fetches and images only from this
      origin (plus ``data:``/``blob:`` images and ``blob:`` workers, which the page makes
      itself: the favicon, exports and the layout worker); no inline script, no ``eval``, no
      remote origin, no plugins, no ``<base>``; forms post only here. The page and ``/docs``
      have no inline script at all (``frontend/templates/index.html``, :mod:`gradtrace.api.docs`).
      ``frame-ancestors`` is ``'self'`` unless ``GRADTRACE_FRAME_ANCESTORS`` names the sites
      that may embed the viewer.
    * ``X-Frame-Options`` for browsers that ignore ``frame-ancestors`` (``SAMEORIGIN`` or
      ``DENY``; with other embedders it is left out, since it cannot name them).
    * ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: strict-origin-when-cross-origin``
      (a share link leaks no path to other sites), ``Cross-Origin-Opener-Policy: same-origin``.

    A response that sets its own ``Content-Security-Policy`` keeps it: the pages do, for
    NOTE [style nonce]. The saved HTML file has
    no server, so it carries its own policy in a ``<meta>`` tag (NOTE [saved file policy] in
    ``gradtrace.notebook.html``).

NOTE [style nonce]
    CodeMirror (the page's code editor) puts its styles in one ``<style>`` element of the
    document; ``style-src 'self'`` refuses it. Each page answer (``api/pages.py``) therefore
    carries a fresh random nonce, in its policy (``style-src 'self' 'nonce-…'``) and in the
    page's ``#gt-config``, and ``frontend/src/ui/editor.js`` hands it to CodeMirror
    (``EditorView.cspNonce``). A nonce admits styles only, never a script.

NOTE [HEAD]
    FastAPI's routes answer only the methods they name, so ``HEAD /`` was a 405 and uptime
    checkers and link previews failed. This middleware answers ``HEAD`` as the same ``GET``
    without its body: the status and headers (``Content-Length`` included) are the ``GET``'s.
    The server below still sees ``HEAD`` in its own scope, so it sends no body either.
"""

from __future__ import annotations

import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "font-src 'self'; connect-src 'self'; worker-src 'self' blob:; manifest-src 'self'; "
    "base-uri 'none'; form-action 'self'; object-src 'none'; frame-ancestors {ancestors}"
)


def content_security_policy(frame_ancestors: str, *, style_nonce: str | None = None) -> str:
    """The service's policy with ``frame-ancestors`` set to ``frame_ancestors`` (a source list),
    and inline styles that carry ``style_nonce`` allowed (NOTE [style nonce])."""
    policy = CONTENT_SECURITY_POLICY.format(ancestors=frame_ancestors)
    if style_nonce:
        policy = policy.replace("style-src 'self'", f"style-src 'self' 'nonce-{style_nonce}'")
    return policy


def style_nonce() -> str:
    """A fresh nonce for one page answer (NOTE [style nonce])."""
    return secrets.token_urlsafe(18)


def security_headers(frame_ancestors: str = "'self'") -> list[tuple[bytes, bytes]]:
    """The headers NOTE [security headers] lists, as ASGI header pairs."""
    headers = [
        (b"content-security-policy", content_security_policy(frame_ancestors).encode("latin-1")),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"strict-origin-when-cross-origin"),
        (b"cross-origin-opener-policy", b"same-origin"),
    ]
    frame_option = {"'self'": b"SAMEORIGIN", "'none'": b"DENY"}.get(frame_ancestors.strip())
    if frame_option is not None:
        headers.append((b"x-frame-options", frame_option))
    return headers


class SecurityHeadersMiddleware:
    """Adds :func:`security_headers` to every HTTP answer and answers ``HEAD`` (NOTE [style nonce]
    CodeMirror (the page's code editor) puts its styles in one ``<style>`` element of the
    document; ``style-src 'self'`` refuses it. Each page answer (``api/pages.py``) therefore
    carries a fresh random nonce, in its policy (``style-src 'self' 'nonce-…'``) and in the
    page's ``#gt-config``, and ``frontend/src/ui/editor.js`` hands it to CodeMirror
    (``EditorView.cspNonce``). A nonce admits styles only, never a script.

NOTE [HEAD])."""

    def __init__(self, app: ASGIApp, *, frame_ancestors: str = "'self'") -> None:
        self.app = app
        self.headers = security_headers(frame_ancestors)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        if head:
            scope = {**scope, "method": "GET"}  # a copy: the server's own scope still says HEAD

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in self.headers if n not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            elif head and message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app(scope, receive, send_wrapper)
