"""Correctness stages: agreement with the naive reference, and the conformance kit.

* ``agreement``: per vocabulary x corpus x subject, the fraction of inputs on
  which the subject's output equals ``naive`` (the definition) and the
  distribution of ``len(subject) - len(naive)``. Encoders are compared in two
  modes: ``raw`` (slices of the corpus, no pre-tokenizer: the stricter test) and
  ``pieces`` (the pre-tokenized pieces of the same slices: what an encoder sees
  inside a tokenizer, the fair number for approximate encoders). Peers are
  compared in ``pipeline`` mode: their whole tokenizer against a Tokenizer
  running ``naive``. Encoder statistics come from ``bpebench.algorithms.pipeline.agreement``.
* ``conformance``: ``bpebench.properties.check_encoder`` on every encoder; each check's
  outcome and, on failure, its minimal counterexample.

Cost: naive is O(n^2) per input, hence the small slices (``agreement_input_bytes``).
"""

from __future__ import annotations

from collections import Counter

from bpebench.algorithms.pipeline.agreement import disagreement, split_text
from bpebench.algorithms.core.encoder import Encoder
from bpebench.algorithms.core.registry import make_encoder
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

from .inputs import TEXT_CATEGORIES, chunks, is_unsplittable
from .subjects import Subject
from .tasks import RunContext, Task, stage


class _RawShim(Encoder):
    """A peer's raw BPE entry point seen as an Encoder (for ``bpebench.algorithms.pipeline.agreement``)."""

    def __init__(self, subject: Subject, vocabulary) -> None:
        super().__init__(vocabulary)
        self.name = subject.name
        self._raw = subject.raw

    def encode(self, data: bytes) -> list[int]:
        return list(self._raw(data))


def _text_slices(text: str, *, count: int, size: int) -> list[str]:
    data = text.encode("utf-8", "surrogatepass")
    return [c.decode("utf-8", "ignore") for c in chunks(data, count=count, size=size)]


def _shown(data: bytes, limit: int = 60) -> str:
    text = repr(data[:limit])
    return text + ("..." if len(data) > limit else "")


def _row_from_disagreement(result: dict) -> dict:
    examples = result["examples"]
    first = ""
    if examples:
        smallest = min(examples, key=lambda e: len(e["piece"]))
        first = (f"{_shown(smallest['piece'])}: got {len(smallest['tokens'])} tokens "
                 f"{[t for t in smallest['tokens']][:8]}, naive {len(smallest['reference_tokens'])} "
                 f"{[t for t in smallest['reference_tokens']][:8]}")
    n = result["pieces"]
    return {
        "inputs": n,
        "exact_matches": round(result["exact_match_rate"] * n),
        "reference_tokens": result["reference_tokens"],
        "subject_tokens": result["tokens"],
        "count_diffs": {str(k): v for k, v in result["count_diff_histogram"].items()},
        "invalid_inputs": round(result["invalid_rate"] * n),
        "first_mismatch": first[:400],
    }


@stage("agreement", "Correctness: agreement with naive")
def agreement_tasks(ctx: RunContext) -> list[Task]:
    tasks: list[Task] = []
    plan = ctx.plan
    for vocab_name in ctx.vocab_names:
        vocab = ctx.vocab(vocab_name)
        naive = make_encoder("naive", vocab)
        naive_tokenizer = Tokenizer(vocab, algorithm=naive)
        sources = list(ctx.sources(vocab_name, TEXT_CATEGORIES))
        sources += ctx.sources(vocab_name, ("adversarial",), keep=lambda s, v=vocab: is_unsplittable(v, s))
        for source in sources:
            total = plan.agreement_inputs * plan.agreement_input_bytes * 2
            texts = _text_slices(ctx.text(vocab_name, source, total), count=plan.agreement_inputs,
                                 size=plan.agreement_input_bytes)
            raw_inputs = [t.encode("utf-8", "surrogatepass") for t in texts]
            for subject in ctx.subjects(vocab_name):
                if subject.is_reference:
                    continue
                base = {"vocab": vocab_name, "subject": subject.name, "kind": subject.kind, "corpus": source.name,
                        "declared_exact": "" if subject.declared_exact is None else str(subject.declared_exact)}
                label = f"{vocab_name} {source.name} {subject.name}"
                if subject.kind == "encoder":
                    encoder = subject.handle
                    tasks.append(Task("agreement.csv", {**base, "mode": "raw"}, f"{label} raw",
                                      _compare_encoder(encoder, naive, raw_inputs)))
                    tasks.append(Task("agreement.csv", {**base, "mode": "pieces"}, f"{label} pieces",
                                      _compare_pieces(encoder, naive, vocab, texts)))
                else:
                    if subject.raw is not None:
                        tasks.append(Task("agreement.csv", {**base, "mode": "raw"}, f"{label} raw",
                                          _compare_encoder(_RawShim(subject, vocab), naive, raw_inputs)))
                    if subject.pipeline is not None:
                        tasks.append(Task("agreement.csv", {**base, "mode": "pipeline"}, f"{label} pipeline",
                                          _compare_pipeline(subject, naive_tokenizer, texts)))
    return tasks


