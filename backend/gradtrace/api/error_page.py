"""The page a browser gets for an error (``api/errors.py`` decides when): styled like the
playground, offline (inline CSS, no font or script from elsewhere), and saying what happened
and what to do next, in words, for the two links people follow: a share (``/s/{id}``) and a
kept run's page (``/r/{id}``).

Its one ``<style>`` is admitted by its hash in the page's own policy (:func:`error_page_policy`;
NOTE [styles under the policy] in ``api/security.py``): the page stands alone, with no second
request, since it also answers a client the service is refusing (429) or too busy for (503).
"""

from __future__ import annotations

import base64
import hashlib
import html

from gradtrace.api.security import content_security_policy

_STYLE = """
:root { color-scheme: light dark; --bg: #f6f7fb; --panel: #fff; --text: #1d2030; --muted: #5b6175;
  --border: #d9dce6; --accent: #3451d1; }
@media (prefers-color-scheme: dark) { :root { --bg: #14161d; --panel: #1c1f29; --text: #e6e8ef;
  --muted: #a0a6b8; --border: #323646; --accent: #8aa0ff; } }
body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: var(--bg); color: var(--text);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 34rem; margin: 24px; padding: 28px 32px; background: var(--panel); border: 1px solid var(--border);
  border-radius: 10px; }
.logo { font-weight: 700; font-size: 18px; margin: 0 0 18px; } .logo span { color: var(--accent); }
h1 { font-size: 22px; margin: 0 0 8px; } .status { color: var(--muted); font-size: 14px; margin: 0 0 16px; }
code { font: 14px ui-monospace, monospace; overflow-wrap: anywhere; }
a.button { display: inline-block; margin-top: 12px; padding: 6px 14px; border-radius: 6px; background: var(--accent);
  color: var(--panel); text-decoration: none; font-weight: 600; }
"""

STYLE_HASH = "'sha256-" + base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode() + "'"
"""The policy's source for the page's ``<style>``: its text's SHA-256, which admits that text only."""

_HEADINGS = {400: "The request could not be read", 404: "Nothing here", 405: "Not allowed here",
             413: "Too large", 422: "Invalid request", 429: "Too many requests", 503: "Busy for a moment"}


def _what_happened(status: int, path: str) -> tuple[str, str]:
    """A heading and a sentence on what to do, for the page at ``path``."""
    if status == 404 and path.startswith("/s/"):
        return ("This share link leads nowhere",
                "No shared run has this id. The link may be cut short or mistyped; ask the person "
                "who shared it for the whole link.")
    if status == 404 and path.startswith("/r/"):
        return ("This run is no longer here",
                "Runs are kept for a while only; a shared run is kept for good. Run the code again "
                "and press Share to keep it.")
    return _HEADINGS.get(status, "Something went wrong"), "The playground is one click away."


def error_page(status: int, message: str, path: str) -> str:
    """The HTML text of the error page."""
    heading, advice = _what_happened(status, path)
    return (f"<!doctype html><html lang=en><meta charset=utf-8>"
            f"<meta name=viewport content=\"width=device-width, initial-scale=1\">"
            f"<title>{status} · {html.escape(heading)} · gradtrace</title><link rel=icon href=\"data:,\">"
            f"<style>{_STYLE}</style>"
            f"<main><p class=logo>grad<span>trace</span></p><h1>{html.escape(heading)}</h1>"
            f"<p class=status>{status} · {html.escape(message)}</p><p>{html.escape(advice)}</p>"
            f"<a class=button href=\"/\">Open the playground</a></main></html>")


def error_page_policy(frame_ancestors: str) -> str:
    """The error page's Content-Security-Policy: the service's, with its style admitted by hash."""
    return content_security_policy(frame_ancestors, style_hash=STYLE_HASH)
