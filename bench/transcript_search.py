"""How fast one user's transcript search is in a large SessionDB, and how fast appends are.

Run: uv run python bench/transcript_search.py [--messages N] [--users U] [--json PATH]

Builds a temp state.db of N messages (default 1,000,000) across U users (default
1,000) through ``SessionDB.append_message``, as a gateway would write them:
sessions of 10-40 turns for random users, many open at once, so the messages of
one user are interleaved with everyone else's. Every message is 20 words drawn
from a Zipf vocabulary (s = 1.0; seeded, so every run builds the same database).

Then, for the user whose history is the median length, it times searches (the
user's latest session excluded, as the agent's tool does) for common, medium
and rare words, all-words multi-word queries and multi-word queries that find
nothing with all words and fall back to any word. Prints p50/p99 per kind (and
the p50 of the kind's slowest query), the append rate (overall while building,
and into the full database), and writes the figures as JSON (default
``bench/results/transcript_search.json``).
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import statistics
import string
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory.transcripts import SCHEMA_VERSION, SessionDB  # noqa: E402

SEED = 20240611
VOCABULARY = 50_000
WORDS_PER_MESSAGE = 20
ZIPF_S = 1.0
OPEN_SESSIONS = 64
"""Sessions being written at once: the appends of different users interleave."""
TURNS = (10, 40)
TAIL_APPENDS = 5_000
"""Appends timed once the database is full (the rate a long-running gateway sees)."""
REPEATS = 25
"""Timed runs of every query (after one warm-up run)."""
RESULTS = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results"))


@dataclass
class Corpus:
    """The seeded vocabulary and a sampler of Zipf-distributed words."""

    rng: random.Random
    words: list[str]
    cumulative: list[float] = field(default_factory=list)

    @classmethod
    def build(cls, seed: int, size: int) -> Corpus:
        rng = random.Random(seed)
        seen: set[str] = set()
        words: list[str] = []
        while len(words) < size:
            word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 9)))
            if word not in seen:
                seen.add(word)
                words.append(word)
        weights = [1.0 / (rank**ZIPF_S) for rank in range(1, size + 1)]
        return cls(rng, words, list(itertools.accumulate(weights)))

    def message(self) -> str:
        total = self.cumulative[-1]
        picks = [
            bisect.bisect(self.cumulative, self.rng.random() * total)
            for _ in range(WORDS_PER_MESSAGE)
        ]
        return " ".join(self.words[min(pick, len(self.words) - 1)] for pick in picks)


@dataclass
class Built:
    db: SessionDB
    per_user: Counter[str]
    sessions: dict[str, list[str]]
    append_seconds: float
    appended: int


@dataclass
class Writing:
    """A session being written: whose it is, turns left, the next message's role."""

    session_id: str
    user: str
    left: int
    role: str = "user"


def build(path: Path, messages: int, users: int, corpus: Corpus) -> Built:
    """Fill ``path`` with ``messages`` messages of ``users`` users; time the appends."""
    rng = random.Random(SEED + 1)
    db = SessionDB(path)
    per_user: Counter[str] = Counter()
    sessions: dict[str, list[str]] = {}
    writing: list[Writing] = []
    started = last_report = time.perf_counter()
    clock = 1_700_000_000.0
    made = appended = 0
    while appended < messages:
        while len(writing) < OPEN_SESSIONS:
            user = f"telegram:{rng.randrange(users)}"
            session_id = f"s{made}"
            made += 1
            db.create_session(session_id, platform="telegram", user_key=user, started_at=clock)
            sessions.setdefault(user, []).append(session_id)
            writing.append(Writing(session_id, user, rng.randint(*TURNS)))
        slot = rng.randrange(len(writing))
        one = writing[slot]
        clock += 0.5
        db.append_message(one.session_id, one.role, corpus.message(), timestamp=clock)
        appended += 1
        per_user[one.user] += 1
        one.left -= 1
        one.role = "assistant" if one.role == "user" else "user"
        if one.left <= 0:
            db.end_session(one.session_id, "idle", ended_at=clock)
            writing.pop(slot)
        now = time.perf_counter()
        if now - last_report > 15:
            last_report = now
            rate = appended / (now - started)
            print(f"  … {appended:,} messages ({rate:,.0f}/s)", file=sys.stderr)
    return Built(db, per_user, sessions, time.perf_counter() - started, appended)


