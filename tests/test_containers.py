"""No Docker engine runs here, so the Dockerfile and compose file are checked against the project.

They must agree with it on ports, paths, commands and the health endpoint; and the image must
reuse the Makefile's install recipe rather than keep a second one.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from gradtrace.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
MAKEFILE = (ROOT / "Makefile").read_text()


def _instructions(name: str) -> list[str]:
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    return [line.split(None, 1)[1] for line in joined.splitlines() if line.upper().startswith(name + " ")]


def test_dockerfile_installs_with_the_makefile_recipe() -> None:
    runs = " ".join(_instructions("RUN"))
    assert "make install frontend" in runs
    for target in ("install:", "frontend:"):
        assert target in MAKEFILE


def test_dockerfile_defaults_to_cpu_torch_and_takes_a_cuda_build_argument() -> None:
    args = " ".join(_instructions("ARG"))
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in args
    assert "BASE_IMAGE=" in args
    assert "cu1" in DOCKERFILE  # the documented CUDA build


def test_image_runs_as_non_root_with_a_healthcheck_on_a_real_endpoint() -> None:
    users = _instructions("USER")
    assert users and users[-1].strip() not in ("root", "0")
    health = _instructions("HEALTHCHECK")
    assert health and "/healthz" in health[0]
    from gradtrace.api.app import create_app

    assert "/healthz" in create_app().openapi()["paths"]


def test_port_and_data_dir_agree_between_dockerfile_compose_and_settings() -> None:
    exposed = _instructions("EXPOSE")
    assert exposed == [str(Settings.model_fields["port"].default)]
    svc = COMPOSE["services"]["api"]  # the fleet: tests/scale/test_deployment.py checks the rest
    assert svc["ports"][0].endswith(":8000") and svc["environment"]["GRADTRACE_PORT"] == "8000"
    assert "GRADTRACE_DATA_DIR=/data" in DOCKERFILE
    assert "/healthz" in " ".join(svc["healthcheck"]["test"])


def test_image_command_is_the_cli_entry_point() -> None:
    cmd = _instructions("CMD")[-1]
    assert '"gradtrace", "serve"' in cmd
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["gradtrace"] == "gradtrace.cli:main"
