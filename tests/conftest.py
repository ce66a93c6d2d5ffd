"""Shared fixtures that start real things: the service on a free loopback port, and Chromium.

Every server here is the real app (``uvicorn --factory gradtrace.api.app:create_app``) in its
own process with its own data directory, so tests see exactly what a user sees over HTTP.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from gradtrace.lessons import Lesson, all_lessons, lesson
from pageguard import guard_context, unreported_problems

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "capture" / "cases"
"""Capture's own test snippets (edge cases), beside the lessons."""


@dataclass(frozen=True)
class Snippet:
    """A snippet the tests run: a lesson (``backend/gradtrace/lessons``) or a capture case."""

    name: str
    """The lesson's stem (``01_chain_rule``) or the case's file stem (``nested_modules``)."""
    code: str
    is_lesson: bool


LESSONS: tuple[Lesson, ...] = all_lessons()
"""The lessons users try first; capture's goldens and the sandbox tests run them all."""


def lesson_code(stem: str) -> str:
    """The code of one lesson, by stem (``06_graph_freed``)."""
    return lesson(stem).code


def line_of(stem: str, text: str, occurrence: int = 1) -> int:
    """The 1-based line of a lesson's code holding ``text`` (its ``occurrence``-th such line):
    tests name the statement, so rewording a lesson's comments moves no assertion."""
    hits = [i for i, line in enumerate(lesson_code(stem).splitlines(), 1) if text in line]
    assert len(hits) >= occurrence, f"lesson {stem} has no line {occurrence} with {text!r}"
    return hits[occurrence - 1]


def snippets() -> list[Snippet]:
    """Every lesson, then every capture case, in a stable order."""
    return ([Snippet(item.stem, item.code, True) for item in LESSONS]
            + [Snippet(p.stem, p.read_text(), False) for p in sorted(CASES.glob("*.py"))])


ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
SERVER_START_TIMEOUT_S = 90.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running gradtrace service started by a test."""

    url: str
    port: int
    data_dir: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log_path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=kwargs.pop("timeout", 60.0), **kwargs)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.process.poll() is None


def _wait_healthy(server: Server, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last: object = None
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"server exited with {server.process.returncode}:\n{server.log()[-4000:]}")
        try:
            r = httpx.get(server.url + "/readyz", timeout=2.0)
            if r.status_code == 200:
                return
            last = r.text
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"server not ready after {timeout_s}s ({last}):\n{server.log()[-4000:]}")


def stop_server(server: Server, *, sig: int = signal.SIGTERM, timeout_s: float = 20.0) -> None:
    """Stop a server (SIGTERM, then SIGKILL to its whole process group if it lingers)."""
    if server.alive():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.process.pid, sig)
        try:
            server.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=10)


def launch_server(env_overrides: Mapping[str, str] | None = None, *, data_dir: Path | None = None,
                  port: int | None = None, wait: bool = True) -> Server:
    """Start the real service in a subprocess (its own session) and wait until it is ready."""
    port = port or free_port()
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="gradtrace-test-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADTRACE_")}
    env.update({
        "GRADTRACE_DATA_DIR": str(data_dir),
        "GRADTRACE_HOST": "127.0.0.1",
        "GRADTRACE_PORT": str(port),
        "GRADTRACE_RATE_PER_MINUTE": "6000",
        "GRADTRACE_RATE_BURST": "1000",
        # One address sends every test's runs: no per-client cap unless a test asks for one
        # (tests/api/test_fairshare.py), as the rate limit above is relaxed.
        "GRADTRACE_CLIENT_JOBS": "0",
        "GRADTRACE_LOG_LEVEL": "warning",
    })
    env.update(env_overrides or {})
    log_path = data_dir / "server.log"
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "gradtrace.api.app:create_app",
           "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    with log_path.open("ab") as log:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(data_dir),
                                start_new_session=True)
    server = Server(url=f"http://127.0.0.1:{port}", port=port, data_dir=data_dir, env=env,
                    process=proc, log_path=log_path)
    if wait:
        try:
            _wait_healthy(server, SERVER_START_TIMEOUT_S)
        except BaseException:
            stop_server(server)
            raise
    return server


@contextlib.contextmanager
def running_server(env_overrides: Mapping[str, str] | None = None, **kwargs: Any) -> Iterator[Server]:
    """A server for one test (restarts, tiny limits, kill -9): stopped, with no orphan, at the end."""
    server = launch_server(env_overrides, **kwargs)
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture(scope="session")
def start_server() -> Any:
    """Factory fixture: ``with start_server({"GRADTRACE_TIMEOUT_S": "1"}) as srv: ...``."""
    return running_server


@pytest.fixture(scope="session")
def live_server() -> Iterator[Server]:
    """The service with default settings, shared by the whole session."""
    with running_server() as server:
        yield server
        assert server.alive(), f"the shared server died during the session:\n{server.log()[-4000:]}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the browser tests last.

    NOTE [playwright's event loop]
        Playwright's sync API keeps an asyncio loop running in the main thread for as long as
        the session-scoped browser lives, so any later test that drives its own loop
        (``run_until_complete``) would fail with "another loop is running". Ordering the
        browser tests last keeps the one shared Chromium and leaves every other test alone.
    """
    def uses_browser(item: pytest.Item) -> bool:
        fixtures = getattr(item, "fixturenames", ())
        return item.get_closest_marker("browser") is not None or "browser" in fixtures or "page" in fixtures

    for item in items:
        if _is_slow(item, uses_browser(item)):
            item.add_marker(pytest.mark.slow)
    items.sort(key=uses_browser)


