"""/export on Discord: the person's archive arrives as an attachment in their DM."""

from __future__ import annotations

import io
import json
import zipfile

from gateway import _texts as t
from tests.discord.conftest import ANN, ANN_ID, DM_ANN, GatewayFactory
from tests.fakes.discord_data import BOT_ID, CHANNEL_ID, GUILD_ID


async def test_export_attaches_the_archive_in_the_dm(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    llm.reply("Noted, the blue door.")
    fake.message("my studio has a blue door", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 1)
    await gw.settle()

    fake.message("/export", author=ANN, channel_id=DM_ANN)
    await fake.wait_for(lambda: bool(fake.attachments), 15, "an attachment")
    [attached] = fake.attachments
    assert attached.channel_id == DM_ANN
    assert attached.filename == f"chorus-export-discord-{ANN_ID}.zip"
    with zipfile.ZipFile(io.BytesIO(attached.data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        names = [n for n in archive.namelist() if n.startswith("transcripts/")]
        said = [m["content"] for n in names for m in json.loads(archive.read(n))["messages"]]
    assert manifest["person"] == f"discord:{ANN_ID}"
    assert "my studio has a blue door" in said
    posts = await fake.wait_posted(DM_ANN, 3)  # the answer, the file, "in the file above"
    assert "file above" in posts[-1].content

    fake.message("/export", author=ANN, channel_id=DM_ANN)
    posts = await fake.wait_posted(DM_ANN, 4)
    assert "again in 60 minutes" in posts[-1].content
    assert len(fake.attachments) == 1


async def test_export_in_a_server_channel_attaches_nothing(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake = gw.discord
    fake.message(
        f"<@{BOT_ID}> /export",
        author=ANN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    [note] = await fake.wait_posted(CHANNEL_ID, 1)
    assert note.content == t.SENT_PRIVATELY
    dm = fake.dm_channels[ANN_ID]
    [private] = await fake.wait_posted(dm, 1)
    assert "direct chat" in private.content
    await gw.settle()
    assert not fake.attachments
