"""OblivionStore against LangGraph's own ``InMemoryStore``: Hypothesis applies the same
random puts, deletes, reopens and time passing to both and checks that every read a
LangGraph user relies on answers alike: ``get``, ``list_namespaces``, and which items a
filtered listing finds. Where Oblivion answers differently by design (a query search
ranks by activation and hides an item a newer one made stale), the check is that what
it hides is stale, and that it returns nothing the other store does not hold.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from langgraph.store.memory import InMemoryStore

from oblivion_core import Oblivion
from oblivion_core.testing import HashEmbedder, ManualClock, word_count
from oblivion_langchain import OblivionStore
from oblivion_langchain._convert import encode_namespace

DAY = 86_400.0
NAMESPACES = (("memories", "sam"), ("memories", "kim"), ("memories", "sam", "work"), ("notes",))
KEYS = ("a", "b", "c", "favourite", "launch")
_TEXTS = (
    "my favourite colour is blue",
    "my favourite colour is green",
    "the launch is on friday",
    "the launch moved to monday",
    "call me Dee",
    "add eggs to the shopping list",
    "the team lunch is at noon",
)
VALUES = st.fixed_dictionaries(
    {"text": st.sampled_from(_TEXTS), "n": st.integers(0, 2)},
    optional={"tags": st.lists(st.sampled_from(("home", "work")), max_size=2)},
)


class StoreMachine(RuleBasedStateMachine):
    """The two stores side by side."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="oblivion-store-stateful-"))
        self.clock = ManualClock(1_000.0)
        self.reference = InMemoryStore()
        self.mem: Oblivion
        self.store: OblivionStore

    def _open(self) -> None:
        self.mem = Oblivion(
            self.dir, clock=self.clock, embedder=HashEmbedder(dim=64), token_counter=word_count
        )
        self.store = OblivionStore(self.mem, index={"fields": ["text"]})

    @initialize()
    def open_store(self) -> None:
        self._open()

    def teardown(self) -> None:
        if hasattr(self, "mem"):
            self.mem.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------ writes
    @rule(ns=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS), value=VALUES)
    def put(self, ns: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        self.store.put(ns, key, value)
        self.reference.put(ns, key, value)

    @rule(ns=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS))
    def delete(self, ns: tuple[str, ...], key: str) -> None:
        self.store.delete(ns, key)  # an unknown key is no error, as in LangGraph
        self.reference.delete(ns, key)

    @rule(days=st.floats(0.0, 120.0))
    def time_passes(self, days: float) -> None:
        self.clock.advance(days * DAY)
        if self.mem.namespaces():
            for ns in self.mem.namespaces():
                self.mem.maintain(namespace=ns)

    @rule()
    def reopen(self) -> None:
        self.mem.close()
        self._open()

    # ------------------------------------------------------------------ reads
    @rule(ns=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS))
    def get(self, ns: tuple[str, ...], key: str) -> None:
        got, want = self.store.get(ns, key), self.reference.get(ns, key)
        if want is None:
            assert got is None
            return
        assert got is not None
        assert (got.namespace, got.key, got.value) == (want.namespace, want.key, want.value)

    @rule(
        prefix=st.sampled_from(((), ("memories",), ("memories", "sam"), ("notes",))),
        n=st.one_of(st.none(), st.integers(0, 2)),
    )
    def filtered_listing(self, prefix: tuple[str, ...], n: int | None) -> None:
        flt = None if n is None else {"n": n}
        got = self.store.search(prefix, filter=flt, limit=1_000)
        want = self.reference.search(prefix, filter=flt, limit=1_000)
        assert sorted((i.namespace, i.key) for i in got) == sorted(
            (i.namespace, i.key) for i in want
        )
        for item in got:
            assert item.value == self.reference.get(item.namespace, item.key).value

    @rule(prefix=st.sampled_from(((), ("memories",), ("notes",))), query=st.sampled_from(_TEXTS))
    def query_search(self, prefix: tuple[str, ...], query: str) -> None:
        got = self.store.search(prefix, query=query, limit=1_000)
        held = {(i.namespace, i.key) for i in self.reference.search(prefix, limit=1_000)}
        found = [(i.namespace, i.key) for i in got]
        assert len(found) == len(set(found)), "an item returned twice"
        assert set(found) <= held, "an item no one holds"
        for ns, key in held - set(found):  # left out: only what a newer item made stale
            record = self.mem.get(key, namespace=encode_namespace(ns))
            assert record.superseded_by is not None or record.invalidated, (ns, key)

    @invariant()
    def the_same_namespaces(self) -> None:
        # those holding an item: InMemoryStore also lists one that a get() or delete()
        # only touched (its namespaces are a defaultdict's keys); LangGraph's Postgres
        # store lists those holding items, as this one does
        held = {i.namespace for i in self.reference.search((), limit=1_000)}
        assert sorted(self.store.list_namespaces(limit=100)) == sorted(held)


StoreMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestStoreMachine = StoreMachine.TestCase
