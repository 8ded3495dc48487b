"""Ray, imported only here and only when a pool starts: the base install runs without it.

`connect` joins a cluster (`address`) or starts a local one, refusing within a bounded wait an
address nothing answers at (Ray itself would retry for a long time before giving up).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from types import ModuleType

from deepinfer.errors import UserError

INSTALL_HINT = "pip install 'deepinfer[dist]'"
LOCAL_START_ATTEMPTS = 3


class DistError(UserError):
    """Data-parallel serving cannot start: Ray missing, a cluster that does not answer, replicas that differ."""


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise DistError(f"data-parallel serving needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def _check_reachable(address: str, timeout_s: float) -> None:
    """A 'host:port' (or 'ray://host:port') that accepts no TCP connection is refused now."""
    if address == "auto" or ":" not in address:
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as exc:
        raise DistError(f"--ray-address {address}: no Ray cluster answers there within {timeout_s:g} s ({exc})") \
            from None


def connect(address: str | None = None, num_cpus: int | None = None, timeout_s: float = 10.0) -> bool:
    """Make sure this process is connected to Ray; True when this call started the connection
    (so the caller shuts it down), False when one was already open."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if address is not None:
        _check_reachable(address, timeout_s)
        ray.init(address=address, include_dashboard=False, logging_level="warning")
        return True
    # a local cluster: its workers must import the same deepinfer as this process does
    root = str(Path(__file__).resolve().parents[2])
    path = f"{root}{os.pathsep}${{PYTHONPATH}}"  # Ray expands ${VAR} from the raylet's environment
    for attempt in range(LOCAL_START_ATTEMPTS):
        try:
            ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level="warning",
                     runtime_env={"env_vars": {"PYTHONPATH": path}},
                     # the raylet gives up on its (Python) agents after a few seconds on a loaded machine
                     _system_config={"agent_register_timeout_ms": 120_000})
            return True
        except Exception as exc:  # Ray waits a fixed 30 s for its raylet, too little on a loaded machine
            ray.shutdown()
            if attempt + 1 == LOCAL_START_ATTEMPTS:
                raise DistError(f"a local Ray cluster did not start ({LOCAL_START_ATTEMPTS} tries): {exc}") from None
    return True
