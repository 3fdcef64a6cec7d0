"""The embedder checked against the store's vectors once per instance, before its first
embedding.

A store's vectors only mean something to the model that made them. Another model of
the same size (OpenAI's ``text-embedding-ada-002`` and ``text-embedding-3-small`` both
make 1,536-d vectors; a backup re-embedded with another local model) is taken without
complaint by every size check, and recall then ranks by cosines between unrelated
spaces: relevance near 0 for every memory, the archive searched at random. Before the
first text or query an instance embeds, its embedder embeds :data:`SAMPLE` of the
first :data:`SCAN` stored texts again: the shortest plain-ASCII ones of a dozen
characters or more, then those mostly of letters, in any script (an older version
embedded emoji otherwise, and a store keeps such texts' old vectors: a Chinese chat's
"👍" and "🙏", the shortest texts, gave cosines of 0.04-0.23 with the same model). The
best cosine between its vectors and the stored ones must reach :data:`SAME_MODEL`: the
same model gives 0.99 and more, another -0.1 to 0.3. (The best, not the median: a
vector given with ``remember(text, embedding=...)`` may be another text's or an
image's, or random, as LangChain's ``FakeEmbeddings`` makes; one memory of the sample
embedded from its own text suffices.)
``Oblivion.CHECK_MODEL = False`` turns the check off, for a store whose every vector was
given for something else than its text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from oblivion_core.embedding import embed_texts, normalize
from oblivion_core.errors import ModelMismatchError

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion

#: Stored texts embedded again by the check.
SAMPLE = 5
#: Memories read for them, in table order.
SCAN = 64
#: The least best cosine of the same model (far from both sides: see above).
SAME_MODEL = 0.5
#: The shortest text taken while longer plain ones are there.
PLAIN_CHARS = 12


def check_model(self: Oblivion) -> None:
    """Raise a :class:`ModelMismatchError` unless this instance's embedder made the
    store's vectors; checked once, and not at all in a store that held no vector when
    it was opened (what it holds is this instance's). Threads meeting it at once may
    each check; none holds a lock while it embeds."""
    if self._model_checked or not self.CHECK_MODEL:
        return
    with self._lock:
        self._check_open()
        rows = self._db.vector_sample(SCAN)
    sample = sorted(rows, key=lambda row: _order(row[0]))[:SAMPLE]
    if sample:
        ours = embed_texts(self.embedder, [text for text, _ in sample], self._dim)
        theirs = normalize(
            [vector for _, vector in sample], len(sample), self._dim, "the store has"
        )
        cosine = float(np.max(np.sum(ours * theirs, axis=1)))
        if cosine < SAME_MODEL:
            problem = (
                "this store's vectors were made by another embedding model than the "
                f"embedder it was opened with (a cosine of {cosine:.2f} at best between "
                f"the stored vectors of {len(sample)} of its texts and the embedder's, "
                "where the same model gives 0.99)"
            )
            raise ModelMismatchError(
                f"{problem}: open it with the model that made them (Oblivion(path, "
                "embedder=...)); to move it to this one, open it so and copy it with "
                "mem.backup(folder, embedder=this_model), which embeds every text again "
                "(vectors given with embedding= for other texts than their own: set "
                "Oblivion.CHECK_MODEL = False)",
                problem=problem,
            )
    self._model_checked = True


def _order(text: str) -> tuple[bool, bool, int]:
    """Where ``text`` stands in the sample's choice: plain ASCII of :data:`PLAIN_CHARS`
    characters or more first, then texts at least half letters, each shortest first."""
    plain = text.isascii() and len(text) >= PLAIN_CHARS
    letters = sum(ch.isalpha() for ch in text) >= len(text) / 2
    return not plain, not letters, len(text)
