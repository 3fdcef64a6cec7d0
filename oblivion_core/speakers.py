"""Who says a text: the speaker a memory opens with, and the chat role it was stored with.

Agents store conversation in three shapes, and every rule that reads what "I" and "my"
mean (whose fact goes stale, whose name a memory gives) must read all three the same way:

* a labelled line: ``"Dana: please call me Dee"``, ``"user: my flight is on Tuesday"``.
  The label is a speaker if it is a chat role (:data:`ROLES`, any case) or a name
  (``"Dana"``, ``"Dr. Lee"``), not a discourse label (:data:`DISCOURSE`: ``"Update:"``,
  ``"PS:"``, ``"Shopping list:"``);
* a transcript, as the LangChain middleware stores a turn (``"user: ...\nassistant:
  ..."``): it states its first speaker's words, and from the next line that opens with a
  speaker the rest is a reply (after a chat role, only another chat role opens one: the
  user's own lines may open with labels, "Flight: my flight is on Thursday now");
* a message's bare text with its role beside it (``metadata["role"]``, as the LlamaIndex
  adapters store each message): :func:`as_said` gives it that role's label.

The person's side of a chat is one speaker under any of its labels (``user``, ``Human``,
``Customer``, ``Client``, ``Me``), as is the assistant's (``assistant``, ``AI``,
``Bot``, ``Model``, ``Agent``, ``Chatbot``): :func:`split_speaker` names them ``"user"``
and ``"assistant"``. :data:`NOT_THE_USER` are the speakers whose "I" is never the
user's.

Used by the stale-fact rule (:mod:`oblivion_core.supersession`) and the name index
(:mod:`oblivion_core.naming`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PREFIX = re.compile(r"^\s*([A-Za-z][\w .'\-]{0,40}?):\s+(.*)$", re.S)
#: Chat roles that are speakers whatever their case.
ROLES = frozenset(
    [
        "user",
        "assistant",
        "system",
        "human",
        "ai",
        "bot",
        "agent",
        "model",
        "customer",
        "client",
        "support",
        "host",
        "guest",
        "interviewer",
        "interviewee",
        "narrator",
        "moderator",
        "me",
        "you",
        # LlamaIndex's other message roles
        "developer",
        "tool",
        "function",
        "chatbot",
    ]
)
#: Words that make a ``"Word:"`` prefix a discourse label, not a speaker ("Update:").
DISCOURSE = frozenset(
    [
        "update",
        "updates",
        "note",
        "notes",
        "ps",
        "pps",
        "p.s",
        "nb",
        "n.b",
        "correction",
        "corrections",
        "reminder",
        "reminders",
        "fyi",
        "edit",
        "edited",
        "btw",
        "also",
        "actually",
        "important",
        "todo",
        "to-do",
        "question",
        "answer",
        "q",
        "a",
        "re",
        "subject",
        "summary",
        "context",
        "ok",
        "okay",
        "so",
        "well",
        "oh",
        "and",
        "but",
        "anyway",
        "heads",
        "heads-up",
        "quick",
        "small",
        "side",
        "change",
        "request",
        "thing",
        "news",
        "addendum",
        "clarification",
        "disclaimer",
        "aside",
        "tip",
        "hint",
        "warning",
        "caution",
        "status",
        "result",
        "results",
        "reason",
        "plan",
        "idea",
        "fact",
        "spoiler",
        "list",
        "lists",
        "shopping",
        "packing",
        "groceries",
        "grocery",
        "tasks",
        "task",
        "agenda",
        "action",
        "actions",
        "follow-up",
        "followup",
        "footnote",
        "reply",
        "response",
        "hey",
        "hi",
        "hello",
        "thanks",
        "sorry",
        "yes",
        "no",
        "lol",
        "haha",
        "hmm",
        "um",
        "wait",
        "scratch",
        "one",
        "more",
        "good",
        "bad",
        "fun",
        "random",
        "new",
        "latest",
        "final",
        "second",
        "third",
        "first",
        "last",
    ]
)
_NAME_TOKEN = re.compile(
    r"(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sir|Dame|Rev|St)\.?|[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)*|[A-Z]\.?"
)
#: Chat roles that name one side of a chat: the person ("user:" as the LangChain
#: middleware labels them, "Human:" as the classic memory does) and the assistant.
_SAME_SPEAKER = {
    "human": "user",
    "me": "user",
    "customer": "user",
    "client": "user",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "agent": "assistant",
    "chatbot": "assistant",
}
#: Speakers (as :func:`split_speaker` names them) whose "I" is never the user: the
#: assistant, the system or developer prompt, a tool's output, a support agent.
NOT_THE_USER = frozenset({"assistant", "system", "developer", "tool", "function", "support"})


def as_said(text: str, metadata: Mapping[str, Any] | None) -> str:
    """``text`` as the text rules read it: a memory stored as a chat message's bare text with
    its role beside it (``metadata["role"]``, as the LlamaIndex adapters store each
    message) opens with that role's label, unless it names its speaker itself (a role
    or a name: "Dana: ..." with ``"role": "user"`` is Dana's). Read bare, such a memory
    was an unknown speaker, whose "my" is anyone's: an assistant's "My name is Ada"
    replaced the user's name."""
    role = metadata.get("role") if metadata else None
    if not isinstance(role, str) or role.strip().lower() not in ROLES:
        return text
    m = _PREFIX.match(text)
    if m and is_speaker(m.group(1).strip()):
        return text
    return f"{role.strip()}: {text}"


def split_speaker(text: str) -> tuple[str | None, str]:
    """``("dana", "my ...")`` for ``"Dana: my ..."``; discourse labels are not speakers;
    the roles of one side of a chat are one speaker (``"Human:"`` is ``"user"``).
    A transcript states its first speaker's facts: from the next line that opens with a
    speaker ("user: my flight is on Tuesday\nassistant: Got it") the rest is a reply.
    After a chat role only another chat role opens a reply: the user's own lines may
    open with labels ("Flight: my flight is on Thursday now")."""
    m = _PREFIX.match(text)
    if m and is_speaker(label := m.group(1).strip()):
        speaker = label.lower()
        body = _first_turn(m.group(2), roles_only=speaker in ROLES)
        return _SAME_SPEAKER.get(speaker, speaker), body.strip()
    return None, text.strip()


def _first_turn(body: str, *, roles_only: bool = False) -> str:
    """``body`` up to the first of its lines opening with a speaker's label (a chat
    role's, with ``roles_only``)."""
    if "\n" not in body:
        return body
    lines = body.split("\n")
    for k in range(1, len(lines)):
        m = _PREFIX.match(lines[k])
        if m is None:
            continue
        label = m.group(1).strip()
        if label.lower() in ROLES if roles_only else is_speaker(label):
            return "\n".join(lines[:k])
    return body


#: Labels that look like a name but open a phrase to translate or a game: "Translate: my
#: name is Pedro" is no speaker's line (the text rules read it as not stated).
_NOT_SPEAKERS = frozenset(["translate", "translation", "roleplay", "role-play", "pretend"])


def is_speaker(label: str) -> bool:
    """A role ("user") or a name ("Dana", "Dr. Lee"), not a label ("Update", "PS",
    "Translate")."""
    if label.lower() in ROLES:
        return True
    if label.lower() in _NOT_SPEAKERS:
        return False
    words = label.split()
    if not 1 <= len(words) <= 3:
        return False
    if any(w.lower().strip(".") in DISCOURSE for w in words):
        return False
    return all(_NAME_TOKEN.fullmatch(w) for w in words)
