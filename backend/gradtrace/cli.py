"""The ``gradtrace`` command: ``serve`` starts the service, ``worker`` takes jobs from the queue,
``run`` records a file locally.

``serve`` hands the app factory to uvicorn, so the web process imports no torch; the worker
pool it starts does. ``run`` records a snippet in this process, the way ``gradtrace.record``
does in a notebook: it is for your own code on your own machine, not a sandbox.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from gradtrace.settings import Settings, get_settings


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    settings = get_settings()
    host = args.host or settings.host
    port = args.port or settings.port
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    print(f"gradtrace: serving on http://{host}:{port} (data in {settings.data_dir.resolve()})",
          file=sys.stderr)
    uvicorn.run("gradtrace.api.app:create_app", factory=True, host=host, port=port,
                log_level=settings.log_level.lower(), proxy_headers=True)
    return 0


def _worker(args: argparse.Namespace) -> int:
    import os

    from gradtrace.sandbox import userns

    settings = get_settings()
    if not settings.redis_url:
        print("gradtrace worker: set GRADTRACE_REDIS_URL (redis://host:6379/0)", file=sys.stderr)
        return 2
    if not 0 <= args.concurrency <= 64:
        print("gradtrace worker: --concurrency must be 1..64", file=sys.stderr)
        return 2
    if not args.in_userns:
        # NOTE [rootless worker] (sandbox/userns.py): re-enter through a user namespace.
        prefix = userns.unshare_command(settings)
        if prefix is not None:
            cmd, why = prefix
            env = dict(os.environ)
            cgroup = userns.delegated_cgroup(settings)
            if cgroup:
                env["GRADTRACE_CGROUP_PARENT"] = cgroup
            print(f"gradtrace worker: not root; entering a {why}", file=sys.stderr)
            argv = [*cmd, sys.executable, "-m", "gradtrace.cli", "worker", "--device", args.device,
                    "--concurrency", str(args.concurrency), "--in-userns"]
            if not args.warm_compile:
                argv.append("--no-warm-compile")
            return userns.run_inside(argv, env)
    else:
        done = userns.fit_pid_max()
        if done:
            print(f"gradtrace worker: {done}", file=sys.stderr)
    from gradtrace.queue.worker import run_worker

    concurrency = args.concurrency or settings.workers
    return run_worker(settings, device=args.device, concurrency=concurrency, warm_compile=args.warm_compile)


def _run(args: argparse.Namespace) -> int:
    from gradtrace.capture import run_snippet

    path = Path(args.file)
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"gradtrace: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    # the core's bytes as they are (NOTE [capture's one exit] in capture/captured.py)
    captured = run_snippet(code, device=args.device, seed=args.seed, filename=str(path))
    _, body = captured.canonical_with_id()
    if args.pretty:
        sys.stdout.write(json.dumps(json.loads(body), indent=2, sort_keys=True))
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(body)
    sys.stdout.write("\n")
    return 0 if captured.status == "ok" else 1


def settings_table() -> str:
    """The README's configuration table, generated from :class:`Settings` itself."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, f in Settings.model_fields.items():
        default = "(per core)" if f.default_factory is not None and name == "workers" else (
            "[]" if f.default_factory is not None else f.default)
        rows.append(f"| `GRADTRACE_{name.upper()}` | `{default}` | {f.description or ''} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gradtrace", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the web service and its worker pool")
    serve.add_argument("--host", default=None, help="bind address (default GRADTRACE_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default GRADTRACE_PORT or 8000)")
    serve.set_defaults(func=_serve)
    worker = sub.add_parser("worker", help="take sandbox jobs from the Redis queue (GRADTRACE_REDIS_URL)")
    worker.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="which jobs to take: cpu, or cuda (needs a GPU on this machine)")
    worker.add_argument("--concurrency", type=int, default=0,
                        help="jobs at once (default GRADTRACE_WORKERS: one per core)")
    worker.add_argument("--no-warm-compile", dest="warm_compile", action="store_false",
                        help="start ~6 s faster; snippets that call torch.compile may hit the time limit")
    worker.add_argument("--in-userns", action="store_true", help=argparse.SUPPRESS)
    worker.set_defaults(func=_worker)
    run = sub.add_parser("run", help="record FILE.py in this process and print its run document")
    run.add_argument("file")
    run.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--pretty", action="store_true", help="indent the JSON")
    run.set_defaults(func=_run)
    settings = sub.add_parser("settings", help="print the configuration variables as a Markdown table")
    settings.set_defaults(func=lambda _a: print(settings_table()) or 0)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
