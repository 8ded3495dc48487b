"""Shared fixtures for model tests: one saved transformers reference model per family per session."""

from __future__ import annotations

import pytest
import torch

from model_reference import save_reference


@pytest.fixture(scope="session")
def reference_model(tmp_path_factory):
    """family -> (transformers model, directory it was saved to); built once per session."""
    built = {}

    def get(family: str):
        if family not in built:
            directory = tmp_path_factory.mktemp(family)
            built[family] = (save_reference(family, directory), directory)
        return built[family]

    return get


@pytest.fixture(autouse=True)
def _two_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(min(previous, 2))
    yield
    torch.set_num_threads(previous)
