"""Synthetic corpus, queries and the shared embedding cache of ``bench/latency.py``.

The corpus imitates what an agent stores: preferences, facts about people, events,
tasks, instructions and small talk, built from templates and a word bank with a seeded
:class:`random.Random`, so every run (and every machine) gets the same texts.

Embedding 100k texts with all-MiniLM-L6-v2 on two cores takes minutes, so the bulk load
embeds each distinct corpus text once, caches the vectors on disk (``/tmp`` by default,
keyed by a hash of the texts and the model) and feeds both Oblivion and raw Chroma the
same vectors through :class:`PrecomputedEmbedder`. Queries are always embedded for real.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm


# ---------------------------------------------------------------- word bank
def _bank(text: str, sep: str | None = None) -> tuple[str, ...]:
    return tuple(text.split(sep))


NAMES = _bank(
    "Ana Bruno Chloe Dmitri Elena Farid Grace Hiro Ines Jonas Kemal Lena Mateo Nadia Omar "
    "Priya Quentin Rosa Sami Tomas Uma Victor Wen Ximena Yusuf Zoe Aiko Bilal Carmen Diego "
    "Emeka Fatima Gustav Hana Ivan Julia Kofi Lucia Malik Noor Olga Pablo Rania Stefan Tariq "
    "Ugo Vera Willem Yara Zain Amara Boris Celia Dario Esme Felix Greta Hugo Irene Jamal"
)
RELATIONS = _bank(
    "sister brother mother father cousin aunt uncle daughter son grandmother grandfather "
    "partner neighbour colleague manager friend flatmate niece nephew"
)
CITIES = _bank(
    "Lisbon Porto Madrid Seville Paris Lyon Berlin Hamburg Munich Vienna Prague Warsaw "
    "Krakow Budapest Rome Milan Naples Athens Istanbul Cairo Nairobi Lagos Accra Toronto "
    "Montreal Boston Chicago Denver Seattle Austin Mexico-City Lima Bogota Santiago Tokyo "
    "Osaka Seoul Taipei Singapore Jakarta Mumbai Delhi Dubai Oslo Stockholm Helsinki Dublin "
    "Edinburgh Manchester Amsterdam"
)
JOBS = _bank(
    "nurse teacher architect plumber data-analyst pilot chef lawyer dentist electrician "
    "journalist pharmacist carpenter economist translator firefighter baker librarian "
    "physiotherapist software-engineer accountant photographer veterinarian designer "
    "mechanic researcher paramedic barista farmer surveyor geologist tailor"
)
FOODS = _bank(
    "sushi ramen paella lasagne tacos falafel curry pho risotto dumplings couscous "
    "goulash moussaka pierogi ceviche bibimbap shakshuka burritos gnocchi biryani "
    "pad-thai croissants pancakes porridge granola hummus tapas kebab pizza noodles"
)
DRINKS = _bank(
    "green tea|black coffee|espresso|oat-milk latte|chai|matcha|hot chocolate|sparkling "
    "water|orange juice|kombucha|mint tea|flat white|rooibos|lemonade",
    sep="|",
)
HOBBIES = _bank(
    "bouldering pottery chess sailing birdwatching salsa running cycling knitting baking "
    "photography gardening surfing kayaking painting woodworking yoga fencing climbing "
    "calligraphy origami tennis swimming hiking skiing archery juggling drumming"
)
TOPIC_LIST = _bank(
    "quarterly budget|hiring plan|database migration|onboarding flow|pricing page|security "
    "audit|marketing campaign|customer churn|release notes|API versioning|office move|tax "
    "return|mortgage renewal|school enrolment|holiday plans|wedding seating|car insurance|"
    "garden redesign|kitchen renovation|conference talk|thesis draft|grant proposal|sprint "
    "retro|incident report|vendor contract|laptop upgrade|team offsite|search ranking|"
    "mobile app redesign|data retention policy|support backlog|board meeting|book club|"
    "charity run|apartment lease|visa application|product launch|analytics dashboard",
    sep="|",
)
PROJECTS = _bank(
    "Atlas Beacon Cobalt Delta Ember Falcon Gemini Harbor Iris Juniper Kestrel Lumen "
    "Meridian Nimbus Orion Pioneer Quartz Raven Sierra Tundra Umbra Vortex Willow Zephyr"
)
TOOLS = _bank(
    "Notion Slack Figma Jira Excel Postgres Python Rust VS-Code Obsidian Trello Airtable "
    "Tableau Docker Kubernetes Terraform Blender Lightroom Ableton Zotero LaTeX Grafana"
)
OBJECT_LIST = _bank(
    "printer|bike|router|dishwasher|boiler|laptop|passport|car tyres|fridge filter|smoke "
    "alarm|garden fence|roof tiles|lawn mower|camera lens|piano|guitar strings|bathroom tap|"
    "heater|thermostat|washing machine|kettle|desk lamp|office chair|winter coat|suitcase",
    sep="|",
)
TASK_VERBS = _bank(
    "renew|book|cancel|repair|order|return|pay for|clean|replace|insure|sell|update|"
    "check|pick up|register",
    sep="|",
)
DAYPARTS = ("morning", "afternoon", "evening", "night", "weekend")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = _bank(
    "January February March April May June July August September October November December"
)
TIMES = ("8:30", "9:00", "10:15", "11:00", "12:30", "14:00", "15:45", "16:30", "18:00", "19:30")
STYLES = _bank(
    "use British spelling|keep answers under five sentences|cite the source|use metric "
    "units|give code examples in Python|avoid jargon|start with a one-line summary|use "
    "bullet points|write dates as YYYY-MM-DD|ask before booking anything|mention costs in "
    "euros|double-check time zones",
    sep="|",
)
ALLERGENS = ("peanuts", "shellfish", "gluten", "lactose", "sesame", "eggs", "soy", "kiwi")
WEATHER = ("sunny", "rainy", "foggy", "windy", "freezing", "humid", "cloudy", "stormy")
ANNOYANCES = _bank(
    "meetings run over time|people reply-all|apps autoplay videos|trains are late|"
    "emails have no subject|the wifi drops during calls|notifications arrive at night|"
    "forms ask for the same data twice",
    sep="|",
)
EVENTS = ("conference", "wedding", "job interview", "workshop", "funeral", "hackathon", "concert")
COMPANIES = _bank(
    "Acme|Globex|Initech|Umbrella|Hooli|Stark Industries|Wayne Enterprises|Soylent|Tyrell|"
    "Cyberdyne|Vandelay|Wonka|Oscorp|Massive Dynamic",
    sep="|",
)
PETS = ("cat", "dog", "parrot", "rabbit", "tortoise", "hamster", "goldfish", "ferret")


def _pick(rng: random.Random, seq: Sequence[str]) -> str:
    return seq[rng.randrange(len(seq))]


_PAIRS: dict[str, Sequence[str]] = {
    "name": NAMES,
    "city": CITIES,
    "topic": TOPIC_LIST,
    "food": FOODS,
}
_SIMPLE: dict[str, Sequence[str]] = {
    "relation": RELATIONS,
    "job": JOBS,
    "drink": DRINKS,
    "hobby": HOBBIES,
    "project": PROJECTS,
    "tool": TOOLS,
    "object": OBJECT_LIST,
    "verb": TASK_VERBS,
    "daypart": DAYPARTS,
    "weekday": WEEKDAYS,
    "month": MONTHS,
    "time": TIMES,
    "style": STYLES,
    "allergen": ALLERGENS,
    "weather": WEATHER,
    "annoyance": ANNOYANCES,
    "event": EVENTS,
    "company": COMPANIES,
    "pet": PETS,
}


class _Fields(dict[str, Any]):
    """Template slots, drawn from the word bank on first use (so a template only pays for
    the slots it has); ``name2``/``city2``/... always differ from ``name``/``city``/..."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng

    def _pair(self, key: str, seq: Sequence[str]) -> str:
        first, second = self.rng.sample(seq, 2)
        self[key.rstrip("2")] = first.replace("-", " ")
        self[key.rstrip("2") + "2"] = second.replace("-", " ")
        return str(self[key])

    def __missing__(self, key: str) -> Any:
        rng = self.rng
        base = key.rstrip("2")
        if base in _PAIRS:
            return self._pair(key, _PAIRS[base])
        if key in _SIMPLE:
            value: Any = _pick(rng, _SIMPLE[key]).replace("-", " ")
        elif key == "day":
            value = rng.randint(1, 28)
        elif key == "year":
            value = rng.randint(2015, 2025)
        elif key == "number":
            value = rng.choice((2, 3, 5, 8, 12, 15, 20, 25, 40, 60, 120, 250, 400, 1500, 3200))
        elif key == "percent":
            value = rng.randint(2, 60)
        else:
            raise KeyError(key)
        self[key] = value
        return value


