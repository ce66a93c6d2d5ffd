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

    A response that sets its own ``Content-Security-Policy`` keeps it: the pages and the error
    page do, for NOTE [styles under the policy]. The saved HTML file has no server, so it
    carries its own policy in a ``<meta>`` tag (NOTE [saved file policy] in
    ``frontend/standalone-csp.mjs``).

NOTE [styles under the policy]
    No policy here says ``'unsafe-inline'``. Every style a page shows comes one of these ways,
    each the only one that fits its case:

    * Style sheets are files of this origin (``/static/app.css``, ``/static/compare.css``):
      ``style-src 'self'``.
    * Styles made by script go in shadow roots as constructed style sheets
      (``new CSSStyleSheet()``, ``shadowRoot.adoptedStyleSheets``), which the policy does not
      govern: the embedded viewer (``frontend/src/embed.js`` ``adoptCss``) does so on the
      compare page, in the notebook widget and in the saved file, and CodeMirror does the same
      by itself inside a shadow root. This needs nothing from the server, so it works under any
      host's policy (JupyterLab, VS Code, a saved file's ``<meta>``), where a nonce could not
      be handed over and a hash would change with every CSS edit. ``<style>`` elements in
      shadow roots are never used.
    * CodeMirror on a document (the playground's editor) always writes one ``<style>`` into
      ``<head>``; a page answer admits it by a fresh nonce: NOTE [style nonce].
    * Fixed inline text in a page that must stand alone is admitted by its SHA-256: the error
      page's ``<style>`` (``api/error_page.py``: it also answers when the service refuses or is
      too busy for a second request) and the saved file's script and template ``<style>``.

    tests/browser's guard (``tests/pageguard.py``) fails any browser test that meets a policy
    violation, so a new inline style shows up in the first test that opens its page.

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


def content_security_policy(frame_ancestors: str, *, style_nonce: str | None = None,
                            style_hash: str | None = None) -> str:
    """The service's policy with ``frame-ancestors`` set to ``frame_ancestors`` (a source list),
    and inline styles that carry ``style_nonce``, or whose text has the hash ``style_hash`` (a
    ``'sha256-…'`` source), allowed (NOTE [styles under the policy])."""
    policy = CONTENT_SECURITY_POLICY.format(ancestors=frame_ancestors)
    extra = [f"'nonce-{style_nonce}'" if style_nonce else "", style_hash or ""]
    if any(extra):
        policy = policy.replace("style-src 'self'", " ".join(["style-src 'self'", *filter(None, extra)]))
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
    """Adds :func:`security_headers` to every HTTP answer and answers ``HEAD`` (NOTE [HEAD])."""

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
