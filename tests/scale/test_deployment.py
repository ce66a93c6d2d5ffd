"""docker-compose.yml and the Kubernetes example, checked against the project (no engine runs here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gradtrace.cli import main as cli_main
from gradtrace.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
K8S = [d for d in yaml.safe_load_all((ROOT / "docs" / "kubernetes.yaml").read_text()) if d]
SETTINGS = {f"GRADTRACE_{name.upper()}" for name in Settings.model_fields}


def _env(svc: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in (svc.get("environment") or {}).items()}


def test_compose_runs_redis_postgres_two_apis_two_cpu_workers_and_a_gpu_worker_under_a_profile() -> None:
    svc = COMPOSE["services"]
    assert {"redis", "postgres", "api", "worker-cpu", "worker-gpu"} <= set(svc)
    assert svc["api"]["deploy"]["replicas"] == 2 and svc["worker-cpu"]["deploy"]["replicas"] == 2
    assert svc["worker-gpu"]["profiles"] == ["gpu"]
    (device,) = svc["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
    assert svc["worker-gpu"]["command"][:4] == ["gradtrace", "worker", "--device", "cuda"]
    assert svc["worker-cpu"]["command"][:4] == ["gradtrace", "worker", "--device", "cpu"]
    for name, s in svc.items():
        assert s.get("healthcheck", {}).get("test"), f"{name} has no health check"


def test_compose_wires_the_queue_and_postgres_with_real_settings() -> None:
    svc = COMPOSE["services"]
    api = _env(svc["api"])
    assert api["GRADTRACE_RUNNER"] == "queue"
    assert api["GRADTRACE_REDIS_URL"].startswith("redis://redis:")
    db = api["GRADTRACE_DATABASE_URL"]
    assert db.startswith("postgresql+psycopg://") and "@postgres:" in db
    for name in ("api", "worker-cpu", "worker-gpu"):
        env = _env(svc[name])
        assert set(env) <= SETTINGS, f"{name} sets unknown variables {set(env) - SETTINGS}"
        assert env["GRADTRACE_REDIS_URL"] == api["GRADTRACE_REDIS_URL"]
        Settings(**{k.removeprefix("GRADTRACE_").lower(): v for k, v in env.items()})
        assert {"redis", "postgres"} & set(svc[name]["depends_on"])


def test_only_workers_get_the_userns_grant_and_the_api_stays_confined() -> None:
    svc = COMPOSE["services"]
    for name in ("worker-cpu", "worker-gpu"):
        assert "seccomp=unconfined" in svc[name]["security_opt"]
        assert "systempaths=unconfined" in svc[name]["security_opt"]
        assert "privileged" not in svc[name] and "cap_add" not in svc[name] and "user" not in svc[name]
    for name in ("api", "redis", "postgres"):
        assert "security_opt" not in svc[name] and "privileged" not in svc[name]


def test_worker_commands_parse_with_the_real_cli() -> None:
    import pytest

    for name in ("worker-cpu", "worker-gpu"):
        argv = [*COMPOSE["services"][name]["command"][1:], "--bogus-flag"]
        with pytest.raises(SystemExit) as refused:  # an unknown flag is refused...
            cli_main(argv)
        assert refused.value.code == 2
        with pytest.raises(SystemExit) as done:  # ...and the compose command itself parses
            cli_main([*argv[:-1], "--help"])
        assert done.value.code == 0, name


def test_kubernetes_example_has_a_deployment_per_role_and_an_hpa_on_queue_depth() -> None:
    kinds = {(d["kind"], d["metadata"]["name"]) for d in K8S}
    for role in ("api", "worker-cpu", "worker-gpu"):
        assert ("Deployment", f"gradtrace-{role}") in kinds
    (hpa,) = [d for d in K8S if d["kind"] == "HorizontalPodAutoscaler"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == "gradtrace-worker-cpu"
    (metric,) = hpa["spec"]["metrics"]
    # The name a live API replica exports (test_queue.py checks /metrics for it).
    assert metric["external"]["metric"]["name"] == "gradtrace_queue_depth"
    assert metric["external"]["metric"]["selector"]["matchLabels"] == {"device": "cpu"}
    workers = [d for d in K8S if d["kind"] == "Deployment" and "worker" in d["metadata"]["name"]]
    for d in workers:
        (c,) = d["spec"]["template"]["spec"]["containers"]
        assert c["securityContext"]["runAsNonRoot"] is True and d["spec"]["template"]["spec"]["hostUsers"] is False


def _drain_s(env: dict[str, str]) -> float:
    default = Settings.model_fields["worker_drain_s"].default
    return float(env.get("GRADTRACE_WORKER_DRAIN_S", default))


def test_every_worker_is_given_time_to_drain_before_sigkill() -> None:
    # NOTE [drain on SIGTERM] (gradtrace/queue/worker.py): the drain, arq's backstop a few
    # seconds later, then the exit; the grace before SIGKILL must cover all three.
    from gradtrace.queue.worker import CUTOFF_MARGIN_S

    timeout_s = Settings.model_fields["timeout_s"].default
    for name in ("worker-cpu", "worker-gpu"):
        svc = COMPOSE["services"][name]
        drain = _drain_s(_env(svc))
        assert drain >= timeout_s, f"{name}: a run that just started would be cut off"
        grace = svc["stop_grace_period"]
        assert grace.endswith("s") and float(grace[:-1]) >= drain + 2 * CUTOFF_MARGIN_S, (name, grace)
    for d in (d for d in K8S if d["kind"] == "Deployment" and "worker" in d["metadata"]["name"]):
        spec = d["spec"]["template"]["spec"]
        (c,) = spec["containers"]
        drain = _drain_s({e["name"]: e["value"] for e in c["env"] if "value" in e})
        assert drain >= timeout_s and spec["terminationGracePeriodSeconds"] >= drain + 2 * CUTOFF_MARGIN_S, d
