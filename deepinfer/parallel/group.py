"""Joining a gloo/NCCL process group with a bounded wait, and spawning ranks on one machine.

A rank that never arrives must not hang the others: `init_process_group` gets a timeout, and a
failure to join becomes a `ParallelError` naming the rank, the world and the address.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable

import torch.distributed as dist
import torch.multiprocessing as mp

from deepinfer.errors import UserError


class ParallelError(UserError):
    """A rank could not join its group, or a collective failed (a peer died or timed out)."""


@dataclass(frozen=True)
class RankGroup:
    """This process's place in the group: rank in 0..world-1."""

    rank: int
    world: int


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def join(rank: int, world: int, address: str, *, timeout_s: float = 30.0, backend: str = "gloo") -> RankGroup:
    """Join the default process group at `address` ("tcp://host:port") within `timeout_s` seconds.

    The same timeout bounds every later collective, so a peer that dies mid-step surfaces as an
    error on the others instead of a hang."""
    if not 0 <= rank < world:
        raise ParallelError(f"rank {rank} is outside the world of {world} ranks")
    try:
        dist.init_process_group(backend, init_method=address, rank=rank, world_size=world,
                                timeout=timedelta(seconds=timeout_s))
    except Exception as exc:  # the store raises RuntimeError / DistStoreError / TimeoutError by version
        raise ParallelError(f"rank {rank} of {world} could not join the process group at {address} "
                            f"within {timeout_s:g} s: {exc}") from exc
    return RankGroup(rank, world)


def leave() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def _entry(rank: int, fn: Callable[..., Any], world: int, address: str, timeout_s: float, args: tuple) -> None:
    join(rank, world, address, timeout_s=timeout_s)
    try:
        fn(RankGroup(rank, world), *args)
    finally:
        leave()


def spawn(fn: Callable[..., Any], world: int, *args: Any, timeout_s: float = 30.0) -> None:
    """Run fn(RankGroup, *args) in `world` fresh processes joined over loopback; raise if any fails.

    `fn` must be importable (a module-level function): ranks start with the "spawn" method."""
    address = f"tcp://127.0.0.1:{free_port()}"
    mp.start_processes(_entry, args=(fn, world, address, timeout_s, args), nprocs=world, join=True,
                       start_method="spawn")
