"""Property tests and the conformance kit for BPE encoders.

Public API::

    from bpebench.properties import check_encoder, CheckResult, CHECKS, parametrize_with_checks

    results = check_encoder(MyEncoder, vocabularies=["random", "cl100k_base"], max_examples=50)
    failures = [r for r in results if not r.ok]

``bpebench verify MODULE:CLASS`` and ``bpebench fuzz`` are the command-line faces
(``properties/cli.py``); ``properties/mutants.py`` holds broken encoders the kit
must reject.
"""

from bpebench._lazy import lazy_exports

_EXPORTS = {"CHECKS": "checks", "Check": "checks", "CheckResult": "kit", "assert_check": "kit",
            "check_encoder": "kit", "parametrize_with_checks": "kit", "replay": "kit", "run_check": "kit"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