MEMORY_TEMPLATES: tuple[str, ...] = (
    # facts about people
    "{name}'s {relation} lives in {city} and works as a {job}.",
    "{name} moved from {city} to {city2} in {month} {year} for a new job at {company}.",
    "{name} is a {job} at {company} and mostly works on the {topic}.",
    "{name} has a {pet} called {name2} and takes it to the park every {daypart}.",
    "{name} started {hobby} in {month} {year} and now goes every {weekday}.",
    "{name} is allergic to {allergen}, so never order {food} with it for them.",
    "{name}'s birthday is on {month} {day}; they like {drink} and {hobby}.",
    "{name} recommended a book about the {topic} written by {name2}.",
    "{name} uses {tool} for the {topic} and shares the files with {name2}.",
    "{name} and {name2} met at a {event} in {city} back in {year}.",
    # preferences
    "I prefer {drink} in the {daypart} and {food} for dinner on {weekday}s.",
    "I like {hobby} much more than {hobby} classes at the gym.",
    "My favourite food is {food}, especially the one from the place near {city} station.",
    "I hate it when {annoyance}.",
    "I'd rather take the train than fly when travelling to {city}.",
    "I really enjoy {hobby} with {name} on {weekday} {daypart}s.",
    "My favourite tool for the {topic} is {tool}.",
    # events
    "Meeting with {name} about the {project} {topic} on {weekday} at {time}.",
    "Yesterday {name} presented the {topic} results to the {project} team.",
    "Last week we flew from {city} to {city2} for {name}'s {event}.",
    "The {event} in {city} is on {month} {day}, and {name} is giving a talk there.",
    "Tomorrow at {time} there is a call with {company} about the {topic}.",
    "On {weekday} the {project} team had a review of the {topic} with {name}.",
    # tasks
    "Remind me to {verb} the {object} before {weekday}.",
    "I need to {verb} the {object} by {month} {day}, it costs about {number} euros.",
    "Todo: send {name} the notes on the {topic} before the {project} deadline.",
    "I'll {verb} the {object} for {name} when I'm back from {city}.",
    "The deadline for the {project} {topic} moved to {month} {day}.",
    "Add {food} and {drink} to the shopping list for {name}'s visit on {weekday}.",
    # instructions
    "Always {style} when writing about the {topic}.",
    "From now on, {style} in every reply to {name}.",
    "Never schedule anything with {name} on {weekday} {daypart}s.",
    "Make sure to {style} in the {project} reports.",
    "Don't suggest {food} to {name}; they dislike it since the trip to {city}.",
    # facts
    "The budget for the {project} {topic} is {number} thousand euros per quarter.",
    "The {project} service runs on {tool} and handles about {number} requests a second.",
    "Our {topic} reduced customer churn by {percent} percent last quarter.",
    "The {object} in the {city} office was replaced in {month} {year}.",
    "{company} signed the contract for the {topic} in {month} {year}.",
    "The flight from {city} to {city2} takes about {number} minutes with a stop.",
    "The {project} release uses {tool} and {tool} for the {topic}.",
    # small talk
    "Good {daypart}! The weather in {city} is {weather} today.",
    "Thanks, that was really helpful for the {topic}!",
    "Haha, {name}'s {pet} is hilarious.",
    "Hope you have a lovely {weekday} {daypart}.",
    "It's so {weather} in {city} right now, can't wait for {month}.",
)

