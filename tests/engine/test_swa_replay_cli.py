"""`deepinfer serve --swa-replay MODE --swa-replay-tokens N` reach the engine's options."""

from __future__ import annotations

import pytest

from deepinfer.cli import build_parser, main
from deepinfer.server import serve as server_serve


def test_serve_passes_the_replay_options_to_the_engine(monkeypatch):
    seen = {}
    monkeypatch.setattr(server_serve, "serve", lambda model, **kwargs: seen.update(kwargs["engine_kwargs"]))
    assert main(["serve", "--model", "m", "--swa-replay", "exact", "--swa-replay-tokens", "64"]) == 0
    assert seen == {"swa_replay": "exact", "swa_replay_tokens": 64}
    seen.clear()
    assert main(["serve", "--model", "m"]) == 0
    assert "swa_replay" not in seen and "swa_replay_tokens" not in seen


def test_serve_refuses_an_unknown_replay_mode(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--swa-replay", "approximate"])
    assert "invalid choice: 'approximate'" in capsys.readouterr().err
