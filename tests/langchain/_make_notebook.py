"""Build ``notebooks/langchain_agent.ipynb`` from this script (run it to regenerate).

The story is taken from ``_lc_helpers.STORY`` so the notebook and the end-to-end test
tell the same five days. ``test_notebook.py`` checks the committed notebook matches.

Usage: ``python tests/langchain/_make_notebook.py``
"""

from __future__ import annotations

import pprint
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

sys.path.insert(0, str(Path(__file__).parent))
from _lc_helpers import DAY5_QUESTION, INSTRUCTION, STORY

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "langchain_agent.ipynb"

INTRO = """\
# A LangChain agent with decaying memory

This notebook runs a `create_agent` agent with `OblivionMemoryMiddleware` through five
simulated days (65 turns) with a user planning a trip to Portugal, entirely offline:

* the chat model is a scripted `GenericFakeChatModel` (no API key, no network);
* memory is a real Oblivion store in a temporary directory: Chroma on disk, the local
  all-MiniLM-L6-v2 embedding model and tiktoken token counts;
* time is simulated with a `ManualClock` in seconds (policy clock `"wall"`, template
  `balanced`: small talk halves in 12 hours, instructions in 180 days). Each day starts
  at 09:00, turns are 40 minutes apart, and `maintain()` runs every night.

Before each model call the middleware recalls memories for the user's message and
injects them as one system block within a token budget; after the answer it remembers
the turn and gives the larger "used" boost to the memories the answer drew on.

Run it from the `notebooks/` folder after `pip install "oblivion-memory[langchain,demo]"`
(offline: first source `../shared/offline-env.sh` from the project root).
"""

SETUP = """\
import tempfile
import warnings

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm, imported by fastembed

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langgraph.checkpoint.memory import InMemorySaver

from oblivion_core import ManualClock, Oblivion, Tier
from oblivion_langchain import OblivionMemoryMiddleware

DAY, HOUR = 86_400.0, 3_600.0
BUDGET = 160  # tokens for the injected memory block
USER = "sam"

workdir = tempfile.TemporaryDirectory(prefix="oblivion-notebook-")
clock = ManualClock()
memory = Oblivion(workdir.name, policy="balanced", clock=clock)
policy = memory.policy
print(f"clock: {policy.clock}; half-lives: small talk {policy.half_life('small_talk') / HOUR:g} h, "
      f"instruction {policy.half_life('instruction') / DAY:g} days")
"""

STORY_MD = """\
## The conversation

Five days of 13 turns: small talk, trip facts, a task or two, and on day 1 an
instruction the assistant must still follow on day 5. Each turn is
`(user message, scripted answer)`.
"""

AGENT_MD = """\
## The agent

A scripted model that remembers what it was sent (so we can look at the injected
memories), and the middleware with a 160-token budget. The user id in the run config
picks the memory namespace.
"""

AGENT = """\
class ScriptedModel(GenericFakeChatModel):
    \"\"\"Replies from a script and keeps every prompt it receives.\"\"\"

    prompts: list = []

    def _generate(self, messages, *args, **kwargs):
        self.prompts.append(messages)
        return super()._generate(messages, *args, **kwargs)


answers = [answer for day in STORY for _, answer in day]
model = ScriptedModel(messages=iter(answers))
agent = create_agent(
    model,
    tools=[],
    system_prompt="You are a helpful travel assistant.",
    middleware=[OblivionMemoryMiddleware(memory, token_budget=BUDGET)],
    checkpointer=InMemorySaver(),
)


def injected(prompt):
    \"\"\"The memory block the middleware appended to the system prompt, if any.\"\"\"
    content = prompt[0].content  # the system prompt (a string), then the memory block
    _, _, block = content.partition("\\n\\n")  # the middleware puts a blank line before it
    return block or None
"""

RUN_MD = """\
## Run the five days

After every turn we note each memory's activation, to plot it below.
"""

RUN = """\
timeline = []  # (day as a float: 1.375 is day 1 at 09:00, {memory id: activation})
turn_of = {}  # memory id -> (day, user message)
blocks = []  # (day, user message, injected block)

for d, day in enumerate(STORY, start=1):
    clock.set((d - 1) * DAY + 9 * HOUR)
    if USER in memory.namespaces():
        memory.maintain(namespace=USER)  # the nightly job
    config = {"configurable": {"thread_id": f"day-{d}", "user_id": USER}}
    for user, _ in day:
        agent.invoke({"messages": [{"role": "user", "content": user}]}, config)
        blocks.append((d, user, injected(model.prompts[-1])))
        records = memory.records(namespace=USER)
        turn_of.setdefault(records[-1].id, (d, user))
        timeline.append((1 + clock.now() / DAY, {r.id: r.activation for r in records}))
        clock.advance(40 * 60)

stats = memory.stats(namespace=USER)
print(f"{len(blocks)} turns, {stats['memories']} memories: "
      f"{stats['active']} active, {stats['archive']} archived")
"""

