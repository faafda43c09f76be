"""Hypothesis profiles shared by the property suite, the conformance kit and ``bpebench fuzz``.

Three profiles, chosen by the environment variable ``HYPOTHESIS_PROFILE``
(default ``dev`` locally, ``ci`` when ``CI`` is set):

* ``dev``: random, a modest number of examples, the example database on, so a
  failure found once is replayed first on the next run;
* ``ci``: derandomized (the same examples on every run), bounded, no database:
  a failing CI run fails the same way on a laptop;
* ``fuzz``: long runs with the database, for ``bpebench fuzz``.

``deadline`` is off everywhere: numba compiles on the first call of each
encoder, and a per-example wall-clock limit would turn that into flaky failures.
Hangs are caught by the kit's own per-call and per-check limits instead.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

#: examples per property in each profile (a check may scale it down for costly vocabularies)
PROFILE_EXAMPLES = {"dev": 30, "ci": 30, "fuzz": 2000}

_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
               HealthCheck.function_scoped_fixture, HealthCheck.differing_executors]
# The "explain" phase re-runs variations of the minimal example after shrinking; the kit
# reports the last failing call as the counterexample, so it must be the minimal one.
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)

_registered = False


def register_profiles() -> None:
    """Register ``dev``, ``ci`` and ``fuzz`` with hypothesis (idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    common = dict(deadline=None, suppress_health_check=_SUPPRESSED, phases=_PHASES,
                  report_multiple_bugs=False, print_blob=False)
    settings.register_profile("dev", max_examples=PROFILE_EXAMPLES["dev"], **common)
    settings.register_profile("ci", max_examples=PROFILE_EXAMPLES["ci"], derandomize=True,
                              database=None, **common)
    settings.register_profile("fuzz", max_examples=PROFILE_EXAMPLES["fuzz"], **common)


def profile_name() -> str:
    """The profile the environment asks for: ``HYPOTHESIS_PROFILE``, else ``ci`` under CI, else ``dev``."""
    name = os.environ.get("HYPOTHESIS_PROFILE")
    if name:
        return name
    return "ci" if os.environ.get("CI") else "dev"


def load_profile(name: str | None = None) -> str:
    """Register the profiles and make ``name`` (default: :func:`profile_name`) the active one."""
    register_profiles()
    name = name or profile_name()
    settings.load_profile(name)
    return name


def scaled(fraction: float, *, minimum: int = 3) -> int:
    """``fraction`` of the active profile's ``max_examples`` (for costly properties)."""
    return max(minimum, int(settings.default.max_examples * fraction))
