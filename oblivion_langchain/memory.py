"""Oblivion as a langchain-classic ``BaseMemory``, for legacy chains."""

from __future__ import annotations

from typing import Any

from langchain_classic.base_memory import BaseMemory
from langchain_classic.memory.utils import get_prompt_input_key
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import ConfigDict, PrivateAttr, field_validator

from oblivion_core import Oblivion
from oblivion_core.budget import count_tokens, render
from oblivion_core.checks import check_standing
from oblivion_core.errors import InvalidInputError, UnknownNamespaceError
from oblivion_core.overlap import used_ids
from oblivion_core.shown import reinforce_shown
from oblivion_langchain._convert import (
    CUT_MARKER,
    PlainNamespace,
    appraise,
    budget,
    clean_text,
    fit_text,
    positive_k,
    value_text,
)


class OblivionMemory(BaseMemory):
    """A drop-in ``memory=`` for legacy (langchain-classic) chains, backed by Oblivion.

    Instead of replaying the whole conversation, each chain run gets the past turns
    that matter for its input, ranked by relevance and activation and packed into
    ``token_budget`` tokens; turns that stop mattering decay to the archive.

    * ``load_memory_variables(inputs)`` recalls with the chain's input as the query
      (the engine's recall boost applies) and returns ``{memory_key: ...}``: a text
      block (``"- Human: ...\\n  AI: ..."`` lines, best first, whole block within the
      budget) or, with ``return_messages=True``, messages: a ``HumanMessage`` and an
      ``AIMessage`` per recalled turn (none for a side saved empty; a memory not saved
      by this class, or whose text no longer holds the turn saved with it, becomes one
      ``SystemMessage`` of its text), best first, their memory texts within the budget.
    * ``save_context(inputs, outputs)`` remembers the turn as one memory
      ``"Human: <input>\\nAI: <output>"`` (category and importance appraised from the
      input by the engine's scorer; messages and content-block lists count as their
      text; an empty side is left out, and a turn with nothing said is not stored; a
      turn longer than the policy's ``max_text_chars`` is stored cut, ending in
      ``" [...]"``, and its messages are the sides as cut), and gives the "used"
      boost to the memories the last load recalled that the output drew on
      (:func:`oblivion_core.overlap.used_ids`).
    * ``clear()`` forgets every memory of the namespace (``Oblivion.clear``): give the
      memory a namespace of its own.

    Async variants (``aload_memory_variables``, ``asave_context``, ``aclear``) run the
    same in a worker thread.

    Setup:
        ``pip install "oblivion-memory[langchain]"`` (includes langchain-classic).

    Instantiate and use:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_langchain import OblivionMemory

            memory = OblivionMemory(oblivion=Oblivion("./memory"), namespace="ana",
                                    token_budget=300)
            memory.save_context({"input": "I'm vegetarian."}, {"output": "Noted!"})
            memory.load_memory_variables({"input": "Suggest a dinner"})
            # {'history': '- Human: I'm vegetarian.\\n  AI: Noted!'}

    Attributes:
        oblivion: The engine.
        namespace: Namespace of this conversation's memories (``None``: default).
        memory_key: Name of the variable given to the prompt.
        input_key: Input to use as the query and to store (``None``: the only input).
        output_key: Output to store (``None``: the only output, or ``"output"``).
        token_budget: Tokens the loaded memories may cost (``None``: no limit).
        k: Maximum memories per load (``None``: the policy's ``default_k``).
        return_messages: Return messages instead of one string.
        human_prefix / ai_prefix: Labels of the two sides in stored turns.
        header: Optional first line of the text block.
        standing: Categories whose current memories are loaded whatever the input
            (``Oblivion.recall``'s ``standing``; default ``("instruction",)``: "always
            answer in British English" holds in every run, an input with no text
            included). At most half of ``k``'s places; ``()`` for none.
    """

    # BaseMemory's config plus extra="forbid": a misspelt field is an error, not dropped
    model_config = ConfigDict(
        **{**BaseMemory.model_config, "extra": "forbid", "validate_assignment": True}
    )

    oblivion: Oblivion
    namespace: PlainNamespace = None
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    token_budget: int | None = 500
    k: int | None = None
    return_messages: bool = False
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    header: str = ""
    standing: tuple[str, ...] = ("instruction",)

    _last_recalled: list[tuple[str, str]] = PrivateAttr(default_factory=list)

    @field_validator("token_budget", mode="before")
    @classmethod
    def _check_budget(cls, value: object) -> int | None:
        return budget(value)

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: object) -> int | None:
        return positive_k(value)

    @field_validator("standing", mode="before")
    @classmethod
    def _check_standing(cls, value: object) -> tuple[str, ...]:
        return check_standing(value)

    @property
    def memory_variables(self) -> list[str]:
        """The one variable this memory adds to chain inputs."""
        return [self.memory_key]

    # ---------------------------------------------------------------- loading
    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Recall the memories relevant to the chain's input, within the budget.

        NULs and lone surrogates in the input are cleaned out of the query (the engine
        refuses them). An input with no text (blank, or a message of images only) has
        nothing to match: it loads only the current memories of the ``standing``
        categories, those a recall would put first.
        """
        # NULs and lone surrogates would make the engine reject the whole query
        query = clean_text(value_text(inputs[self._input_key(inputs)])).strip()
        items = self._recall(query)
        if self.return_messages:
            reinforce_shown(self.oblivion, items, self.namespace)
            self._last_recalled = [(i.id, i.text) for i in items]
            return {self.memory_key: self._messages(items)}
        counter = self.oblivion.token_counter
        text, shown = render(
            [i.text for i in items],
            counter=counter,
            budget=self.token_budget,
            header=self.header,
        )
        # the recall only read: what the block lists gets its boost (a line of many
        # lines costs more rendered than recall packed it for, and may be left out)
        listed = [items[i] for i in shown]
        reinforce_shown(self.oblivion, listed, self.namespace)
        self._last_recalled = [(i.id, i.text) for i in listed]
        return {self.memory_key: text}

    def _recall(self, query: str) -> list[Any]:
        room = self.token_budget
        if room is not None and not self.return_messages and self.header:
            room = max(room - count_tokens(self.oblivion.token_counter, self.header + "\n"), 0)
        if not query and not self.standing:
            return []  # nothing to match, and nothing shown whatever the input
        try:
            # a blank query recalls the standing memories alone (Oblivion.recall)
            result = self.oblivion.recall(
                query,
                token_budget=room,
                k=self.k,
                namespace=self.namespace,
                standing=self.standing,
                feedback=False,  # boosted once shown (load_memory_variables)
            )
        except UnknownNamespaceError:
            return []
        return list(result)

    def _messages(self, items: list[Any]) -> list[BaseMessage]:
        out: list[BaseMessage] = []
        for item in items:
            turn = item.metadata.get("oblivion_turn")
            if (
                isinstance(turn, dict)
                and "input" in turn
                and "output" in turn
                # a side the stored text does not hold (saved uncut by an older version,
                # or the memory was edited since): rebuilt from the stored text instead
                and all(str(turn[key]) in item.text for key in ("input", "output"))
            ):
                # a side saved empty gives no message (providers refuse empty messages)
                if turn["input"]:
                    out.append(HumanMessage(content=str(turn["input"])))
                if turn["output"]:
                    out.append(AIMessage(content=str(turn["output"])))
            else:
                out.append(SystemMessage(content=item.text))
        return out

    # ---------------------------------------------------------------- saving
    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Remember the turn; boost the recalled memories the output drew on.

        Messages and content-block lists are stored as their text (NULs as spaces,
        lone surrogates replaced: the engine stores neither). A side that is empty is
        left out of the stored turn; a turn with both sides empty is not stored. The
        "used" boost goes to every recalled memory the output drew on that still exists.
        """
        # cleaned like the query: the engine would refuse a turn holding a NUL
        user = clean_text(value_text(inputs[self._input_key(inputs)])).strip()
        answer = clean_text(value_text(outputs[self._output_key(outputs)])).strip()
        recalled, self._last_recalled = self._last_recalled, []
        if answer:
            # A recalled memory may have been forgotten (e.g. by clear()) since the load:
            # the others still get their boost.
            self.oblivion.mark_used(
                used_ids(answer, recalled), namespace=self.namespace, skip_missing=True
            )
        if not user and not answer:
            return
        # appraised from the user's words; from the answer only when there are none
        category, importance = appraise(self.oblivion, user or answer)
        sides = {"input": (self.human_prefix, user), "output": (self.ai_prefix, answer)}
        text = "\n".join(f"{prefix}: {said}" for prefix, said in sides.values() if said)
        try:
            limit = self.oblivion.policy_for(self.namespace).max_text_chars
        except UnknownNamespaceError:
            limit = self.oblivion.policy.max_text_chars
        stored = fit_text(text, limit)
        turn = {"input": user, "output": answer}
        if stored != text:
            # Cut to max_text_chars: each side is kept as far as the stored text shows
            # it, so the messages rebuilt from the turn cost what recall packed.
            keep, at = len(stored) - len(CUT_MARKER), 0
            for key, (prefix, said) in sides.items():
                if not said:
                    continue
                begin = at + len(prefix) + 2
                end = begin + len(said)
                if keep <= begin:
                    turn[key] = ""
                elif keep < end:
                    turn[key] = said[: keep - begin] + CUT_MARKER
                at = end + 1
        self.oblivion.remember(
            stored,
            category=category,
            importance=importance,
            metadata={"oblivion_turn": turn},
            namespace=self.namespace,
        )

    def clear(self) -> None:
        """Forget every memory in this namespace with the engine's
        ``Oblivion.clear(namespace=...)`` (a namespace never written is a no-op)."""
        self._last_recalled = []
        try:
            # the namespace is this memory's: the engine's bulk delete, one transaction
            self.oblivion.clear(namespace=self.namespace)
        except UnknownNamespaceError:
            return

    # ---------------------------------------------------------------- keys
    def _input_key(self, inputs: dict[str, Any]) -> str:
        key = self.input_key or get_prompt_input_key(inputs, self.memory_variables)
        if key not in inputs:
            raise InvalidInputError(
                f"input key {key!r} is missing from the chain inputs {list(inputs)}"
            )
        return key

    def _output_key(self, outputs: dict[str, Any]) -> str:
        if self.output_key is not None:
            key = self.output_key
        elif len(outputs) == 1:
            key = next(iter(outputs))
        elif "output" in outputs:
            key = "output"
        elif not outputs:
            raise InvalidInputError(
                "got no outputs; pass the chain's answer, e.g. save_context(inputs, "
                '{"output": answer})'
            )
        else:
            raise InvalidInputError(
                f"got several outputs {list(outputs)}; set output_key to the one to remember"
            )
        if key not in outputs:
            raise InvalidInputError(
                f"output key {key!r} is missing from the outputs {list(outputs)}"
            )
        return key