DAY5_MD = """\
## Day 5: the day-1 instruction comes back

The user asks for a distance in miles. The instruction from day 1 is recalled and
injected (with other relevant memories), and the whole block stays within the budget.
"""

DAY5 = f"""\
day5 = next(block for d, user, block in blocks if user == {DAY5_QUESTION!r})
print(day5)
print()
print("tokens:", memory.token_counter(day5), "of", BUDGET)
assert {INSTRUCTION!r} in day5
assert max(memory.token_counter(b) for _, _, b in blocks if b) <= BUDGET
"""

PLOT_MD = """\
## Activation over the run

Each line is one memory from the moment it was stored. Small talk (grey) starts low and
halves every 12 hours; the nightly `maintain()` moves it to the archive once it falls
below `archive_low`. The day-1 instruction (red) starts high, barely decays and is
boosted each time it is recalled and used.
"""

PLOT = """\
%matplotlib inline
import matplotlib.pyplot as plt

category = {r.id: r.category for r in memory.records(namespace=USER)}
instruction_id = next(i for i, (d, user) in turn_of.items() if user.startswith("Always give"))
colours = {"small_talk": "0.7", "instruction": "tab:red"}

fig, ax = plt.subplots(figsize=(10, 4.5))
for memory_id in turn_of:
    xs = [t for t, acts in timeline if memory_id in acts]
    ys = [acts[memory_id] for t, acts in timeline if memory_id in acts]
    cat = category[memory_id]
    ax.plot(
        xs,
        ys,
        color=colours.get(cat, "tab:blue"),
        lw=2.5 if memory_id == instruction_id else 0.8,
        alpha=1.0 if cat in colours else 0.5,
        zorder=3 if memory_id == instruction_id else 2,
    )
policy = memory.policy_for(USER)
for y, name in ((policy.archive_low, "archive_low"), (policy.archive_high, "archive_high")):
    ax.axhline(y, ls="--", lw=0.8, color="k")
    ax.text(0.01, y + 0.01, name, fontsize=8, transform=ax.get_yaxis_transform())
ax.plot([], [], color="tab:red", lw=2.5, label="day-1 instruction")
ax.plot([], [], color="0.7", label="small talk")
ax.plot([], [], color="tab:blue", alpha=0.5, label="facts, events, tasks, preferences")
ax.set(xlabel="day", ylabel="activation", ylim=(0, 1.05), xticks=range(1, 7))
ax.set_title("Activation of every memory over five days")
ax.legend(loc="lower left", fontsize=8)
plt.show()
"""

QUIET_MD = """\
## Two quiet days later

Nothing is lost by decay: small talk now lives in the (still searchable) archive while
the instruction stays in the active tier.
"""

QUIET = """\
for d in (6, 7, 8):  # the nightly job keeps running; nobody talks on days 6 and 7
    clock.set((d - 1) * DAY + 9 * HOUR)
    memory.maintain(namespace=USER)

records = memory.records(namespace=USER)
table = {}
for r in records:
    row = table.setdefault(r.category, {"active": 0, "archive": 0})
    row[r.tier.label] = row.get(r.tier.label, 0) + 1
for cat, row in sorted(table.items()):
    print(f"{cat:12} active {row['active']:3}   archive {row['archive']:3}")

assert all(r.tier == Tier.ARCHIVE for r in records if r.category == "small_talk")
assert memory.get(instruction_id, namespace=USER).tier == Tier.ACTIVE
hit = memory.recall("Good morning!", namespace=USER, deep=True, feedback=False)[0]
print()
print(hit.text.splitlines()[0], "->", hit.tier.label)
"""

CLEANUP = """\
memory.close()
workdir.cleanup()
"""


def build() -> nbformat.NotebookNode:
    """The notebook, cell by cell."""
    story = "STORY = " + pprint.pformat(STORY, width=96, sort_dicts=False) + "\n"
    cells = [
        new_markdown_cell(INTRO),
        new_code_cell(SETUP),
        new_markdown_cell(STORY_MD),
        new_code_cell(story + "sum(len(day) for day in STORY)"),
        new_markdown_cell(AGENT_MD),
        new_code_cell(AGENT),
        new_markdown_cell(RUN_MD),
        new_code_cell(RUN),
        new_markdown_cell(DAY5_MD),
        new_code_cell(DAY5),
        new_markdown_cell(PLOT_MD),
        new_code_cell(PLOT),
        new_markdown_cell(QUIET_MD),
        new_code_cell(QUIET),
        new_code_cell(CLEANUP),
    ]
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i:02d}"
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    return nb


if __name__ == "__main__":
    nb = build()
    nbformat.validate(nb)
    NOTEBOOK.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, NOTEBOOK)
    print(f"wrote {NOTEBOOK}")
