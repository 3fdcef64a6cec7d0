"""A store opened with another embedding model than the one that made its vectors, of
the same size, is refused at its first embedding (it ranked every recall at random)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oblivion_core import FastEmbedEmbedder, ModelMismatchError, Oblivion
from oblivion_core.testing import HashEmbedder, memory

TEXTS = [
    "My cat is called Miso.",
    "I prefer tea over coffee.",
    "The dentist appointment is on Tuesday.",
    "We moved to Lisbon in May.",
]


class Permuted(HashEmbedder):
    """Another model of the same size: HashEmbedder's axes in another order."""

    def __init__(self, dim: int = 256) -> None:
        super().__init__(dim)
        self.order = np.random.default_rng(0).permutation(dim)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return super().embed_documents(texts)[:, self.order]

    def embed_query(self, text: str) -> np.ndarray:
        return super().embed_query(text)[self.order]


def test_another_model_of_the_same_size_is_refused_before_it_embeds(tmp_path: Path) -> None:
    """Every call that would embed with the other model (recall, remember, edit,
    query_vector) raises ModelMismatchError and changes nothing; reading needs no
    embedding and works; the model that made the vectors opens the store as before."""
    with memory(tmp_path) as mem:
        ids = [r.id for r in mem.remember_many(TEXTS)]
    with memory(tmp_path, embedder=Permuted()) as other:
        calls = [
            lambda: other.recall("what is my cat's name"),
            lambda: other.remember("Bob plays the cello."),
            lambda: other.remember_many(["Bob plays the cello.", "Ann sings."]),
            lambda: other.edit(ids[0], "My cat is called Tofu."),
            lambda: other.query_vector("cat"),
        ]
        for call in calls:
            with pytest.raises(ModelMismatchError, match="another embedding model") as err:
                call()
            assert "at best" in err.value.problem and "embedder=" in str(err.value)
        assert [r.text for r in other.records()] == TEXTS  # reading embeds nothing
        other.confirm(ids[1])  # nor does feedback on ids
    with memory(tmp_path) as mem:
        assert [r.text for r in mem.records()] == TEXTS
        assert mem.recall("what is my cat's name", k=1).ids == [ids[0]]


def test_the_check_embeds_once_and_an_empty_store_passes(tmp_path: Path) -> None:
    """The store's own model is checked once per instance (one extra embedding call, of
    a few stored texts), and a store holding nothing takes any embedder."""
    with memory(tmp_path) as mem:
        mem.remember_many(TEXTS)
    embedder = HashEmbedder()
    with memory(tmp_path, embedder=embedder) as mem:
        mem.recall("cat")
        first = embedder.calls
        mem.recall("tea")
        mem.remember("Bob plays the cello.")
        assert embedder.calls == first + 2  # the query and the text, no check again
        assert first == 2  # the check's one call, then the query
    with memory(tmp_path / "empty", embedder=Permuted()) as fresh:
        fresh.remember("Bob plays the cello.")
        assert fresh.recall("cello", k=1).texts == ["Bob plays the cello."]


def test_vectors_given_for_other_texts_pass_while_one_is_the_embedders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``remember(text, embedding=...)`` may give another text's (or an image's) vector:
    one memory of the sample embedded from its own text shows the model is the store's;
    a store whose every vector was given so turns the check off."""
    hasher = HashEmbedder()
    other = [hasher.embed_query(f"unrelated words number {i}") for i in range(len(TEXTS))]
    with memory(tmp_path / "mixed") as mem:
        mem.remember_many(TEXTS[:3], embeddings=other[:3])
        mem.remember(TEXTS[3])  # embedded from its own text
    with memory(tmp_path / "mixed") as mem:
        assert mem.recall("Lisbon", k=1).texts == [TEXTS[3]]
    with memory(tmp_path / "given") as mem:
        mem.remember_many(TEXTS, embeddings=other)
    with memory(tmp_path / "given") as mem, pytest.raises(ModelMismatchError, match="CHECK_MODEL"):
        mem.recall("unrelated words number 2")
    monkeypatch.setattr(Oblivion, "CHECK_MODEL", False)
    with memory(tmp_path / "given") as mem:
        assert mem.recall("unrelated words number 2", k=1).texts == [TEXTS[2]]


@pytest.mark.integration
def test_a_backup_embedded_again_opens_only_with_its_new_model(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """A copy re-embedded with another 384-d model opened with the default model ranked
    by cosines between unrelated spaces (relevance near 0 for every memory); it is
    refused, and opens with the model that made its vectors."""
    with Oblivion(tmp_path / "src", embedder=real_embedder) as mem:
        mem.remember_many(TEXTS)
        mem.backup(tmp_path / "copy", embedder=HashEmbedder(384))
    with (
        Oblivion(tmp_path / "copy", embedder=real_embedder) as copy,
        pytest.raises(ModelMismatchError, match=r"mem\.backup"),
    ):
        copy.recall("what is my cat's name")
    with Oblivion(tmp_path / "copy", embedder=HashEmbedder(384)) as copy:
        assert copy.recall("my cat is called", k=1).texts == ["My cat is called Miso."]


def test_an_import_into_another_models_store_is_refused(tmp_path: Path) -> None:
    """``import_chroma`` keeps the collection's vectors after comparing them with the
    instance's embedder only: a store written by another model took them, and held two
    models' vectors. The store's own vectors are checked first; nothing is imported."""
    import chromadb

    with memory(tmp_path / "mem") as mem:
        mem.remember_many(TEXTS)
    permuted = Permuted()
    source = chromadb.PersistentClient(str(tmp_path / "app")).create_collection("notes")
    notes = ["Bob plays the cello every Sunday.", "Ann sings in a choir."]
    source.add(ids=["b", "a"], embeddings=permuted.embed_documents(notes), documents=notes)
    with memory(tmp_path / "mem", embedder=permuted) as other:
        with pytest.raises(ModelMismatchError, match="another embedding model"):
            other.import_chroma(source)
        assert other.count() == len(TEXTS)


def test_a_store_of_short_emoji_texts_from_an_older_version_opens() -> None:
    """An older version embedded emoji as unknown tokens, and a store keeps those
    vectors: a Chinese chat's shortest texts ("👍", "🙏") sorted first, gave cosines of
    0.04-0.23 with the same model, and the store was refused. Texts mostly of letters,
    in any script, are taken before them."""
    rng = np.random.default_rng(1)
    emoji = ["👍", "🙏", "🎉🎉", "🔥", "😂😂", "👌"]
    words = ["我的狗叫小白", "明天下午三点见面", "晚上一起去吃火锅吧"]
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        with memory(folder) as mem:
            old = rng.normal(size=(len(emoji), 256))  # vectors the model no longer makes
            mem.remember_many(emoji, embeddings=old, supersede=False)
            mem.remember_many(words, supersede=False)
        with memory(folder) as mem:
            assert mem.recall("我的狗叫小白", k=1).texts == ["我的狗叫小白"]