def _compare_encoder(encoder: Encoder, naive: Encoder, inputs: list[bytes]):
    return lambda: _row_from_disagreement(disagreement(encoder, naive, inputs))


def _compare_pieces(encoder: Encoder, naive: Encoder, vocab, texts: list[str]):
    def run() -> dict:
        pieces = [p for t in texts for p in split_text(vocab, t)]
        return _row_from_disagreement(disagreement(encoder, naive, pieces))
    return run


def _compare_pipeline(subject: Subject, naive_tokenizer: Tokenizer, texts: list[str]):
    def run() -> dict:
        same = 0
        diffs: Counter = Counter()
        first = ""
        ref_tokens = sub_tokens = 0
        for text in texts:
            expected = naive_tokenizer.encode_ordinary(text)
            got = list(subject.pipeline(text))
            ref_tokens += len(expected)
            sub_tokens += len(got)
            diffs[len(got) - len(expected)] += 1
            if got == expected:
                same += 1
            elif not first:
                at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
                first = (f"{text[:60]!r}: first difference at token {at}: got {got[at:at + 4]}, "
                         f"naive {expected[at:at + 4]}")
        return {"inputs": len(texts), "exact_matches": same, "reference_tokens": ref_tokens,
                "subject_tokens": sub_tokens, "count_diffs": {str(k): v for k, v in sorted(diffs.items())},
                "first_mismatch": first[:400]}
    return run


# ----------------------------------------------------------------------------- conformance
@stage("conformance", "Conformance kit")
def conformance_tasks(ctx: RunContext) -> list[Task]:
    from bpebench.properties import check_encoder

    vocabularies = ["random", *ctx.vocab_names] if ctx.plan.conformance_real_vocabularies else ["random"]
    ctx.note("conformance", f"kit run on vocabularies {', '.join(vocabularies)} ('random': small vocabularies "
                            f"trained per example), {ctx.plan.conformance_examples} examples per check")
    tasks: list[Task] = []
    seen: set[str] = set()
    for vocab_name in ctx.vocab_names:
        for subject in ctx.subjects(vocab_name):
            if subject.kind != "encoder" or subject.name in seen:
                continue
            seen.add(subject.name)
            key = {"vocab": "(kit)", "subject": subject.name, "check": "(all)"}
            tasks.append(Task("conformance.csv", key, subject.name,
                              _run_kit(ctx, check_encoder, subject.name, vocabularies)))
    return tasks


def _run_kit(ctx: RunContext, check_encoder, name: str, vocabularies: list[str]):
    """Run the kit on one encoder; every result is stored as it arrives (Ctrl-C keeps them)."""
    def store(result) -> None:
        ctx.store.append("conformance.csv", {"subject": name, **record(result)})

    def run() -> dict:
        results = check_encoder(name, vocabularies=vocabularies, max_examples=ctx.plan.conformance_examples,
                                isolate="auto" if ctx.plan.conformance_isolated else False, on_result=store)
        failed = sum(1 for r in results if not r.ok)
        return {"status": "done", "detail": f"{len(results)} results, {failed} failures"}
    return run


def record(result) -> dict:
    """A kit ``CheckResult`` as a ``conformance.csv`` row (without the subject)."""
    counterexample = result.counterexample
    shown = "" if counterexample is None else _shown(bytes(counterexample), 200)
    if not shown and result.example:
        shown = str(result.example)
    detail = result.message or ""
    if result.reproduce:
        detail = f"{detail} (replay: {result.reproduce})" if detail else f"replay: {result.reproduce}"
    return {"vocab": result.vocabulary, "check": result.check, "status": result.status,
            "detail": detail[:800], "counterexample": shown[:600]}
