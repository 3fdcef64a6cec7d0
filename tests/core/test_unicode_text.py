"""Text rules read words of any script, and a decomposed (NFD) text as the composed one:
BM25's queries (oblivion_core/lexical.py), the user's name (naming.py), stale facts
(supersession.py), the words an answer shares with a memory (overlap.py); and the saved
BM25 index holds no word of a forgotten or edited-away text (lexical.py)."""

from __future__ import annotations

import unicodedata
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion
from oblivion_core.cjk import FUNCTION_CHARS
from oblivion_core.lexical import _Namespace, query_terms, tokens
from oblivion_core.naming import names_speaker
from oblivion_core.overlap import STOP_WORDS, content_words, used_ids
from oblivion_core.supersession import parse
from oblivion_core.testing import memory


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _superseded(old: str, new: str) -> bool:
    mem = memory()
    a, b = mem.remember(old), mem.remember(new)
    return mem.get(a.id).superseded_by == b.id


# ------------------------------------------------------------------ 1. BM25's queries

#: Accents of Latin scripts, as combining marks: acute, grave, circumflex, tilde,
#: diaeresis, ring, cedilla, caron, ogonek, macron.
_MARKS = "\u0301\u0300\u0302\u0303\u0308\u030a\u0327\u030c\u0328\u0304"
_LETTER = st.tuples(
    st.sampled_from("abcdefghijklmnopqrstuvwxyz"),
    st.one_of(st.just(""), st.sampled_from(_MARKS)),
).map("".join)
_ACCENTED = (
    st.lists(_LETTER, min_size=3, max_size=9)
    .map("".join)
    .filter(lambda w: not w.isascii())
    .filter(lambda w: "".join(c for c in w if c.isascii()) not in STOP_WORDS)
)
_FORM = st.sampled_from(["NFC", "NFD"])
_CASE = st.sampled_from([str.lower, str.upper, str.capitalize])


@settings(max_examples=150, deadline=None)
@given(word=_ACCENTED, stored_as=_FORM, asked_as=_FORM, stored_case=_CASE, asked_case=_CASE)
def test_a_stored_word_with_any_latin_accent_is_searched_by_the_same_word(
    word: str, stored_as: str, asked_as: str, stored_case: object, asked_case: object
) -> None:
    """The query "München" searched ``nchen``, "café" ``caf``, "Zoë" nothing, where
    documents index ``munchen``, ``cafe``, ``zoe``: a query's words are folded as a
    document's are, whether either is typed composed or decomposed, in any case."""
    stored = unicodedata.normalize(stored_as, stored_case(word))  # type: ignore[operator]
    asked = unicodedata.normalize(asked_as, asked_case(word))  # type: ignore[operator]
    assert set(tokens(f"I noted {stored} yesterday")) & set(query_terms(asked))


@pytest.mark.parametrize(
    "word",
    [
        "München",
        "café",
        "Zoë",
        "naïve",
        "straße",
        "Москве",
        "Αθήνα",
        "दिल्ली",
        "मुंबई",
        "சென்னை",
        "กรุงเทพ",
        "İstanbul",
    ],
)
def test_a_query_word_of_any_script_searches_what_documents_index(word: str) -> None:
    assert set(tokens(word)) & set(query_terms(word)), (tokens(word), query_terms(word))
    assert set(tokens(word)) & set(query_terms(_nfd(word)))
    # one term: a word of a script written with vowel signs and viramas is not cut at
    # each of them (Python's \w leaves them out)
    assert len(tokens(word)) == 1, tokens(word)


#: Chinese characters, hiragana and katakana.
_CJK_CHAR = st.one_of(
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0x3041, max_codepoint=0x3096),
    st.characters(min_codepoint=0x30A1, max_codepoint=0x30FA),
)


@given(st.lists(_CJK_CHAR, min_size=1, max_size=12).map("".join))
def test_a_run_of_chinese_or_kana_indexes_each_character_and_each_pair(run: str) -> None:
    """Written without spaces, a run was one term: "我的猫叫小白" could be found only by
    itself. It now indexes each character and each pair of neighbours, in order, and a
    query searches its pairs and its characters of content."""
    chars = list(unicodedata.normalize("NFC", run))
    pairs = [a + b for a, b in pairwise(chars)]
    expected = [t for i, c in enumerate(chars) for t in (c, *pairs[i : i + 1])]
    assert tokens(run) == expected
    assert tokens(f"see {run}, ok") == ["see", *expected, "ok"]
    searched = query_terms(run)
    assert set(searched) <= set(expected)
    # every pair, and each character that is no grammar (not "的")
    assert set(searched) == set(pairs) | {c for c in chars if FUNCTION_CHARS.isdisjoint(c)}


