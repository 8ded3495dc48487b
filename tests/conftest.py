"""Project-wide test setup.

- Passive OpenMP waits before torch is imported anywhere (spinning threads stall a shared CPU).
- Hypothesis runs derandomized by default so CI is reproducible; set HYPOTHESIS_PROFILE=explore
  to search with fresh random seeds.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from hypothesis import settings  # noqa: E402

settings.register_profile("default", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
