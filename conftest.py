"""Root pytest configuration: hypothesis profiles (see ``properties/settings.py``).

``HYPOTHESIS_PROFILE=dev|ci|fuzz`` selects one; the default is ``dev`` locally and
``ci`` when the ``CI`` environment variable is set.

The fused pipeline's ahead-of-time module (``algorithms/aot.py``) is off in the tests
(``BPEBENCH_AOT=0``, also for their subprocesses), unless the environment sets
``BPEBENCH_AOT`` itself: the tests compare the JIT kernels with independent oracles, and
a test that points ``BPEBENCH_CACHE`` at an empty directory must not start a build.
``tests/test_aot.py`` turns it on and compares the module with the JIT.
"""

import os

from properties.settings import load_profile

os.environ.setdefault("BPEBENCH_AOT", "0")

load_profile()