@pytest.mark.parametrize(
    ("stored", "asked"),
    [
        ("我的猫叫小白，今年三岁。", "你的猫叫什么名字？"),  # phrased another way
        ("我的猫叫小白，今年三岁。", "猫"),  # one character
        ("我住在北京大学附近", "北京"),
        ("東京タワーに行きました", "タワー"),  # kana within a run of kanji and kana
        ("ガラスのコップを買った", "ｶﾞﾗｽ"),  # half-width katakana and its voicing mark
        ("iPhone手机很好用", "手机"),
    ],
    ids=["rephrased", "one-character", "a-name", "katakana", "half-width", "mixed"],
)
def test_a_query_finds_chinese_or_japanese_text_by_the_characters_it_shares(
    stored: str, asked: str
) -> None:
    assert set(tokens(stored)) & set(query_terms(asked)), (tokens(stored), query_terms(asked))
    assert not set(tokens("我的狗喜欢散步。明天见")) & set(query_terms(asked))


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ("我对什么过敏？", "我对花生过敏。"),  # 过敏 holds a character of grammar
        ("我的地址是什么？", "我的地址是浦东新区世纪大道100号。"),
        ("我需要吃什么药？", "我每天早上吃降压药。"),  # no pair shared: 药 alone
        ("会社はどこですか？", "私の会社はトヨタです。"),
    ],
)
def test_a_chinese_or_japanese_question_searches_its_words_of_grammar_too(
    query: str, want: str
) -> None:
    """Pairs holding a character of grammar were left out of queries: 过敏 (allergy),
    地址 (address), 会社 (company); "what am I allergic to?" searched nothing."""
    mem = memory()
    texts = [want, "我周末喜欢爬山。", "今天天气很好。", "私は毎朝コーヒーを飲みます。"]
    ids = {t: mem.remember(t).id for t in texts}
    got = mem.recall(query, k=len(texts), feedback=False)
    lexical = {it.id: it.why["relevance_signals"]["lexical"] for it in got.items}
    assert max(lexical, key=lambda m: lexical[m]) == ids[want], (query_terms(query), lexical)


def test_a_question_after_a_long_message_keeps_its_own_words() -> None:
    """Past 32 terms, the pairs of a long query were cut by code point: kana before
    kanji, so the question at its end lost 鍵 and 隠し to the chat before it."""
    chat = (
        "今日は朝から電車が遅れて二十分も遅れたので、そのまま会社に着いたら四半期のまとめを"
        "直さなきゃいけなくて、お昼はパンを二口かじっただけで、午後も電話会議が三つもあって"
        "もうくたくたでした。ところで、"
    )
    mem = memory()
    key = mem.remember("家の鍵は玄関の植木鉢の下に隠しました。").id
    for k in range(30):
        mem.remember(f"第{k}回の会議の議事録をまとめました。")
    terms = query_terms(chat + "家の鍵はどこに隠しましたか？")
    assert "鍵" in terms and "隠し" in terms
    got = mem.recall(chat + "家の鍵はどこに隠しましたか？", k=3, feedback=False)
    lexical = {it.id: it.why["relevance_signals"]["lexical"] for it in got.items}
    assert max(lexical, key=lambda m: lexical[m]) == key


def test_a_chinese_query_brings_its_memory_first_through_the_real_stack(
    tmp_path: Path, real_embedder: object
) -> None:
    """The English model reads Chinese poorly; the shared characters bring the memory."""
    texts = [
        "我的狗喜欢在公园散步。",
        "我的猫叫小白，今年三岁。",
        "明天下午三点开会讨论预算。",
        "我最喜欢的水果是芒果。",
        "周末我们去了上海看展览。",
    ]
    with Oblivion(tmp_path / "store", embedder=real_embedder) as mem:
        ids = [mem.remember(t).id for t in texts]
        for query, want in [("你的猫叫什么名字？", 1), ("芒果", 3), ("开会是几点？", 2)]:
            got = mem.recall(query, k=3)
            assert got.items[0].id == ids[want], (query, [it.text for it in got.items])