SLOW_FOLDERS = frozenset({"browser", "notebook", "sandbox", "scale", "security"})
"""The folders under ``tests/`` whose tests drive real components for long.

NOTE [fast suite, then the rest]
    On a loaded 2-core machine the whole suite takes about 15 minutes of pytest. ``make test``
    runs it in two parts: ``-m "not slow"`` (in-process capture, analysis, schema, storage and
    the service over HTTP: where most edits are checked) and then ``-m slow``: every test that
    drives Chromium, JupyterLab, the sandbox's child processes, the queue fleet or PostgreSQL.
    ``make test-fast`` is the first part alone. Each part ends with the table of where its time
    went (:func:`pytest_terminal_summary`), so the split can follow the figures.
"""


def _is_slow(item: pytest.Item, browser: bool) -> bool:
    if browser or item.get_closest_marker("postgres") or item.get_closest_marker("security"):
        return True
    parts = Path(str(item.path)).resolve().relative_to(ROOT / "tests").parts
    return len(parts) > 1 and parts[0] in SLOW_FOLDERS


def _where(nodeid: str) -> str:
    """A test's folder under ``tests/`` (``tests/api``), or its file at the top."""
    parts = nodeid.split("::", 1)[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[-1]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Where this run's time went: seconds per folder (setup, call and teardown), largest first."""
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid, duration = getattr(report, "nodeid", None), getattr(report, "duration", None)
            if not nodeid or not isinstance(duration, float):
                continue
            where = _where(nodeid)
            totals[where] = totals.get(where, 0.0) + duration
            if getattr(report, "when", None) == "call":
                counts[where] = counts.get(where, 0) + 1
    if not totals:
        return
    terminalreporter.write_sep("-", "where the time went (seconds per folder)")
    for where, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:8.1f} s  {counts.get(where, 0):5d} tests  {where}")


def chromium_path() -> str | None:
    """Debian's Chromium, as installed by ``make test``."""
    for candidate in ("/usr/lib/chromium/chromium", "/usr/bin/chromium"):
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Debian Chromium driven by Playwright (no browser is ever downloaded)."""
    path = chromium_path()
    if path is None:
        pytest.fail("Debian's chromium is not installed: run `make test`, which installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield HelperBrowser(b)
        finally:
            b.close()


class HelperBrowser:
    """The browser, whose every context is watched by a guard and keeps the page's policy.

    NOTE [tests keep the page's CSP]
        Contexts made here (and the pages ``new_page`` makes in contexts of their own) enforce
        each page's Content-Security-Policy (``bypass_csp=False``) and carry a
        :class:`pageguard.PageGuard`: a test fails on any policy violation, console error,
        uncaught error, failed request or error answer it did not declare (NOTE [every page
        behaves] in tests/pageguard.py). The policy forbids ``eval``, which Playwright's
        ``wait_for_function`` uses: tests wait with ``pageguard.wait_until``.
    """

    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def new_context(self, **kwargs: Any) -> Any:
        kwargs.setdefault("bypass_csp", False)
        return guard_context(self._browser.new_context(**kwargs))

    def new_page(self, **kwargs: Any) -> Any:
        """A page in a context of its own (Playwright's shortcut), guarded the same way."""
        kwargs.setdefault("bypass_csp", False)
        page = self._browser.new_page(**kwargs)
        guard_context(page.context)
        return page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


@pytest.fixture(autouse=True)
def _pages_behave() -> Iterator[None]:
    """Fail the test whose browser pages met a policy violation, a console error, an uncaught
    error, a failed request or an error answer it did not declare (NOTE [every page behaves] in
    tests/pageguard.py). Set up before, so torn down after, the fixtures that close contexts."""
    unreported_problems()
    yield
    problems = unreported_problems()
    assert not problems, "the browser pages of this test misbehaved:\n" + "\n".join(problems)


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context and page per test, 1280×800, failing on page errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.page_errors = errors  # tests may assert on uncaught page errors
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where tests write screenshots (gitignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(autouse=True)
def _torch_defaults_unchanged() -> Iterator[None]:
    """Fail the test that leaves torch's default dtype or grad mode changed for the tests after it.

    Only where torch is already imported: the torch-free tests never import it.
    """
    torch = sys.modules.get("torch")
    before = (torch.get_default_dtype(), torch.is_grad_enabled()) if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    if before is not None and torch is not None:
        after = (torch.get_default_dtype(), torch.is_grad_enabled())
        torch.set_default_dtype(before[0])
        torch.set_grad_enabled(before[1])
        assert after == before, f"this test left torch's (default dtype, grad mode) at {after}, was {before}"