QUERY_TEMPLATES: tuple[str, ...] = (
    "Where does {name}'s {relation} live?",
    "What does {name} do for a living?",
    "Which food is {name} allergic to?",
    "When is the meeting with {name} about the {topic}?",
    "What should I remember to {verb} before {weekday}?",
    "Which tool does {name} use for the {topic}?",
    "How should I format replies about the {topic}?",
    "What is the budget for the {project} project?",
    "Who recommended a book about the {topic}?",
    "What do I like to drink in the {daypart}?",
    "When did {name} start {hobby}?",
    "What happened at the {event} in {city}?",
    "When is the {project} deadline?",
    "What did {company} sign about the {topic}?",
    "What is my favourite food near {city}?",
    "How long is the flight from {city} to {city2}?",
    "Which days should I avoid scheduling with {name}?",
    "What is {name}'s pet called?",
    "Any notes on the {topic} for the {project} team?",
    "What was decided in the {topic} review with {name}?",
)


def _generate(
    templates: Sequence[str], n: int, seed: int, exclude: set[str] | None = None
) -> list[str]:
    rng = random.Random(seed)
    seen: set[str] = set(exclude or ())
    out: list[str] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            raise RuntimeError(f"could not generate {n} distinct texts from the templates")
        text = _pick(rng, templates).format_map(_Fields(rng))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def memory_texts(n: int, seed: int, exclude: set[str] | None = None) -> list[str]:
    """``n`` distinct memory-like texts (deterministic for a given seed)."""
    return _generate(MEMORY_TEMPLATES, n, seed, exclude)