def test_words_written_with_vowel_signs_are_whole() -> None:
    assert content_words("मेरी बहन दिल्ली में रहती है") >= {"मेरी", "बहन", "दिल्ली", "रहती"}
    assert content_words("İstanbul") == {"istanbul"}
    assert used_ids("आपकी बहन दिल्ली में रहती है।", [("m", "मेरी बहन दिल्ली में रहती है")]) == ["m"]


def test_bold_letters_pasted_from_social_media_index_as_the_plain_word() -> None:
    """ "𝐏𝐲𝐭𝐡𝐨𝐧" decomposes to "Python": lowercased after, it is the word "python"."""
    assert "python" in tokens("𝐏𝐲𝐭𝐡𝐨𝐧 developer")
    assert query_terms("𝐏𝐲𝐭𝐡𝐨𝐧") == ["python"]


def test_recall_finds_a_german_or_russian_memory_by_its_word() -> None:
    mem = memory()
    texts = [
        "Ich wohne seit 2019 in München.",
        "Mein Bruder wohnt in Hamburg.",
        "Я живу в Москве уже десять лет.",
        "Моя сестра живёт в Казани.",
    ]
    ids = [mem.remember(t).id for t in texts]
    for query, want in [("München", 0), ("Москве", 2), (_nfd("münchen"), 0)]:
        got = mem.recall(query, k=len(texts))
        lexical = {it.id: it.why["relevance_signals"]["lexical"] for it in got.items}
        assert lexical.get(ids[want], 0.0) > 1e-6, (query, lexical)


def test_english_queries_search_what_they_did() -> None:
    assert query_terms("What's Grace's dentist's name? We didn't book!") == [
        "dentist",
        "grace",
        "book",
        "name",
    ]


# ------------------------------------------------------------------ 2. the user's name

_NAMES = ["Zoë", "José", "Søren", "Łukasz", "Émile", "Chloé", "Ioana-Ștefania", "Ольга"]


@pytest.mark.parametrize("name", _NAMES)
@pytest.mark.parametrize(
    "said", ["Hi! Please call me {}, I look after the data platform.", "My name is {}."]
)
def test_a_name_with_letters_beyond_ascii_is_a_name(name: str, said: str) -> None:
    assert names_speaker(said.format(name)) == name
    assert names_speaker(_nfd(said.format(name))) == name  # typed decomposed
    assert parse(said.format(name)).subject == "@|name"


@pytest.mark.parametrize("text", ["Please call me émile later", "I'm Ärger-free"])
def test_a_lowercase_word_after_the_phrase_is_still_no_name(text: str) -> None:
    assert names_speaker(text) is None


def test_whats_my_name_brings_an_accented_introduction_first() -> None:
    mem = memory()
    for filler in [
        "The weather was nice today.",
        "I had pasta for lunch.",
        "My team ships on Fridays.",
        "What a lovely day it is today.",
    ]:
        mem.remember(filler)
    intro = mem.remember("Hi! Please call me Søren, I look after the data platform.")
    assert mem.recall("What's my name?", k=3).items[0].id == intro.id


def test_a_new_accented_name_makes_the_old_one_stale() -> None:
    mem = memory()
    old = mem.remember("My name is Robert.")
    new = mem.remember("Actually, call me Émile from now on.")
    assert mem.get(old.id).superseded_by == new.id
    assert mem.recall("What's my name?", k=3).items[0].id == new.id


# ------------------------------------------------------------------ 3. stale facts


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My sister lives in Krakow.", "My sister lives in Łódź now."),
        ("José's phone number is 555-1234.", "José's phone number is 555-9999 now."),
        ("Zoë's favourite colour is blue.", "Zoë's favourite colour is green now."),
        ("Always answer in Español.", "From now on, answer in English."),
        ("Always reply in Français.", "From now on, reply in English."),
        ("I moved to Kraków.", "I moved to Łódź."),
        ("My favourite café is Central.", _nfd("My favourite café is Sperl now.")),
        (_nfd("My favourite café is Central."), "My favourite café is Sperl now."),
        ("I live in Tokyo.", "I live in 大阪 now."),
    ],
)
def test_a_fact_restated_with_letters_beyond_ascii_makes_the_old_one_stale(
    old: str, new: str
) -> None:
    assert _superseded(old, new)


