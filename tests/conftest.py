"""Project-wide test setup: passive OpenMP waits before torch is imported anywhere."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
