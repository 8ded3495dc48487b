"""Data-parallel serving's start-up refusals, each a clear error within a bounded wait (no replica starts)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from deepinfer.router import DistError
from deepinfer.router.ray_env import connect
from deepinfer.server.background import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_without_ray_data_parallel_says_what_to_install(tmp_path):
    from deepinfer.testing import make_tiny_model_dir
    model = make_tiny_model_dir(tmp_path / "model")
    code = ("import sys; sys.modules['ray'] = None\n"  # as if Ray were not installed
            "from deepinfer.cli import main\n"
            f"sys.exit(main(['serve', '--model', {str(model)!r}, '--data-parallel', '2']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "pip install 'deepinfer[dist]'" in done.stderr and "Traceback" not in done.stderr


def test_a_cluster_address_that_does_not_answer_is_refused_quickly():
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("this process is already connected to Ray")
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    start = time.monotonic()
    with pytest.raises(DistError, match=f"--ray-address {address}: no Ray cluster answers"):
        connect(address, timeout_s=2.0)
    assert time.monotonic() - start < 10 and not ray.is_initialized()


def test_a_bad_replica_count_or_policy_is_refused_before_ray_starts():
    from deepinfer.router import ReplicaPool
    with pytest.raises(DistError, match="--data-parallel 0"):
        ReplicaPool.start(None, 0)
    with pytest.raises(DistError, match="--router 'nearest'"):
        ReplicaPool.start(None, 2, policy="nearest")
