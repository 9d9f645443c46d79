"""/export on Slack: the person's archive is uploaded into their direct chat with the app."""

from __future__ import annotations

import io
import json
import zipfile

from tests.slack.conftest import ANN, CHANNEL, DM_ANN, GatewayFactory


async def test_export_uploads_the_archive_into_the_direct_chat(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    llm.reply("Noted, the blue door.")
    await gw.event(slack.person("my studio has a blue door", user=ANN, channel=DM_ANN))
    await slack.wait_posted(DM_ANN, 1)
    await gw.settle()

    await gw.event(slack.person("/export", user=ANN, channel=DM_ANN))
    await slack.wait_for(lambda: bool(slack.shared), 15, "a shared file")
    [shared] = slack.shared
    assert shared.channel == DM_ANN
    assert shared.filename == f"chorus-export-slack-{ANN}.zip"
    assert slack.calls_of("files.getUploadURLExternal")
    with zipfile.ZipFile(io.BytesIO(shared.data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        names = [n for n in archive.namelist() if n.startswith("transcripts/")]
        said = [m["content"] for n in names for m in json.loads(archive.read(n))["messages"]]
    assert manifest["person"] == f"slack:{ANN}"
    assert "my studio has a blue door" in said
    posts = await slack.wait_posted(DM_ANN, 2)
    assert "file above" in posts[-1].text

    await gw.event(slack.person("/export", user=ANN, channel=DM_ANN))
    posts = await slack.wait_posted(DM_ANN, 3)
    assert "again in 60 minutes" in posts[-1].text
    assert len(slack.shared) == 1


async def test_export_in_a_channel_uploads_nothing(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack = gw.slack
    await gw.event(slack.person("/export", user=ANN, channel=CHANNEL, channel_type="channel"))
    await slack.wait_for(lambda: bool(slack.ephemeral), 15, "an ephemeral notice")
    [notice] = slack.ephemeral
    assert (notice.channel, notice.user) == (CHANNEL, ANN)
    assert "direct chat" in notice.text
    await gw.settle()
    assert not slack.shared and not slack.calls_of("files.getUploadURLExternal", status=None)
    assert not slack.posted_in(CHANNEL)