@settings(max_examples=60, deadline=None)
@given(word=_ACCENTED)
def test_a_text_reads_the_same_composed_or_decomposed(word: str) -> None:
    text = f"My favourite {word} is Central."
    composed, decomposed = parse(unicodedata.normalize("NFC", text)), parse(_nfd(text))
    assert (composed.subject, composed.value, composed.words) == (
        decomposed.subject,
        decomposed.value,
        decomposed.words,
    )


# ------------------------------------------------------------------ 4. used memories


@pytest.mark.parametrize(
    ("memory_text", "answer"),
    [
        ("Я живу в Москве уже десять лет.", "Вы живёте в Москве уже десять лет, вы говорили."),
        ("Η αδελφή μου μένει στην Αθήνα.", "Η αδελφή σας μένει στην Αθήνα."),
        ("Herr Müller wohnt in der Lindenstraße.", "Herr Müller wohnt noch in der Lindenstraße."),
        # written without spaces: the answer shares pairs of characters, not whole runs
        ("我的猫叫小白，今年三岁。", "你的猫叫小白，它今年三岁了。"),
        ("東京タワーに行きました", "東京タワーに行ったんですね"),
        # a proportionate echo of a longer memory, as in English (a quarter)
        ("我下周三要去医院复查血压，医生让我带上之前的检查报告", "记得下周三去医院复查血压。"),
        ("私は毎朝六時に起きてジョギングをしています", "毎朝六時に起きるんですね。"),
        # less than a word of content (one pair: 住在 and 我住 hold grammar) needs all of
        # it, as "Peanuts!" does: such a memory was never counted used
        ("我住在北京", "你住在北京。"),
        ("我对花生过敏", "你对花生过敏，所以不要吃花生。"),
        ("私は東京に住んでいます", "あなたは東京に住んでいます。"),
    ],
)
def test_an_answer_echoing_a_memory_in_any_script_used_it(memory_text: str, answer: str) -> None:
    assert used_ids(answer, [("m", memory_text)]) == ["m"]
    assert used_ids(_nfd(answer), [("m", memory_text)]) == ["m"]
    assert used_ids("OK, see you tomorrow. 好的，明天见。", [("m", memory_text)]) == []


@pytest.mark.parametrize(
    ("memory_text", "answer"),
    [
        ("用户喜欢喝咖啡", "用户不喜欢吃辣的食物"),  # "user", "likes": the chat's side, a verb
        ("我的猫叫小白", "我的狗叫小黑"),  # "my", "called": grammar
        ("我明天要去北京开会", "我明天要去上海旅游"),  # "tomorrow I go to": grammar, a date
        ("我下周一有会议。", "下周北京会下雨。"),  # "next week" alone
        ("我现在觉得很累", "我现在觉得你应该先把报告写完。"),  # "I now think": filler
        ("I bought a new 华为手机 last month for my dad", "华为手机 are popular in China."),
        # one pair of content (北京) is not echoed by naming it alone
        ("我住在北京", "北京今天下雨。"),
    ],
)
def test_an_answer_sharing_only_grammar_with_a_chinese_memory_did_not_use_it(
    memory_text: str, answer: str
) -> None:
    """Pairs of grammar ("我的", "要去") are not content, as "my" and "go" are stop words:
    an answer about something else shared two of them and counted the memory used."""
    assert used_ids(answer, [("m", memory_text)]) == []


def test_half_width_katakana_reads_as_full_width() -> None:
    """ "ﾃﾞｰﾀﾍﾞｰｽ" (half-width) had no content words once cut in pairs: never echoed."""
    text = "ﾃﾞｰﾀﾍﾞｰｽ ﾊﾟｽﾜｰﾄﾞ"
    assert content_words(text) == content_words("データベース パスワード") != set()
    assert used_ids(text, [("m", text)]) == ["m"]


def test_accented_words_are_whole() -> None:
    """ "Müller" was read as "ller", and "Frau Zöller" echoed "Herr Müller"."""
    assert {"müller", "straße", "herr", "wohnt"} <= content_words("Herr Müller wohnt in der Straße")
    assert used_ids("Frau Zöller, ok.", [("m", "Herr Müller")]) == []
    assert content_words("d'Artagnan's snake_case Jean-Luc") == {
        "d'artagnan's",
        "snake",
        "case",
        "jean-luc",
    }
    assert content_words("Jean-Lüc") == {"jean-lüc"}


