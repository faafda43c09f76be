"""Root pytest configuration: hypothesis profiles and how ``properties/`` tests are imported.

Hypothesis profiles: see ``properties/settings.py``. ``HYPOTHESIS_PROFILE=dev|ci|fuzz``
selects one; the default is ``dev`` locally and ``ci`` when the ``CI`` environment
variable is set.

The test modules in ``properties/`` belong to the installed package
``bpebench.properties``. pytest would import them by path as a top-level ``properties``
package, a second copy of the kit beside the installed one; here they are imported by
their installed names instead, so there is one copy of every module.

The fused pipeline's ahead-of-time module (``algorithms/pipeline/aot.py``) is off in the
tests (``BPEBENCH_AOT=0``, also for their subprocesses), unless the environment sets
``BPEBENCH_AOT`` itself: the tests compare the JIT kernels with independent oracles, and
a test that points ``BPEBENCH_CACHE`` at an empty directory must not start a build.
``tests/test_aot.py`` turns it on and compares the module with the JIT.
"""

import importlib
import os
import signal
from pathlib import Path

import pytest

from bpebench.properties.settings import load_profile

os.environ.setdefault("BPEBENCH_AOT", "0")

# A shell starts background jobs with Ctrl-C ignored, and an ignored signal stays ignored in every
# process started from there: the tests that interrupt a run would then see it finish instead.
# Python's own handler here makes the processes the tests start receive Ctrl-C as a terminal would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

load_profile()

_PROPERTIES = Path(__file__).resolve().parent / "properties"


class _InstalledModule(pytest.Module):
    """A test module of ``properties/``, imported as ``bpebench.properties.<name>``."""

    def _getobj(self):
        return importlib.import_module(f"bpebench.properties.{self.path.stem}")


def pytest_collect_directory(path, parent):
    if path.resolve() == _PROPERTIES:  # a plain directory: pytest would import its __init__ by path
        return pytest.Dir.from_parent(parent, path=path)
    return None


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.resolve().parent == _PROPERTIES:
        return _InstalledModule.from_parent(parent, path=module_path)
    return None
