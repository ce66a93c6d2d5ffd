"""What the web process tells the zygote: limits and layer switches, nothing secret.

The zygote is started from a scrubbed environment and receives only this (as the first control
message), so no database URL, token or path of the service's data ever enters its memory.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from gradtrace.settings import Settings

UID_BASE = 1_000_000
"""NOTE [per-job uids]
    Each job runs as ``UID_BASE + its pid``. A live pid is unique on the machine, so two pools
    (or two test sessions) on one host can never share a uid, and RLIMIT_NPROC (counted per real
    uid) and ``kill(-1)`` only ever reach the job itself. No ``/etc/passwd`` entry is needed. A
    pid is only reused after the zygote reaped the job and killed its process group and cgroup,
    so no process of the previous owner of that uid can survive."""


@dataclass(frozen=True)
class ZygoteConfig:
    """Per-pool settings of the zygote and its job children."""

    sandbox: bool = True
    cpu_s: int = 5
    memory_mb: int = 1024
    output_bytes: int = 64 * 1024
    max_nodes: int = 50_000
    max_events: int = 200_000
    tmp_mb: int = 16
    tmp_inodes: int = 512
    nproc: int = 16
    nofile: int = 64
    fsize_mb: int = 16
    uid_base: int = UID_BASE
    warm_compile: bool = True
    """Exercise torch.compile in the zygote (~6 s at start) so compiling snippets fit the limit."""
    cuda: bool = False
    """Children of this zygote initialise CUDA before locking down (NOTE [cuda workers])."""
    hide_paths: list[str] = field(default_factory=list)
    """Directories to cover with an empty read-only tmpfs in the zygote's mount namespace."""
    cgroup_parent: str | None = None
    """A delegated cgroup to make the pool's cgroups in (NOTE [rootless worker] in userns.py)."""
    kind_files: list[str] = field(default_factory=list)
    """Job kinds defined in files outside the package, imported before the first fork
    (:func:`gradtrace.sandbox.kinds.load_kind_file`; tests add a kind this way)."""

    @classmethod
    def from_settings(cls, settings: Settings, *, warm_compile: bool = True) -> ZygoteConfig:
        return cls(sandbox=settings.sandbox, warm_compile=warm_compile, cpu_s=settings.cpu_s,
                   memory_mb=settings.memory_mb,
                   output_bytes=settings.output_kb * 1024, max_nodes=settings.max_nodes,
                   max_events=settings.max_events,
                   hide_paths=[str(settings.data_dir.resolve())], cgroup_parent=settings.cgroup_parent)

    def to_message(self) -> dict[str, Any]:
        return {"op": "configure", **asdict(self)}

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> ZygoteConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in message.items() if k in known})
