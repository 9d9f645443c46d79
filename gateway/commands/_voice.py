"""``/voice on|off``: each person's choice of spoken replies (``gateway.media.SpokenReplies``).

``/voice`` alone shows the choice. Without ``llm.speech_model`` spoken replies
are off on this chorus, and every form of the command says so. On a platform
without voice messages (the console) the choice is kept, and the person is told
answers here stay text.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from gateway.clock import Clock
from gateway.commands._registry import Command, CommandContext, CommandRegistry
from gateway.media import SpokenReplies, StoredVoiceChoice
from memory.errors import PreferenceStoreError

__all__ = ["VoiceDesk"]

logger = logging.getLogger(__name__)

OFF_HERE = "Spoken replies are off on this chorus (no speech model is configured)."
IS_ON = "Spoken replies are on: my answers also come as a voice message. /voice off stops them."
IS_OFF = "Spoken replies are off. /voice on sends my answers as a voice message too."
NOW_ON = "Spoken replies are on: my answers will also come as a voice message."
NOW_OFF = "Spoken replies are off: my answers will be text only."
NOT_HERE = " (Not here, though: {platform} has no voice messages, so answers here stay text.)"
USAGE = "Usage: /voice on, /voice off, or /voice to see which it is."
UNAVAILABLE = "I can't reach your settings just now. Please try again shortly."


@dataclass
class VoiceDesk:
    choice: StoredVoiceChoice
    spoken: SpokenReplies
    clock: Clock

    def register(self, registry: CommandRegistry) -> None:
        registry.register(
            Command(
                "voice",
                "spoken replies: also get my answers as a voice message (on or off)",
                self.voice_command,
                admin_only=False,
                args="on|off",
            )
        )

    async def voice_command(self, ctx: CommandContext) -> str:
        if not self.spoken.enabled():
            return OFF_HERE
        arg = ctx.args.strip().lower()
        if arg not in ("", "on", "off"):
            return USAGE
        account = str(ctx.user_key)
        try:
            if arg:
                on = arg == "on"
                await asyncio.to_thread(self.choice.set_voice, account, on, self.clock.time())
                logger.info("spoken replies turned %s by %s", arg, account)
                text = NOW_ON if on else NOW_OFF
            else:
                on = await asyncio.to_thread(self.choice.voice_on, account)
                text = IS_ON if on else IS_OFF
        except PreferenceStoreError as exc:
            logger.warning("/voice failed: the preferences could not be used (%s)", exc)
            return UNAVAILABLE
        if on and not self.spoken.can_send(ctx.msg.platform):
            text += NOT_HERE.format(platform=ctx.msg.platform)
        return text
