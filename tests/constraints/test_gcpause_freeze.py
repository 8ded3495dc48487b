"""gcpause.freeze_once: the static heap is frozen once (after jsonschema's import) and the
collector stays on; gc_paused still restores it."""

import gc

from deepinfer.constraints import gcpause


def test_freeze_once_freezes_and_keeps_collector_on():
    assert gc.isenabled()
    gcpause.freeze_once()
    assert gcpause._frozen and gc.get_freeze_count() > 0
    frozen = gc.get_freeze_count()
    gcpause.freeze_once()  # second call: nothing more
    assert gc.get_freeze_count() == frozen
    with gcpause.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
