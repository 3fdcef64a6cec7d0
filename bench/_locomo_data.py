"""Load LoCoMo conversations into a time-ordered turn stream with clean evidence labels.

The LoCoMo file is a JSON list of samples. Each sample holds a ``conversation`` (two
speakers, ``session_N`` turn lists and their ``session_N_date_time`` stamps) and ``qa``
items whose ``evidence`` names the dialog turns (``"D1:3"``) that answer them.

Protocol fixed here, shared by every method in the benchmark:

- sessions are ordered by their parsed timestamp; turns inside a session are
  :data:`TURN_SPACING_S` seconds apart, starting at the session timestamp;
- one memory per turn, text ``"<speaker>: <text>"`` plus ``" [image: <caption>]"``
  when the turn carries a ``blip_caption``;
- every question is asked :data:`QUESTION_DELAY_S` seconds after the last turn.

Timestamps are seconds since the Unix epoch, reading the dataset's wall-clock times as UTC.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

TURN_SPACING_S = 30.0
"""Seconds between consecutive turns of one session."""

QUESTION_DELAY_S = 86_400.0
"""Seconds between a conversation's last turn and the moment its questions are asked."""

SESSION_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
"""Format of ``session_N_date_time`` values, e.g. ``"1:56 pm on 8 May, 2023"``."""

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialog turn, stored as one memory.

    Attributes:
        dia_id: Dataset turn id, e.g. ``"D1:3"``; unique within a conversation.
        speaker: Speaker name.
        text: The raw utterance.
        memory_text: What a memory layer stores and what a prompt would receive.
        timestamp: When the turn happened, in seconds since the epoch.
        session: The ``N`` of ``session_N``.
        position: 0-based index in the conversation's time-ordered stream.
    """

    dia_id: str
    speaker: str
    text: str
    memory_text: str
    timestamp: float
    session: int
    position: int


@dataclass(frozen=True, slots=True)
class Question:
    """One QA item with cleaned evidence.

    Attributes:
        index: Position of the item in the conversation's ``qa`` list.
        question: The question text.
        category: LoCoMo category 1-5 (see :data:`CATEGORY_NAMES`).
        evidence: Distinct turn ids that answer the question; never empty.
    """

    index: int
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(slots=True)
class Conversation:
    """A conversation ready to stream: turns in time order and answerable questions.

    Attributes:
        conv_id: The sample id, e.g. ``"conv-26"``.
        turns: Turns in time order.
        questions: Questions with at least one valid evidence id, in dataset order.
        question_time: When questions are asked, seconds since the epoch.
        dropped_evidence: Evidence tokens that matched no turn, in dataset order.
        skipped_questions: Indices of QA items left with no valid evidence.
    """

    conv_id: str
    turns: list[Turn]
    questions: list[Question]
    question_time: float
    dropped_evidence: list[str] = field(default_factory=list)
    skipped_questions: list[int] = field(default_factory=list)


def parse_session_time(value: str) -> float:
    """Parse a LoCoMo session stamp such as ``"1:56 pm on 8 May, 2023"``.

    Args:
        value: The ``session_N_date_time`` string.

    Returns:
        Seconds since the epoch, reading the wall-clock time as UTC.

    Raises:
        ValueError: If the string does not follow :data:`SESSION_DATE_FORMAT`.
    """
    parsed = datetime.strptime(value.strip(), SESSION_DATE_FORMAT)
    return parsed.replace(tzinfo=timezone.utc).timestamp()


def memory_text(turn: dict[str, Any]) -> str:
    """Return the stored text of a raw turn: speaker prefix plus optional image caption."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [image: {caption}]"
    return text


def split_evidence(raw: list[str]) -> list[str]:
    """Split evidence entries on ``;``, ``,`` and whitespace (``"D8:6; D9:17"`` is two ids)."""
    return [token for entry in raw for token in _EVIDENCE_SPLIT.split(str(entry)) if token]


def _load_turns(conv_id: str, conversation: dict[str, Any]) -> list[Turn]:
    sessions: list[tuple[float, int, list[dict[str, Any]]]] = []
    for key, value in conversation.items():
        match = _SESSION_KEY.fullmatch(key)
        if match is None or not value:
            continue
        stamp_key = f"{key}_date_time"
        if stamp_key not in conversation:
            raise ValueError(f"{conv_id}: {key} has turns but no {stamp_key}")
        start = parse_session_time(str(conversation[stamp_key]))
        sessions.append((start, int(match.group(1)), list(value)))
    sessions.sort(key=lambda s: (s[0], s[1]))

    turns: list[Turn] = []
    for start, session, raw_turns in sessions:
        for offset, raw in enumerate(raw_turns):
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    speaker=str(raw["speaker"]),
                    text=str(raw["text"]),
                    memory_text=memory_text(raw),
                    timestamp=start + offset * TURN_SPACING_S,
                    session=session,
                    position=len(turns),
                )
            )
    ids = [t.dia_id for t in turns]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{conv_id}: duplicate dia_id values")
    return turns


def load_conversation(sample: dict[str, Any]) -> Conversation:
    """Build a :class:`Conversation` from one LoCoMo sample.

    Evidence tokens that match no turn are dropped and recorded; QA items left with no
    evidence are skipped and recorded.
    """
    conv_id = str(sample["sample_id"])
    turns = _load_turns(conv_id, sample["conversation"])
    if not turns:
        raise ValueError(f"{conv_id}: conversation has no turns")
    known = {t.dia_id for t in turns}
    conv = Conversation(
        conv_id=conv_id,
        turns=turns,
        questions=[],
        question_time=max(t.timestamp for t in turns) + QUESTION_DELAY_S,
    )
    for index, item in enumerate(sample["qa"]):
        evidence: list[str] = []
        for token in split_evidence(item.get("evidence", [])):
            if token not in known:
                conv.dropped_evidence.append(token)
            elif token not in evidence:
                evidence.append(token)
        if not evidence:
            conv.skipped_questions.append(index)
            continue
        conv.questions.append(
            Question(
                index=index,
                question=str(item["question"]),
                category=int(item["category"]),
                evidence=tuple(evidence),
            )
        )
    return conv


def load_locomo(path: Path) -> list[Conversation]:
    """Load every conversation of a LoCoMo JSON file, in file order.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If the file is not a LoCoMo sample list.
    """
    if not path.is_file():
        raise FileNotFoundError(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(
        isinstance(s, dict) and {"sample_id", "conversation", "qa"} <= s.keys() for s in data
    ):
        raise ValueError(
            f"{path} is not a LoCoMo file: expected a JSON list of samples with "
            "'sample_id', 'conversation' and 'qa'"
        )
    return [load_conversation(sample) for sample in data]
