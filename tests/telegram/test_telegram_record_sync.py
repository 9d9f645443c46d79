"""A Telegram update is handed on as soon as its inbox record is committed — the model is
asked while the disk is still taking it — and confirmed to Telegram (the next
``getUpdates``) only once the record is on the disk."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.telegram.conftest import ANN, GatewayFactory, user_texts
from tests.waiting import until


async def test_the_model_is_asked_before_the_disk_took_the_record_telegram_confirmed_after(
    make_gateway: GatewayFactory, chorus_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    wal = str((chorus_home / "state.db").resolve()) + "-wal"
    syncing, synced = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_disk(fd: int) -> None:  # the disk: a WAL sync waits until told
        if os.readlink(f"/proc/self/fd/{fd}") == wal:
            syncing.set()
            synced.wait(30)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_disk)
    try:
        update = tg.message("hello there", user_id=ANN)
        await until(lambda: any(user_texts(r) for r in gw.server.requests), 20, "the model asked")
        assert ["hello there"] in [user_texts(r) for r in gw.server.requests]
        assert syncing.is_set()  # the record is on its way to the disk
        ids = [u["update_id"] for u in tg.pending()]
        assert update["update_id"] in ids  # not confirmed to Telegram yet
    finally:
        synced.set()
    await until(
        lambda: update["update_id"] not in [u["update_id"] for u in tg.pending()],
        20,
        "the update confirmed",
    )
    [reply] = await tg.wait_messages(ANN, 1)
    assert reply.text
