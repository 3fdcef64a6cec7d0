"""What the engine holds in memory for one loaded namespace: its state, the active
tier's index, the archive's in-memory copy, the BM25 filter of the active tier, the link
graph, the list and name indexes and the bookkeeping of a few engine features.

Tier moves go through :meth:`Space.activate`, :meth:`Space.deactivate`,
:meth:`Space.add_inactive` and :meth:`Space.discard`, which keep the active index, the
archive copy and the BM25 filter in step. The engine (:class:`~oblivion_core.engine.Oblivion`)
makes one per namespace as it loads it, and drops it when the namespace is unloaded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from oblivion_core.adaptation import Usage
from oblivion_core.association import LinkGraph
from oblivion_core.doc_set import DocSet
from oblivion_core.errors import StoreCorruptError
from oblivion_core.index import ActiveIndex
from oblivion_core.lists import ListIndex
from oblivion_core.naming import NameIndex
from oblivion_core.state import NamespaceState
from oblivion_core.typing import Vectors
from oblivion_core.where import FilterMask

#: Filters whose masks a namespace keeps (:attr:`Space.filters`).
FILTERS_KEPT = 8


class Space:
    """Everything the engine keeps in memory for one namespace.

    ``index`` holds the vectors of the active tier; ``archive``, while the namespace is
    not too big, those of every other memory (archive and cold tiers), so recall searches
    them in memory instead of querying Chroma (see :attr:`Oblivion.EXACT_ARCHIVE_ROWS`
    and :attr:`Oblivion.SKETCH_ARCHIVE_ROWS`). Tier
    moves go through :meth:`activate`, :meth:`deactivate` and :meth:`discard`, which keep
    the two disjoint.
    """

    def __init__(self, state: NamespaceState, index: ActiveIndex, usage: Usage) -> None:
        self.state = state
        self.index = index
        # told of memories entering (True) and leaving the tier: the engine keeps their
        # texts out of the contents cache's LRU meanwhile (StateDB.hold)
        self.on_tier: Callable[[Sequence[str], bool], None] | None = None
        #: The sequence numbers of the memories in ``index``: BM25 for ``deep=False``
        #: ranks only these. A BM25 search outside the engine's lock is redone unless
        #: ``active`` is still the set it ranked, at the same version (recall also checks
        #: its hits against ``index``)
        self.active = DocSet()
        self._mark(index.ids, True)
        self.archive: ActiveIndex | None = None  # built on the first archive search
        self.archive_limit = 0  # size above which ``archive`` is dropped
        # the limit a copy outgrew (0: none did); a copy of that kind is made again only
        # below 3/4 of it
        self.archive_dropped = 0
        # some memory outside the tier has no stored vector: no copy is made (Chroma
        # answers) until an edit or a deletion could have changed that
        self.copy_blocked = False
        # how the last archive search ran: "exact" or "sketch" (a copy), or "chroma"
        self.archive_searched: str | None = None
        self.usage = usage
        self._graph: LinkGraph | None = LinkGraph()
        # reads the namespace's links from the store, for a graph left to its first use
        self.read_links: Callable[[], Iterable[tuple[str, str, float]]] | None = None
        # why the links could not be read (a damaged row), so they are not read again
        self._links_damaged: StoreCorruptError | None = None
        self.links_warned = False  # spreading and automatic links skip them, said once
        self.review: dict[str, str] = {}
        self.summaries: dict[str, list[str]] = {}
        # originals a decompress() brought back: maintain() does not compress them again
        self.uncompressed: set[str] = set()
        #: summaries that state an original now superseded (id -> why), dropped by
        #: :meth:`~oblivion_core.engine.Oblivion._drop_outdated` once the change is done
        self.outdated: dict[str, str] = {}
        self.last_write: tuple[str, float] | None = None
        self.writes_since_maintain = 0
        self.lists: ListIndex | None = None  # built on the first list question
        # built on the first question about the user's name
        self.names: NameIndex | None = None
        self.used = 0  # when last used (Oblivion._uses): the idle ones are unloaded first
        #: recall's filters, by :attr:`~oblivion_core.where.Filter.key`: which memories
        #: pass each (the most recently used :data:`FILTERS_KEPT`); an edit of a
        #: memory's metadata clears them, of its text those that read the text
        self.filters: OrderedDict[str, FilterMask] = OrderedDict()

    @property
    def graph(self) -> LinkGraph:
        """The namespace's links, read from the store on first use when the namespace
        was loaded with :attr:`read_links` (spreading, linked expansions, ``stats()``,
        writes that link): a reopened store's first recall does not wait for them (139k
        links at 100k memories: 0.26 s)."""
        if self._graph is None:
            if self._links_damaged is not None:  # read once, at 0.26 s per 100k memories
                raise StoreCorruptError(str(self._links_damaged))
            graph = LinkGraph()
            if self.read_links is not None:
                try:
                    graph.add_many(self.read_links())
                except StoreCorruptError as exc:
                    self._links_damaged = exc
                    raise
            self._graph = graph
        return self._graph

    def read_links_later(self, read: Callable[[], Iterable[tuple[str, str, float]]]) -> None:
        """Leave the links to their first use (:attr:`graph`), read by ``read`` then: a
        write that adds one reads them first."""
        self._graph, self.read_links = None, read

    def unlink(self, node: str) -> None:
        """Drop ``node``'s links from the graph, if it was read (a graph read later reads
        the table, which the deletion already cleared of them)."""
        if self._graph is not None:
            self._graph.remove_node(node)

    def _mark(self, ids: Sequence[str], active: bool) -> None:
        """Put memories ``ids`` into :attr:`active` or take them out (ids not in the
        state are skipped), and tell :attr:`on_tier`."""
        if self.on_tier is not None:
            self.on_tier(ids, active)
        st = self.state
        rows = [i for m in ids if (i := st.index.get(m)) is not None]
        if not rows:
            return
        seqs = st.cols["seq"][np.asarray(rows, dtype=np.int64)].astype(np.int64)
        if active:
            self.active.add(seqs)
        else:
            self.active.discard(seqs)

    def activate(self, ids: Sequence[str], vectors: Vectors) -> None:
        """Memories enter the active tier (new, restored or promoted)."""
        self.index.add(ids, vectors, self.state.seqs_of(ids))
        self._mark(ids, True)
        if self.archive is not None:
            self.archive.remove(ids)

    def deactivate(self, ids: Sequence[str]) -> None:
        """Memories leave the active tier for the archive or the cold tier."""
        if self.archive is not None:
            vecs = {m: v for m in ids if (v := self.index.vector(m)) is not None}
            if vecs:
                self.add_inactive(list(vecs), np.stack(list(vecs.values())))
        self.index.remove(ids)
        self._mark(ids, False)

    def add_inactive(self, ids: Sequence[str], vectors: Vectors) -> None:
        """New memories written outside the active tier (or just moved out of it)."""
        if self.archive is not None:
            self.archive.add(ids, vectors)
            if len(self.archive) > self.archive_limit:  # the next search makes another
                self.archive, self.archive_dropped = None, self.archive_limit

    def discard(self, ids: Sequence[str]) -> None:
        """Memories deleted."""
        self.copy_blocked = False
        self.index.remove(ids)
        self._mark(ids, False)
        if self.archive is not None:
            self.archive.remove(ids)

    def set_vector(self, memory_id: str, vector: Vectors) -> None:
        """A memory's text was edited and embedded again."""
        self.copy_blocked = False
        for index in (self.index, self.archive):
            if index is not None and memory_id in index:
                index.add([memory_id], vector)

    def note_texts(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Memories written (or edited: :meth:`discard_texts` first) with these texts, as
        said (with their chat role: :func:`~oblivion_core.speakers.as_said`): the list and
        name indexes, where built, read them."""
        for index in (self.lists, self.names):
            if index is not None:
                index.note(ids, texts)

    def discard_texts(self, ids: Iterable[str]) -> None:
        """Memories deleted, or about to be read again (an edit)."""
        ids = list(ids)
        for index in (self.lists, self.names):
            if index is not None:
                index.discard(ids)

    def vector(self, memory_id: str) -> Vectors | None:
        """The vector of a memory held in memory (either index), else ``None``."""
        vec = self.index.vector(memory_id)
        if vec is None and self.archive is not None:
            vec = self.archive.vector(memory_id)
        return vec
