"""Source of ``notebooks/llamaindex_chat.ipynb``; run this file to regenerate it.

The notebook is stored without outputs; ``test_notebook.py`` executes it and checks
that the stored cells match these sources.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
ROOT_HINT = str(ROOT)
NOTEBOOK = ROOT / "notebooks" / "llamaindex_chat.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "markdown",
        """# Oblivion + LlamaIndex: a chat that forgets the right things

Five simulated days of conversation with a `SimpleChatEngine` whose memory is
`OblivionMemory`. Every user turn becomes a memory with an *activation* that decays
with time and is raised by use. Small talk ("haha", "thanks!") has a half-life of
hours and sinks into the archive; an instruction given on day one has a half-life of
months and is still recalled when it matters on day six. Every context handed to the
model stays within the memory's token limit.

Runs offline: `MockLLM` stands in for the model, a `ManualClock` for the calendar, and
the local all-MiniLM-L6-v2 model embeds (set `OBLIVION_EMBEDDING_MODEL_PATH` to a local
copy, or let fastembed download it once); tiktoken counts tokens (`TIKTOKEN_CACHE_DIR`
holding its `cl100k_base` file, or one download). From the project root,
`. ../shared/offline-env.sh` sets both.""",
    ),
    (
        "code",
        """import tempfile
from collections import Counter

import matplotlib.pyplot as plt
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM

from oblivion_core import ManualClock, Oblivion, Tier
from oblivion_llamaindex import OblivionMemory