def query_texts(n: int, seed: int) -> list[str]:
    """``n`` distinct question-like queries (deterministic for a given seed)."""
    return _generate(QUERY_TEMPLATES, n, seed)


def memory_ids(n: int, seed: int) -> list[str]:
    """``n`` distinct 32-hex-digit ids (uuid4-shaped), deterministic for a given seed."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        mid = f"{rng.getrandbits(128):032x}"
        if mid not in seen:
            seen.add(mid)
            out.append(mid)
    return out


# ---------------------------------------------------------------- embedding cache
def default_cache_dir() -> Path:
    """Where corpus vectors are cached (``$OBLIVION_BENCH_CACHE`` or a folder in /tmp)."""
    return Path(os.environ.get("OBLIVION_BENCH_CACHE", "/tmp/oblivion-bench-cache"))


def embed_corpus(
    embedder: Any,
    texts: Sequence[str],
    model_tag: str,
    cache_dir: Path | None,
    *,
    cached_only: bool = False,
) -> tuple[np.ndarray, float, bool]:
    """Embed ``texts`` once (or load them from the cache).

    Returns:
        Unit-length float32 vectors, seconds spent embedding (0 when cached), and whether
        the cache was used (``cached_only``: an empty array and ``False`` if not cached,
        nothing embedded).
    """
    digest = hashlib.sha256()
    digest.update(model_tag.encode())
    for t in texts:
        digest.update(b"\x00" + t.encode())
    path = None
    if cache_dir is not None:
        path = cache_dir / f"vectors-{len(texts)}-{digest.hexdigest()[:16]}.npy"
        if path.exists():
            vecs = np.load(path)
            if vecs.shape[0] == len(texts):
                return vecs.astype(np.float32, copy=False), 0.0, True
    if cached_only:
        return np.zeros((0, 0), dtype=np.float32), 0.0, False
    started = time.perf_counter()
    chunk = 1024
    parts: list[np.ndarray] = []
    with tqdm(total=len(texts), desc="embedding corpus", unit="text") as bar:
        for start in range(0, len(texts), chunk):
            part = list(texts[start : start + chunk])
            parts.append(np.asarray(embedder.embed_documents(part), dtype=np.float32))
            bar.update(len(part))
    vecs = np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    seconds = time.perf_counter() - started
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, vecs)
        tmp.replace(path)
    return vecs, seconds, False


#: The latency benchmark's corpus seed, and its size (100k memories + 1k held out).
LATENCY_SEED = 20_250_601
LATENCY_CORPUS = 101_000


def latency_vectors(real: Any) -> np.ndarray:
    """The vectors of the latency benchmark's corpus (cached, or embedded first): what
    the size sweeps of ``bench/exact_archive.py`` and ``bench/two_stage.py`` search."""
    corpus = memory_texts(LATENCY_CORPUS, LATENCY_SEED)
    vectors, _, _ = embed_corpus(
        real, corpus, f"{real.model_name}|{real.model_path}", default_cache_dir()
    )
    return vectors


def sweep_inputs(queries: int) -> tuple[Any, np.ndarray, list[str]]:
    """What the size sweeps (``bench/two_stage.py``, ``exact_archive.py``,
    ``sketch_archive.py``) search with: the local model, the latency benchmark's corpus
    vectors (:func:`latency_vectors`) and ``queries`` query texts, the same in each."""
    from oblivion_core import FastEmbedEmbedder

    real = FastEmbedEmbedder()
    return real, latency_vectors(real), query_texts(queries, LATENCY_SEED + 7)


def alternating(
    real: Any, queries: Sequence[str], label: str, one: Any, other: Any
) -> Iterator[tuple[Any, np.ndarray]]:
    """Two searches per query, ``one`` and ``other``, taking turns going first, each
    right after a query embedding of its own (as in a recall: the embedding evicts the
    caches a search reads; the second embeds ``query + "?"``): yields each search with
    its query vector, with a progress bar named ``label``."""
    for k, q in enumerate(tqdm(queries, desc=label, unit="q", leave=False)):
        order = (one, other) if k % 2 else (other, one)
        for search, text in zip(order, (q, q + "?"), strict=True):
            yield search, np.asarray(real.embed_query(text), dtype=np.float32)


def timing(samples_ms: Sequence[float]) -> dict[str, float]:
    """Median and p95 of a list of milliseconds."""
    return {
        "median_ms": float(np.median(samples_ms)),
        "p95_ms": float(np.percentile(samples_ms, 95)),
    }


def bench_args(
    doc: str, out: Path, argv: list[str] | None, table: Any, **counts: tuple[int, str]
) -> Any | None:
    """The command line of a benchmark that writes one results file: ``--out``,
    ``--readme-table`` and an integer option per ``counts`` entry (name -> default and
    what it counts). The parsed arguments, or ``None`` once ``--readme-table`` printed
    ``table(results)`` of the results file."""
    import argparse
    import json

    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for name, (default, what) in counts.items():
        flag = "--" + name.replace("_", "-")
        p.add_argument(flag, dest=name, type=int, default=default, help=f"{what} ({default})")
    p.add_argument("--out", type=Path, default=out)
    p.add_argument(
        "--readme-table", action="store_true", help="print the table from --out and exit"
    )
    args = p.parse_args(argv)
    if args.readme_table:
        print(table(json.loads(args.out.read_text())))
        return None
    return args


def sweep_args(doc: str, out: Path, queries: int, argv: list[str] | None, table: Any) -> Any | None:
    """The command line of a size sweep: :func:`bench_args` with ``--queries``."""
    return bench_args(doc, out, argv, table, queries=(queries, "queries per size"))


def write_results(path: Path, results: dict[str, Any], table: Any) -> None:
    """Write a sweep's results as JSON and print its README table."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))


