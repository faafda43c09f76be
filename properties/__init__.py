"""Property tests and the conformance kit for BPE encoders.

Public API::

    from properties import check_encoder, CheckResult, CHECKS, parametrize_with_checks

    results = check_encoder(MyEncoder, vocabularies=["random", "cl100k_base"], max_examples=50)
    failures = [r for r in results if not r.ok]

``bpebench verify MODULE:CLASS`` and ``bpebench fuzz`` are the command-line faces
(``properties/cli.py``); ``properties/mutants.py`` holds broken encoders the kit
must reject.
"""

from .checks import CHECKS, Check
from .kit import CheckResult, assert_check, check_encoder, parametrize_with_checks, replay, run_check

__all__ = ["CHECKS", "Check", "CheckResult", "assert_check", "check_encoder", "parametrize_with_checks",
           "replay", "run_check"]