def tail_rate(db: SessionDB, corpus: Corpus, count: int) -> float:
    """Appends per second into the full database, in one new session."""
    db.create_session("tail", platform="telegram", user_key="telegram:tail")
    started = time.perf_counter()
    for n in range(count):
        db.append_message("tail", "user" if n % 2 == 0 else "assistant", corpus.message())
    return count / (time.perf_counter() - started)


def queries(corpus: Corpus, rng: random.Random) -> dict[str, list[str]]:
    """Query texts per kind; the ranks are positions in the Zipf vocabulary."""
    words = corpus.words
    common = words[:10]
    medium = [words[rank] for rank in rng.sample(range(50, 500), 10)]
    rare = [words[rank] for rank in rng.sample(range(20_000, len(words)), 10)]
    multi = [f"{words[a]} {words[b]}" for a, b in zip(range(0, 10), range(50, 60), strict=True)]
    multi += [
        f"{words[rng.randrange(5)]} {words[rng.randrange(100, 1_000)]} {words[rng.randrange(20)]}"
        for _ in range(5)
    ]
    # words that never meet in one message: the all-words query finds nothing, any-word runs
    fallback = [f"{words[r]} zzqnever{r}" for r in range(0, 10)]
    return {
        "common": common,
        "medium": medium,
        "rare": rare,
        "multi_word": multi,
        "fallback": fallback,
    }


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def time_searches(db: SessionDB, user: str, exclude: str, texts: list[str]) -> dict[str, float]:
    samples: list[float] = []
    per_text: list[float] = []
    hits: list[int] = []
    for text in texts:
        db.search(user, text, limit=10, exclude_session_id=exclude)  # warm-up
        mine: list[float] = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            found = db.search(user, text, limit=10, exclude_session_id=exclude)
            mine.append((time.perf_counter() - started) * 1000)
        samples += mine
        per_text.append(statistics.median(mine))
        hits.append(len(found))
    return {
        "p50_ms": statistics.median(samples),
        "p99_ms": percentile(samples, 0.99),
        "max_ms": max(samples),
        "worst_query_p50_ms": max(per_text),
        "mean_hits": statistics.fmean(hits),
        "searches": float(len(samples)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--json", type=Path, default=RESULTS / "transcript_search.json")
    args = parser.parse_args()

    corpus = Corpus.build(SEED, VOCABULARY)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        print(f"building {args.messages:,} messages across {args.users:,} users …", file=sys.stderr)
        built = build(path, args.messages, args.users, corpus)
        db = built.db
        try:
            tail = tail_rate(db, corpus, min(TAIL_APPENDS, max(args.messages // 10, 100)))
            ranked = sorted(built.per_user.items(), key=lambda item: (item[1], item[0]))
            user, history = ranked[len(ranked) // 2]
            exclude = built.sessions[user][-1]
            rng = random.Random(SEED + 2)
            results = {
                kind: time_searches(db, user, exclude, texts)
                for kind, texts in queries(corpus, rng).items()
            }
        finally:
            db.close()
        size_mb = sum(p.stat().st_size for p in Path(tmp).iterdir()) / 1e6

    report = {
        "schema_version": SCHEMA_VERSION,
        "messages": args.messages,
        "users": args.users,
        "user_messages": history,
        "database_mb": round(size_mb, 1),
        "append_per_second_build": built.appended / built.append_seconds,
        "append_per_second_full_db": tail,
        "search": results,
    }
    print(
        f"\n{args.messages:,} messages, {args.users:,} users, schema {SCHEMA_VERSION};"
        f" searching a user with {history:,} messages ({size_mb:,.0f} MB on disk)"
    )
    print(f"{'query':<12}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'worst p50':>11}{'hits':>7}")
    for kind, figures in results.items():
        print(
            f"{kind:<12}{figures['p50_ms']:>10.2f}{figures['p99_ms']:>10.2f}"
            f"{figures['max_ms']:>10.2f}{figures['worst_query_p50_ms']:>11.2f}"
            f"{figures['mean_hits']:>7.1f}"
        )
    print(f"appends/s while building : {report['append_per_second_build']:>10,.0f}")
    print(f"appends/s into the full db: {tail:>9,.0f}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written: {args.json}")


if __name__ == "__main__":
    main()
