"""Spoken replies: the final answer also read out and sent as a voice message.

Off unless ``llm.speech_model`` is set and the person asked for it (``/voice
on``, kept per person in the database). After the text answer has gone out,
``SpokenReplies.deliver`` turns it into speech through the endpoint's
``/v1/audio/speech`` (OGG/Opus) and hands the audio to the platform's
``send_voice``: Telegram's voice message, an audio file on Discord and Slack. A
platform without voice messages (the console) is skipped before anything is
asked of the endpoint, as is an answer longer than ``media.max_spoken_chars``;
each with a log line.

Reading it out is an LLM call of the person's: held against their budget and
written to the usage ledger (``purpose`` ``speech``); a spent budget means no
voice, never a lost answer. Nothing here raises: whatever fails (the endpoint,
the platform, the database) is logged and the text answer stands.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Literal, Protocol

from agent.errors import BudgetExhausted, LLMError
from agent.settings import LLMSettings
from agent.usage import Charge
from gateway.events import InboundMessage
from gateway.media._settings import MediaSettings

__all__ = [
    "Outcome",
    "Speaker",
    "SpokenReplies",
    "VoiceChoice",
    "VoiceOut",
    "spoken_text",
]

logger = logging.getLogger(__name__)

Outcome = Literal["sent", "off", "not_wanted", "no_voice_here", "too_long", "failed"]


class Speaker(Protocol):
    """The endpoint's text to speech (``agent.llm.LLMClient.speak``)."""

    async def speak(
        self, text: str, *, model: str, voice: str, charge: Charge | None = None
    ) -> bytes: ...


class VoiceChoice(Protocol):
    """Whether the person an account belongs to asked for spoken replies (sync: run in a
    thread)."""

    def voice_on(self, account: str) -> bool: ...


class _Capabilities(Protocol):
    @property
    def voice(self) -> bool: ...


class VoiceOut(Protocol):
    """A platform as spoken replies use it (``gateway.adapters.BaseAdapter``)."""

    @property
    def capabilities(self) -> _Capabilities: ...

    async def send_voice(
        self,
        chat_id: str,
        audio: bytes,
        *,
        thread_id: str | None = None,
        reply_to: str | None = None,
    ) -> None: ...


_FENCED = re.compile(r"```.*?(```|$)", re.DOTALL)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"[*_`~#>|]+")


def spoken_text(markdown: str) -> str:
    """The words of an answer as they are read out: code blocks left out, links by their
    text, Markdown's marks dropped."""
    text = _FENCED.sub(" ", markdown)
    text = _LINK.sub(r"\1", text)
    text = _MARKS.sub("", text)
    lines = (re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


class SpokenReplies:
    def __init__(
        self,
        settings: Callable[[], tuple[LLMSettings, MediaSettings]],
        speaker: Speaker,
        choice: VoiceChoice,
        platforms: Mapping[str, VoiceOut],
    ) -> None:
        self._settings = settings
        self._speaker = speaker
        self._choice = choice
        self._platforms = platforms
        self._told: set[str] = set()
        self.outcomes: Counter[Outcome] = Counter()
        """How each answer's spoken reply went (``sent``, ``not_wanted``, ``failed``…)."""

    def enabled(self) -> bool:
        """Whether spoken replies can be had at all (``llm.speech_model`` is set)."""
        return bool(self._settings()[0].speech_model)

    def can_send(self, platform: str) -> bool:
        """Whether ``platform`` takes voice messages from the bot."""
        out = self._platforms.get(platform)
        return out is not None and out.capabilities.voice

    async def deliver(self, msg: InboundMessage, answer: str, charge: Charge) -> Outcome:
        """Read ``answer`` to ``msg`` out and send it, when its sender wants that. Never
        raises; what happened, for logs and tests."""
        outcome: Outcome = "failed"
        try:
            outcome = await self._deliver(msg, answer, charge)
        except Exception:
            logger.exception("a spoken reply on %s failed", msg.platform)
        self.outcomes[outcome] += 1
        return outcome

    async def _deliver(self, msg: InboundMessage, answer: str, charge: Charge) -> Outcome:
        llm, limits = self._settings()
        model = llm.speech_model
        if not model:
            return "off"
        text = spoken_text(answer)
        if not text:
            return "not_wanted"
        try:
            wanted = await asyncio.to_thread(self._choice.voice_on, str(msg.user_key))
        except Exception as exc:
            logger.warning("no spoken reply: the preferences could not be read (%s)", exc)
            return "failed"
        if not wanted:
            return "not_wanted"
        out = self._platforms.get(msg.platform)
        if out is None or not out.capabilities.voice:
            if msg.platform not in self._told:  # once per platform and process
                self._told.add(msg.platform)
                logger.info(
                    "spoken replies are skipped on %s: it has no voice messages", msg.platform
                )
            return "no_voice_here"
        if len(text) > limits.max_spoken_chars:
            logger.info(
                "no spoken reply: the answer has %d characters, over media.max_spoken_chars (%d)",
                len(text),
                limits.max_spoken_chars,
            )
            return "too_long"
        try:
            audio = await self._speaker.speak(
                text, model=model, voice=llm.speech_voice, charge=charge
            )
        except BudgetExhausted:  # the meter logged it; the text answer went out
            return "failed"
        except LLMError as exc:
            logger.warning("an answer could not be read out (%s)", exc)
            return "failed"
        reply_to = None if msg.is_direct else msg.message_id
        try:
            await out.send_voice(msg.chat_id, audio, thread_id=msg.thread_id, reply_to=reply_to)
        except Exception as exc:
            logger.warning(
                "a spoken reply could not be sent on %s (%s: %s)",
                msg.platform,
                type(exc).__name__,
                exc,
            )
            return "failed"
        logger.debug("spoken reply sent on %s: %d bytes", msg.platform, len(audio))
        return "sent"
