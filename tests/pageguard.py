"""The guard on every browser page the tests open, and waiting on a page under its policy.

NOTE [every page behaves]
    A page can look broken while every DOM assertion passes: a style the policy refused leaves
    the markup in place and the page unstyled. So every context made through the ``browser``
    fixture (tests/conftest.py) gets a :class:`PageGuard`, and an autouse fixture fails the
    test that met, on any page of any context, one of:

    * a Content-Security-Policy violation: the ``securitypolicyviolation`` event (document and
      shadow roots; the event is composed), reported through a binding the moment it fires;
    * a console message of type ``error`` (Chromium also writes each violation there, workers
      included);
    * an uncaught error in the page;
    * a request that failed (no connection, refused by the policy, offline), except one the
      page cancelled itself (``net::ERR_ABORTED``: an aborted fetch, a navigation away);
    * an answer with status 400 or more.

    A test that provokes an error answer on purpose says so, narrowly: :func:`expect_http_error`
    with the exact status and path (that answer, and Chromium's "Failed to load resource" line
    for it, are then fine); :func:`expect_console_error` for a line it wants the page to log.

    Pages are tested under their real policy (contexts are made with ``bypass_csp=False``), so
    Playwright's ``wait_for_function``, which evaluates its predicate with ``eval``, cannot run
    there: :func:`wait_until` polls with a function built around the expression instead.
"""

from __future__ import annotations

import re
import time
import weakref
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

LISTEN = """
document.addEventListener("securitypolicyviolation", (e) => {
  const report = globalThis.__gtPolicyViolation;
  const where = `${e.sourceFile || location.href}:${e.lineNumber}:${e.columnNumber}`;
  const what = `${e.effectiveDirective} refused ${e.blockedURI || "inline"} ${e.sample || ""}`;
  if (typeof report === "function") report(`${what} at ${where}`);
}, true);
"""

_FAILED_LOAD = re.compile(r"^Failed to load resource: the server responded with a status of (\d+)")


@dataclass
class _Expected:
    status: int
    path: str | re.Pattern[str]

    def matches(self, status: int, url: str) -> bool:
        path = urlsplit(url).path
        same = self.path.fullmatch(path) is not None if isinstance(self.path, re.Pattern) else path == self.path
        return status == self.status and same


@dataclass
class PageGuard:
    """What went wrong on the pages of one browser context (NOTE [every page behaves])."""

    name: str
    problems: list[str] = field(default_factory=list)
    expected: list[_Expected] = field(default_factory=list)
    console_ok: list[re.Pattern[str]] = field(default_factory=list)
    reported: int = 0
    closed: bool = False

    def attach(self, context: Any) -> None:
        context.expose_binding("__gtPolicyViolation", lambda source, text: self.problems.append(
            f"policy violation on {_page_url(source)}: {text}"))
        context.add_init_script(LISTEN)
        context.on("console", self._console)
        context.on("weberror", lambda e: self.problems.append(f"uncaught error on {_page_url(e)}: {e.error}"))
        context.on("requestfailed", self._failed)
        context.on("response", self._response)
        context.on("close", lambda _: setattr(self, "closed", True))

    def _console(self, msg: Any) -> None:
        if msg.type != "error":
            return
        text = msg.text
        url = (msg.location or {}).get("url", "")
        load = _FAILED_LOAD.match(text)
        if load and any(e.matches(int(load.group(1)), url) for e in self.expected):
            return
        if any(p.search(text) for p in self.console_ok):
            return
        self.problems.append(f"console error on {_url_of(msg.page)}: {text} ({url})")

    def _failed(self, request: Any) -> None:
        failure = request.failure or ""
        if failure == "net::ERR_ABORTED":
            return
        self.problems.append(f"request failed: {request.method} {request.url}: {failure}")

    def _response(self, response: Any) -> None:
        status = int(response.status)
        if status < 400 or any(e.matches(status, response.url) for e in self.expected):
            return
        self.problems.append(f"answer {status} to {response.request.method} {response.url}")

    def take(self) -> list[str]:
        """The problems found since the last call."""
        new = self.problems[self.reported:]
        self.reported = len(self.problems)
        return new


def _url_of(page: Any) -> str:
    try:
        return str(page.url) if page is not None else "?"
    except Exception:  # a page already closed
        return "?"


def _page_url(source: Any) -> str:
    page = source.get("page") if isinstance(source, dict) else getattr(source, "page", None)
    return _url_of(page)


_GUARDS: list[PageGuard] = []
_BY_CONTEXT: weakref.WeakKeyDictionary[Any, PageGuard] = weakref.WeakKeyDictionary()


def guard_context(context: Any, name: str = "") -> Any:
    """Put a :class:`PageGuard` on ``context`` (before its first page opens); answers ``context``."""
    guard = PageGuard(name=name)
    guard.attach(context)
    _GUARDS.append(guard)
    _BY_CONTEXT[context] = guard
    return context


def guard_of(page_or_context: Any) -> PageGuard:
    """The guard of a page's (or a context's) browser context."""
    context = getattr(page_or_context, "context", page_or_context)
    guard = _BY_CONTEXT.get(context)
    assert guard is not None, "this context was not made through the browser fixture, so no guard watches it"
    return guard


def expect_http_error(page: Any, status: int, path: str | re.Pattern[str]) -> None:
    """Let ``page``'s context receive ``status`` for ``path`` (exact, or a pattern matching the
    whole path) without failing the test: the error the test provokes on purpose."""
    guard_of(page).expected.append(_Expected(status, path))


def expect_console_error(page: Any, pattern: str) -> None:
    """Let ``page``'s context log console errors matching ``pattern`` (a regex) without failing."""
    guard_of(page).console_ok.append(re.compile(pattern))


def unreported_problems() -> list[str]:
    """Every guard's problems since the last call; guards of closed contexts are dropped."""
    out = [p for g in _GUARDS for p in g.take()]
    _GUARDS[:] = [g for g in _GUARDS if not g.closed]
    return out


def wait_until(page: Any, expression: str, *, timeout: float = 30_000, polling: float = 50,
               arg: Any = None) -> None:
    """Wait until ``expression`` (a JavaScript expression; with ``arg``, a function of it) is
    truthy in ``page`` (a page or a frame), polled in the page every ``polling`` ms for at most
    ``timeout`` ms; the function is Playwright's evaluate, not ``eval`` (NOTE [every page
    behaves]). An error thrown by the expression fails the wait, and a timeout raises Playwright's
    ``TimeoutError``, as ``wait_for_function``'s do."""
    value = f"(({expression})(arg))" if arg is not None else f"({expression})"
    source = f"""async ([timeout, every, arg]) => {{
      const t0 = performance.now();
      for (;;) {{
        if ({value}) return true;
        if (performance.now() - t0 > timeout) return false;
        await new Promise((resolve) => setTimeout(resolve, every));
      }}
    }}"""
    deadline = time.monotonic() + timeout / 1000
    while True:
        left = max(1.0, (deadline - time.monotonic()) * 1000)
        try:
            if page.evaluate(source, [left, polling, arg]):
                return
        except Exception as exc:  # a navigation replaced the page's context: poll the new one
            if "context was destroyed" not in str(exc) or time.monotonic() > deadline:
                raise
            continue
        if time.monotonic() >= deadline:
            from playwright.sync_api import TimeoutError as PlaywrightTimeout  # as wait_for_function's

            raise PlaywrightTimeout(f"still false after {timeout:.0f} ms: {expression}")
