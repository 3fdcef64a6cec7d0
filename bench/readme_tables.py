"""Regenerate the benchmark tables in README.md from ``bench/results/*.json``.

Each table sits between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` markers
(the closing marker is added on first run). Reproduce: ``python bench/readme_tables.py``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import backup  # noqa: E402
import first_use  # noqa: E402
import import_chroma  # noqa: E402
import latency  # noqa: E402
import locomo  # noqa: E402
import move  # noqa: E402
import store_filter  # noqa: E402
import updates  # noqa: E402
import where  # noqa: E402

README = HERE.parent / "README.md"

SECTIONS = {
    "latency": (
        "### Latency, ingest and tiering (`python bench/latency.py`)",
        lambda d: latency.render_table(d),
        "latency.json",
    ),
    "locomo": (
        "### LoCoMo evidence recall (`python bench/locomo.py`)",
        lambda d: locomo.render_markdown_table(d),
        "locomo.json",
    ),
    "locomo_categories": (
        f"#### LoCoMo recall by question category (evidence within {locomo.TABLE_BUDGET:,} "
        "tokens, %)",
        lambda d: locomo.render_category_table(d),
        "locomo.json",
    ),
    "updates": (
        "### Stale facts: knowledge updates (`python bench/updates.py`)",
        lambda d: updates.render_markdown_table(d),
        "updates.json",
    ),
    "where": (
        "### Metadata and text filters (`python bench/where.py`)",
        lambda d: where.table(d),
        "where.json",
    ),
    "move": (
        "### Moving a store to a Chroma server (`python bench/move.py`)",
        lambda d: move.table(d),
        "move.json",
    ),
    "backup": (
        "### Backing up a store in use (`python bench/backup.py`)",
        lambda d: backup.table(d),
        "backup.json",
    ),
    "import_chroma": (
        "### Importing a Chroma collection (`python bench/import_chroma.py`)",
        lambda d: import_chroma.table(d),
        "import_chroma.json",
    ),
    "store_filter": (
        "### The LangGraph store's filtered search (`python bench/store_filter.py`)",
        lambda d: store_filter.table(d),
        "store_filter.json",
    ),
    "first_use": (
        "### A user's first recall after a restart (`python bench/first_use.py`)",
        lambda d: first_use.table(d),
        "first_use.json",
    ),
}


def main() -> int:
    """Rewrite every section whose results file exists."""
    text = README.read_text()
    for name, (title, render, file) in SECTIONS.items():
        path = HERE / "results" / file
        if not path.exists():
            continue
        body = f"{title}\n\n{render(json.loads(path.read_text()))}\n"
        block = f"<!-- bench:{name} -->\n{body}<!-- /bench:{name} -->"
        # the block runs to its own closing marker (re.S: across lines)
        pattern = re.compile(rf"<!-- bench:{name} -->.*?<!-- /bench:{name} -->", re.S)
        if pattern.search(text):
            text = pattern.sub(lambda _m, b=block: b, text, count=1)
        else:
            text = text.replace(f"<!-- bench:{name} -->", block, 1)
    README.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