class PrecomputedEmbedder:
    """Document vectors from the cache, queries from the real model.

    ``embed_documents`` looks each text up in the cache (falling back to the real model
    for unknown texts); ``embed_query`` always runs the real model and records how long
    it took in :attr:`last_query_s`, so a caller can split a recall's latency into query
    embedding and everything else.
    """

    def __init__(self, real: Any, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.real = real
        self.vectors = vectors
        self._row = {t: i for i, t in enumerate(texts)}
        self.misses = 0
        self.last_query_s = 0.0

    @property
    def busy_cores(self) -> bool:
        """The real embedder's answer: Oblivion schedules recall work as it would with it."""
        return bool(getattr(self.real, "busy_cores", False))

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` (cached rows; misses are embedded for real)."""
        rows = [self._row.get(t, -1) for t in texts]
        out = self.vectors[np.asarray(rows, dtype=np.int64)] if texts else self.vectors[:0]
        missing = [k for k, r in enumerate(rows) if r < 0]
        if missing:
            self.misses += len(missing)
            out = out.copy()
            out[missing] = np.asarray(
                self.real.embed_documents([texts[k] for k in missing]), dtype=np.float32
            )
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a query with the real model (never cached)."""
        started = time.perf_counter()
        vec = np.asarray(self.real.embed_query(text), dtype=np.float32)
        self.last_query_s = time.perf_counter() - started
        return vec
