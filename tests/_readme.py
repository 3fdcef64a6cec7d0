"""The README's Python examples, read from README.md itself, so that their tests run the
code a reader copies (``tests/*/test_readme.py``; ``tests/`` is on ``sys.path`` for every
test folder).

Names an example uses without defining them (``model``, ``llm``, ``embed_model``) are
given by its test; an error's traceback names the README's own lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"

_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Example:
    """One fenced Python block of the README."""

    section: str  # the "## " heading it stands under
    line: int  # the README line its first line of code is on
    code: str

    def run(self, names: dict[str, Any], code: str | None = None) -> dict[str, Any]:
        """Execute it (or ``code``, an edited copy of it) in ``names``, which it extends."""
        source = "\n" * (self.line - 1) + (self.code if code is None else code)
        exec(compile(source, str(README), "exec"), names)  # tracebacks show README lines
        return names


def examples(section: str | None = None) -> list[Example]:
    """The README's Python blocks in order (those under the ``## section`` heading)."""
    found: list[Example] = []
    heading = ""
    block: list[str] | None = None  # the Python block being read
    other = False  # inside another language's block
    start = 0
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line)
        if block is not None:
            if fence and not fence.group(1):
                found.append(Example(heading, start, "\n".join(block) + "\n"))
                block = None
            else:
                block.append(line)
        elif other:
            other = not (fence and not fence.group(1))
        elif fence and fence.group(1) == "python":
            block, start = [], number + 1
        elif fence:
            other = True
        elif line.startswith("## "):
            heading = line[3:].strip()
    return [e for e in found if section is None or e.section == section]
