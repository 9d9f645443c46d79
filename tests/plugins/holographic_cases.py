"""The labelled recall set of the holographic memory provider: facts, queries, answers.

Shared by ``tests/plugins/test_holographic_ranking.py`` and
``bench/holographic_recall.py``. Each query is a paraphrase a user might
type, never a copy of its fact: other word forms ("deploys" / "deployed"),
only part of the fact's words, and distractor facts that share words with the
query (two siblings who both "live" somewhere, two allergies, two people who
"play"). A few queries are deliberately hard for a lexical scorer (a synonym
with no shared word: "jog" for "run", "boss" for "manager"); they stay in the
set and count as misses when missed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugins.memory.holographic import HolographicProvider

FACTS: dict[str, str] = {
    "coffee": "I prefer dark roast coffee in the morning.",
    "tea": "I like green tea in the afternoon.",
    "sister": "My sister Anna lives in Lisbon.",
    "brother": "My brother Tom lives in Berlin and works as a nurse.",
    "anna_job": "Anna works as a software engineer at Spotify.",
    "billing_db": "The team decided to use PostgreSQL as the database for the billing service.",
    "cache": "We use Redis as the cache for the session service.",
    "billing_deploy": "The billing service deploys every Tuesday.",
    "dog": "My dog Biscuit is a three-year-old beagle.",
    "dog_allergy": "Biscuit is allergic to chicken.",
    "my_allergy": "I am allergic to peanuts.",
    "running": "I run 10 km every Saturday morning.",
    "rust": "My favourite programming language is Rust.",
    "python": "I write most of my scripts in Python.",
    "meetings": "I hate meetings before 10am.",
    "dentist": "My dentist appointment is on March 3.",
    "passport": "My passport expires in June 2027.",
    "piano": "I play the piano on weekends.",
    "band": "Tom plays the guitar in a band called The Lanterns.",
    "partner_diet": "My partner Sam is vegetarian.",
    "birthday": "Sam's birthday is on 12 August.",
    "car": "I drive a blue Honda Civic.",
    "office": "The office is on the fourth floor of the Harbour building.",
    "laptop": "The laptop I use for work is a ThinkPad X1.",
    "flights": "I prefer aisle seats on long flights.",
    "japanese": "I'm learning Japanese with a tutor on Thursdays.",
    "staging": "The staging server runs Ubuntu 22.04.",
    "logs": "Production logs are kept for 30 days.",
    "manager": "My manager is called Priya.",
    "report": "Priya wants the quarterly report by Friday.",
    "reading": "I read science fiction novels before bed.",
    "breakfast": "I never eat breakfast on workdays.",
    "wifi": "The wifi password at home is stored in the password manager.",
    "film": "My favourite film is Spirited Away.",
    "standup": "We decided to move the standup to 9:30.",
}

QUERIES: list[tuple[str, str]] = [
    ("what kind of coffee do I like", "coffee"),
    ("which drink do I have in the afternoons", "tea"),
    ("where does my sister live", "sister"),
    ("which company does Anna work for", "anna_job"),
    ("which database did we pick for billing", "billing_db"),
    ("what cache does the session service use", "cache"),
    ("when is billing deployed", "billing_deploy"),
    ("how old is my dog", "dog"),
    ("Biscuit's allergies", "dog_allergy"),
    ("peanut allergy", "my_allergy"),
    ("how many km do I run", "running"),
    ("how far do I jog on weekends", "running"),
    ("what's my favorite programming language", "rust"),
    ("what language are my scripts written in", "python"),
    ("do I like early meetings", "meetings"),
    ("when is the dentist", "dentist"),
    ("when does my passport expire", "passport"),
    ("what instrument does Tom play", "band"),
    ("what musical instrument do I play", "piano"),
    ("is my partner a vegetarian", "partner_diet"),
    ("when is Sam's birthday", "birthday"),
    ("what car am I driving", "car"),
    ("which floor is the office on", "office"),
    ("what laptop do I have for work", "laptop"),
    ("seat preference when flying", "flights"),
    ("when are my Japanese lessons", "japanese"),
    ("what OS does the staging server run", "staging"),
    ("how long do we keep production logs", "logs"),
    ("who is my boss", "manager"),
    ("when is the quarterly report due", "report"),
    ("what do I read at night", "reading"),
    ("do I eat breakfast before work", "breakfast"),
    ("what's my favourite movie", "film"),
    ("what time is standup now", "standup"),
    ("where is the home wifi password", "wifi"),
    ("what does my brother do for work", "brother"),
    ("where does Tom live", "brother"),
]

UNRELATED_QUERIES: list[str] = [
    "what is the capital of Peru",
    "how do you bake sourdough bread",
    "explain quantum entanglement simply",
    "translate hello into Swahili",
]
"""Queries no fact answers: prefetch should recall nothing for most of them."""

SYNONYM_QUERIES: list[tuple[str, str]] = [
    ("who is my boss", "manager"),
    ("how far do I jog on weekends", "running"),
    ("which movie do I love most", "film"),
    ("what is my spouse's diet", "partner_diet"),
    ("what brew do I drink at dawn", "coffee"),
    ("what automobile do I own", "car"),
    ("when do we ship the payments system", "billing_deploy"),
    ("when does my travel document run out", "passport"),
    ("what computer do I use at my job", "laptop"),
    ("which nuts make me sick", "my_allergy"),
    ("what do I do on the keyboard instrument", "piano"),
    ("which tongue am I studying", "japanese"),
]
"""Questions that share no content word with their fact: a synonym or a
description stands for it ("boss" for "manager", "automobile" for "Honda
Civic"). Lexical scorers are expected to miss most; embeddings should not."""

STRUCTURE_FACTS: dict[str, str] = {
    "trip_tokyo": "Anna and Tom fly to Tokyo in May.",
    "leeds": "Sam and Priya went to university together in Leeds.",
    "gig_berlin": "Tom and The Lanterns play in Berlin on Friday.",
    "flat_lisbon": "Anna bought a flat in Lisbon near the river.",
    "walks": "Sam walks Biscuit every evening.",
    "review": "Priya asked Tom to review the quarterly report.",
    "album": "The Lanterns recorded their first album in Lisbon.",
    "dog_sitting": "Biscuit stays with Anna when Sam travels.",
    "lunch": "lunch with anna on friday",
}
"""Facts that tie several entities together, stored beside :data:`FACTS` for the
probe and reason cases (a mention without a capital, ``lunch``, is linked to no
entity and is still about Anna)."""

PROBES: list[tuple[str, set[str]]] = [
    ("Anna", {"sister", "anna_job", "trip_tokyo", "flat_lisbon", "dog_sitting", "lunch"}),
    ("Tom", {"brother", "band", "trip_tokyo", "gig_berlin", "review"}),
    ("Sam", {"partner_diet", "birthday", "leeds", "walks", "dog_sitting"}),
    ("Biscuit", {"dog", "dog_allergy", "walks", "dog_sitting"}),
    ("Priya", {"manager", "report", "leeds", "review"}),
    ("Lisbon", {"sister", "flat_lisbon", "album"}),
    ("Berlin", {"brother", "gig_berlin"}),
    ("The Lanterns", {"band", "gig_berlin", "album"}),
    ("Tom's", {"brother", "band", "trip_tokyo", "gig_berlin", "review"}),
    ("honda", {"car"}),
]
"""``(entity as a user would name it, the keys of every fact about it)``."""

REASONS: list[tuple[list[str], set[str]]] = [
    (["Anna", "Tom"], {"trip_tokyo"}),
    (["Tom", "Berlin"], {"brother", "gig_berlin"}),
    (["Sam", "Biscuit"], {"walks", "dog_sitting"}),
    (["Anna", "Lisbon"], {"sister", "flat_lisbon"}),
    (["Priya", "Tom"], {"review"}),
    (["Lanterns", "Lisbon"], {"album"}),
    (["Anna", "Sam", "Biscuit"], {"dog_sitting"}),
    (["Priya", "Sam", "Leeds"], {"leeds"}),
]
"""``(entities, the keys of the facts that tie all of them together)``."""


@dataclass(frozen=True)
class Recall:
    """How well one provider answered :data:`QUERIES`."""

    precision_at_1: float
    mean_rank: float
    """Rank of the right fact in the search results; one not returned counts as len(FACTS) + 1."""
    ms_per_query: float
    misses: list[tuple[str, str, str]]
    """``(query, wanted fact key, fact key ranked first or "")`` for each query missed."""
    in_top_5: float = 0.0
    """Share of the queries whose fact is among the first five results."""


def open_provider(home: Path, user_key: str = "telegram:1", **options: Any) -> HolographicProvider:
    """A holographic provider initialised for ``user_key`` under ``home``."""
    provider = HolographicProvider(**options)
    platform = user_key.split(":", 1)[0].split("#", 1)[0]
    provider.initialize(
        "session-1",
        chorus_home=home,
        platform=platform,
        user_key=user_key,
        agent_context="primary",
    )
    return provider


def tool(provider: HolographicProvider, **args: Any) -> dict[str, Any]:
    """One ``fact_store`` call, its JSON result parsed."""
    speaker = args.pop("speaker", None)
    extra = {"speaker": speaker} if speaker is not None else {}
    result: dict[str, Any] = json.loads(provider.handle_tool_call("fact_store", args, **extra))
    return result


def load_facts(provider: HolographicProvider) -> dict[int, str]:
    """Store every fact of :data:`FACTS`; fact id → fact key."""
    return {
        tool(provider, action="add", content=text)["fact_id"]: key for key, text in FACTS.items()
    }


def evaluate(
    provider: HolographicProvider,
    ids: dict[int, str],
    queries: list[tuple[str, str]] | None = None,
) -> Recall:
    """Run every query of ``queries`` (default :data:`QUERIES`) through ``fact_store`` search."""
    ranks: list[int] = []
    misses: list[tuple[str, str, str]] = []
    start = time.perf_counter()
    for query, wanted in QUERIES if queries is None else queries:
        found = [
            ids[f["id"]] for f in tool(provider, action="search", query=query, limit=50)["facts"]
        ]
        rank = found.index(wanted) + 1 if wanted in found else len(FACTS) + 1
        ranks.append(rank)
        if rank != 1:
            misses.append((query, wanted, found[0] if found else ""))
    elapsed = time.perf_counter() - start
    return Recall(
        precision_at_1=sum(r == 1 for r in ranks) / len(ranks),
        mean_rank=sum(ranks) / len(ranks),
        ms_per_query=elapsed * 1000 / len(ranks),
        misses=misses,
        in_top_5=sum(r <= 5 for r in ranks) / len(ranks),
    )


@dataclass(frozen=True)
class SetQuality:
    """How well probe or reason answered their labelled cases (sets of facts)."""

    precision: float
    """Share of the facts returned that are right (micro-averaged over the cases)."""
    recall: float
    """Share of the right facts that were returned."""
    exact: float
    """Share of the cases answered with exactly the right facts."""
    ms_per_query: float
    wrong: list[tuple[str, list[str], list[str]]]
    """``(case, missing keys, extra keys)`` of each case not answered exactly."""


def load_structure(provider: HolographicProvider) -> dict[int, str]:
    """Store :data:`FACTS` and :data:`STRUCTURE_FACTS`; fact id → fact key."""
    ids = load_facts(provider)
    for key, text in STRUCTURE_FACTS.items():
        ids[tool(provider, action="add", content=text)["fact_id"]] = key
    return ids


def _quality(answers: list[tuple[str, set[str], set[str]]], elapsed: float) -> SetQuality:
    returned = sum(len(got) for _, _, got in answers)
    right = sum(len(got & wanted) for _, wanted, got in answers)
    wanted_total = sum(len(wanted) for _, wanted, _ in answers)
    return SetQuality(
        precision=right / returned if returned else 0.0,
        recall=right / wanted_total if wanted_total else 0.0,
        exact=sum(got == wanted for _, wanted, got in answers) / len(answers),
        ms_per_query=elapsed * 1000 / len(answers),
        wrong=[
            (case, sorted(wanted - got), sorted(got - wanted))
            for case, wanted, got in answers
            if got != wanted
        ],
    )


def evaluate_probes(provider: HolographicProvider, ids: dict[int, str]) -> SetQuality:
    """Run every case of :data:`PROBES` through ``fact_store`` probe."""
    answers = []
    start = time.perf_counter()
    for name, wanted in PROBES:
        found = tool(provider, action="probe", entity=name, limit=50)["facts"]
        answers.append((name, wanted, {ids[f["id"]] for f in found}))
    return _quality(answers, time.perf_counter() - start)


def evaluate_reasons(provider: HolographicProvider, ids: dict[int, str]) -> SetQuality:
    """Run every case of :data:`REASONS` through ``fact_store`` reason (all must match)."""
    answers = []
    start = time.perf_counter()
    for names, wanted in REASONS:
        result = tool(provider, action="reason", entities=names, limit=50)
        got = {ids[f["id"]] for f in result["facts"]} if result["all_matched"] else set()
        answers.append((" + ".join(names), wanted, got))
    return _quality(answers, time.perf_counter() - start)