@given(text=st.text(max_size=80))
def test_content_words_read_a_decomposed_text_as_the_composed_one(text: str) -> None:
    assert content_words(_nfd(text)) == content_words(unicodedata.normalize("NFC", text))


# ------------------------------------------------------------------ 5. the saved index


def _open(path: Path, clock: ManualClock) -> Oblivion:
    mem = memory(path, clock=clock)
    mem._lex.min_documents = 2  # (1,024 by default: a small store saves its index too)
    return mem


_FILLER = [f"note {k} about gardening weather and travel plans" for k in range(30)]


def _saved_bytes(path: Path) -> bytes:
    return b"".join(f.read_bytes() for f in sorted((path / "lexical").glob("*.npz")))


def _ranking(mem: Oblivion, query: str) -> tuple[list[int], list[float]]:
    """BM25's best documents and scores (a recall would change what it ranks: it
    reinforces what it brings)."""
    return mem._lex.search("default", query, 10)


@pytest.mark.parametrize("change", ["forget", "edit"])
def test_the_saved_index_keeps_no_word_of_a_forgotten_or_edited_text(
    tmp_path: Path, change: str
) -> None:
    """Its slot was only marked deleted, and the file saved every slot: "forget()
    deletes for good" left the words in ``<store>/lexical/``. Read back, the index
    ranks as the one saved did."""
    path, clock = tmp_path / "store", ManualClock()
    mem = _open(path, clock)
    mem.remember_many(_FILLER)
    secret = mem.remember("my bank PIN is kwyjiboforget, noted with the gardening plans")
    mem.recall("gardening", k=3)  # the index is built
    if change == "forget":
        mem.forget(secret.id)
    else:
        mem.edit(secret.id, "my bank PIN is withheld, noted with the gardening plans")
    queries = ("gardening plans", "note 7 travel", "bank PIN", "kwyjiboforget withheld")
    before = {q: _ranking(mem, q) for q in queries}
    mem.close()
    saved = _saved_bytes(path)
    assert saved and b"kwyjiboforget" not in saved
    mem = _open(path, clock)
    assert {q: _ranking(mem, q) for q in before} == before
    assert mem._lex._saved  # read back, not built again
    mem.close()


def test_a_forget_in_a_process_that_never_searched_leaves_no_saved_word(tmp_path: Path) -> None:
    """The namespace's index was not built, so the delete skipped it; the file it was
    saved in, stale from then on, kept the word until a later search saved it again."""
    path, clock = tmp_path / "store", ManualClock()
    mem = _open(path, clock)
    mem.remember_many(_FILLER)
    secret = mem.remember("my bank PIN is kwyjiboforget")
    mem.recall("gardening", k=3)
    mem.close()
    assert b"kwyjiboforget" in _saved_bytes(path)
    mem = _open(path, clock)
    mem.forget(secret.id)
    mem.close()
    assert b"kwyjiboforget" not in _saved_bytes(path)


_DOC = st.lists(st.sampled_from(["ferry", "harbour", "zoë", "lisbon", "42", "paid"]), max_size=6)


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(_DOC, min_size=1, max_size=20), gone=st.sets(st.integers(1, 20)))
def test_saved_arrays_hold_only_the_terms_of_live_documents(
    docs: list[list[str]], gone: set[int]
) -> None:
    space = _Namespace()
    space.add(list(range(1, len(docs) + 1)), [" ".join(d) for d in docs])
    before = {w: space.search([w], 20) for w in ("ferri", "harbour", "zoe", "42")}
    space.delete(sorted(gone))
    after = {w: space.search([w], 20) for w in before}
    arrays = space.to_arrays()
    live = {t for k, d in enumerate(docs, 1) if k not in gone for t in tokens(" ".join(d))}
    saved = bytes(arrays["terms"]).decode("utf-8")
    assert set(saved.split("\n") if saved else []) == live
    assert set(arrays["seqs"].tolist()) == set(range(1, len(docs) + 1)) - gone
    back = _Namespace.from_arrays(arrays)
    assert {w: back.search([w], 20) for w in before} == after