HOUR, DAY = 3600.0, 86400.0
workdir = tempfile.TemporaryDirectory()  # the store lives here and is deleted at the end
clock = ManualClock(0.0)
engine = Oblivion(workdir.name, clock=clock)  # embedded Chroma + MiniLM + tiktoken""",
    ),
    (
        "markdown",
        """## The chat engine

`MockLLM` answers "Noted." and records every context it receives, so we can check what
memory put in front of the model. `OblivionMemory` returns recalled memories (a system
message) plus the most recent turns, together at most `token_limit` tokens.""",
    ),
    (
        "code",
        """contexts = []

def mock_model(messages):
    contexts.append(list(messages))
    return "Noted."

TOKEN_LIMIT = 150
SYSTEM_PROMPT = "You are a helpful assistant."
memory = OblivionMemory(oblivion=engine, namespace="alice", token_limit=TOKEN_LIMIT)
chat = SimpleChatEngine.from_defaults(
    llm=MockLLM(messages_to_prompt=mock_model), memory=memory, system_prompt=SYSTEM_PROMPT
)""",
    ),
    (
        "markdown",
        """## Five days of conversation

About thirteen user turns a day, 45 minutes apart, mostly small talk with a few facts,
preferences and tasks. The instruction arrives on day one. Each morning the app runs
`maintain()`, the job that moves memories between the active tier and the archive.""",
    ),
    (
        "code",
        """INSTRUCTION = "From now on, always answer in British English spelling."
DAYS = [
    ["Hi there! Lovely weather today.", INSTRUCTION, "My sister Anna lives in Porto.",
     "haha nice", "I work as a nurse at the city hospital.", "thanks!", "How are you today?",
     "I prefer tea over coffee.", "ok cool", "My cat is called Miso.", "Good night!",
     "I need to renew my passport before June.", "see you"],
    ["Good morning!", "hey", "The weather is grim today.",
     "I have a dentist appointment tomorrow at 10.", "lol", "My favourite band is Radiohead.",
     "thanks", "Remind me to call Anna on Sunday.", "nice", "How are you?",
     "I'm reading a book about the Roman empire.", "great", "Good night!"],
    ["hello", "I went to the cinema yesterday.", "haha", "My car is a blue Fiat Panda.",
     "Lovely day, isn't it?", "ok", "I'm allergic to peanuts.", "cool", "thank you",
     "I'll travel to Lisbon next month.", "how are you doing?", "My manager is called Priya.",
     "see you later"],
    ["hi", "I started learning Portuguese.", "lol nice",
     "It's raining again, the weather is awful.", "thanks!",
     "I run 10 kilometres every Saturday.", "okay", "My birthday is on the 3rd of May.",
     "great", "I bought a new bike.", "haha", "How are you?", "Good night!"],
    ["Good morning", "hey there", "I fixed the leaking tap in the kitchen.",
     "nice weekend so far", "thanks", "My neighbour plays the piano.", "cool",
     "I'm thinking of adopting a dog.", "lol", "ok",
     "I need to finish my tax return this week.", "how are you?", "see you"],
]
TRACKED = {
    "instruction": INSTRUCTION,
    "fact": "My sister Anna lives in Porto.",
    "small talk": "Hi there! Lovely weather today.",
}

def snapshot():
    \"\"\"Activation now of the tracked memories and the mean over small talk.\"\"\"
    records = engine.records(namespace="alice")
    by_text = {r.text: r for r in records}
    point = {name: by_text[text].activation for name, text in TRACKED.items() if text in by_text}
    talk = [r.activation for r in records if r.category == "small_talk"]
    point["mean small talk"] = sum(talk) / len(talk) if talk else None
    return clock.now() / DAY, point

history = []
for day, messages in enumerate(DAYS):
    clock.set(day * DAY + 8 * HOUR)
    if day:
        engine.maintain(namespace="alice")
    for text in messages:
        clock.advance(0.75 * HOUR)
        chat.chat(text)
        history.append(snapshot())
    clock.set(day * DAY + 23 * HOUR)
    history.append(snapshot())
print(f"{len(contexts)} turns, {engine.count(namespace='alice')} memories")""",
    ),
    (
        "markdown",
        """## Day six: does the assistant still know how to spell?

The question shares few words with the instruction from five days earlier, and the
instruction is far outside the recent-turns window, so only recall can bring it back.""",
    ),
    (
        "code",
        """clock.set(len(DAYS) * DAY + 8 * HOUR)
engine.maintain(namespace="alice")
chat.chat("Which spelling should you use in your answers, color or colour?")
history.append(snapshot())

for message in contexts[-1]:
    print(f"[{message.role.value}] {message.content}")
print()
for item in memory.last_recall:
    print(item.why["explanation"])""",
    ),
    (
        "markdown",
        """## Where the memories are now

Small talk older than a day decayed below the archive threshold and was moved out of
the active tier (it is still searchable in the archive; nothing was deleted); only the
last few hours' small talk is still above it. Instructions, preferences and facts stayed active.""",
    ),
    (
        "code",
        """tiers = Counter(
    (r.category, r.tier.label) for r in engine.records(namespace="alice")
)
for (category, tier), n in sorted(tiers.items()):
    print(f"{category:12} {tier:8} {n}")""",
    ),
    (
        "markdown",
        """## Activation over the five days

Dashed lines are the hysteresis band: below `archive_low` a memory is archived, above
`archive_high` an archived one is restored.""",
    ),
    (
        "code",
        """fig, ax = plt.subplots(figsize=(9, 4))
for name in [*TRACKED, "mean small talk"]:
    xs = [t for t, p in history if p.get(name) is not None]
    ys = [p[name] for t, p in history if p.get(name) is not None]
    ax.plot(xs, ys, label=name, linestyle=":" if name == "mean small talk" else "-")
policy = engine.policy_for("alice")
for level, label in ((policy.archive_low, "archive_low"), (policy.archive_high, "archive_high")):
    ax.axhline(level, color="grey", linestyle="--", linewidth=0.8)
    ax.text(0.995, level + 0.01, label, transform=ax.get_yaxis_transform(), ha="right",
            color="grey", fontsize=8)
ax.set_xlabel("day")
ax.set_ylabel("activation")
ax.set_ylim(0, 1.05)
ax.set_title("OblivionMemory: activation over five simulated days")
ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
fig.tight_layout()
plt.show()""",
    ),
    (
        "markdown",
        """## Checks

The claims above, as assertions (the test suite executes this notebook).""",
    ),
    (
        "code",
        """counter = engine.token_counter
assert all(sum(counter(m.content or "") for m in c) <= TOKEN_LIMIT for c in contexts)
final = contexts[-1]
assert any(INSTRUCTION in (m.content or "") for m in final if m.role.value == "system")
assert INSTRUCTION not in [m.content for m in final if m.role.value == "user"]
records = engine.records(namespace="alice")
old_talk = [r for r in records if r.category == "small_talk" and r.created_at < 4 * DAY]
assert old_talk and all(r.tier == Tier.ARCHIVE for r in old_talk)
assert next(r for r in records if r.text == INSTRUCTION).tier == Tier.ACTIVE
engine.close()
workdir.cleanup()
print("all checks passed")""",
    ),
]


def build() -> nbformat.NotebookNode:
    """The notebook, without outputs."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for kind, source in CELLS:
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(source))
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"  # stable ids keep regeneration diff-free
    return nb


def main() -> None:
    """Write the notebook next to the other demos."""
    NOTEBOOK.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(build(), NOTEBOOK)


if __name__ == "__main__":
    main()
