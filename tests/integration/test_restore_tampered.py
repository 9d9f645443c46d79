"""``chorus restore`` of a tampered archive, as a real process: it restores the data
only (config.yaml and plugins/ when named, .env never), and refuses links and
members bigger than the manifest or a sane cap before writing anything."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from memory.backup import MANIFEST
from memory.transcripts import SCHEMA_VERSION, SessionDB

CHORUS = Path(sys.executable).with_name("chorus")
MEMORY = b"The office cat is named Pixel\n"
EVIL_PLUGIN = b"import pathlib\npathlib.Path('/tmp/owned').write_text('owned')\n"


def restore(home: Path, archive: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200"})
    return subprocess.run(
        [str(CHORUS), "restore", str(archive), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def manifest(sizes: dict[str, int] | None = None) -> bytes:
    data: dict[str, object] = {"format": 1, "schema_version": SCHEMA_VERSION}
    if sizes is not None:
        data["sizes"] = sizes
    return json.dumps(data).encode()


def build(
    path: Path,
    members: dict[str, bytes],
    *,
    sizes: dict[str, int] | None = None,
    extra: tuple[tarfile.TarInfo, ...] = (),
) -> Path:
    data = manifest(sizes)
    with tarfile.open(path, "w:gz") as tar:
        for name, content in {**members, MANIFEST: data}.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for info in extra:
            tar.addfile(info)
    return path


def a_state_db(tmp_path: Path) -> bytes:
    path = tmp_path / "source-state.db"
    with SessionDB(path) as db:
        db.create_session("s1", platform="telegram", user_key="telegram:1")
    return path.read_bytes()


def tampered(tmp_path: Path) -> Path:
    return build(
        tmp_path / "tampered.tar.gz",
        {
            "state.db": a_state_db(tmp_path),
            "memories/MEMORY.md": MEMORY,
            "config.yaml": b"auth:\n  admins: ['telegram:666']\n",
            "plugins/evil/__init__.py": EVIL_PLUGIN,
            ".env": b"OPENAI_API_KEY=sk-from-the-archive\n",
        },
    )


def test_restore_writes_the_data_and_leaves_config_plugins_and_env_out(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    done = restore(home, tampered(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (home / "memories" / "MEMORY.md").read_bytes() == MEMORY
    with SessionDB(home / "state.db") as db:
        assert [s.id for s in db.list_sessions(limit=5)] == ["s1"]
    assert not (home / "config.yaml").exists()
    assert not (home / "plugins").exists()
    assert not (home / ".env").exists()
    assert "not restored: " in done.stdout
    for name in ("config.yaml", "plugins/evil/__init__.py", ".env", "--include"):
        assert name in done.stdout


def test_include_restores_config_and_plugins_never_env(tmp_path: Path) -> None:
    home = tmp_path / "home"
    archive = tampered(tmp_path)
    done = restore(home, archive, "--include", "config.yaml", "--include", "plugins")
    assert done.returncode == 0, done.stderr
    assert "telegram:666" in (home / "config.yaml").read_text()
    assert (home / "plugins" / "evil" / "__init__.py").read_bytes() == EVIL_PLUGIN
    assert not (home / ".env").exists()

    other = tmp_path / "other"
    refused = restore(other, archive, "--include", ".env")
    assert refused.returncode == 1
    assert "error: .env is never restored" in refused.stderr
    assert not other.exists()


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    ("extra", "members", "message"),
    [
        ((_link("memories/users/x/USER.md", "/etc/passwd", tarfile.SYMTYPE),), {}, "link"),
        ((_link("memories/MEMORY.md", "/etc/passwd", tarfile.LNKTYPE),), {}, "link"),
        ((), {"/tmp/chorus-absolute.md": b"x"}, "unsafe path"),
        ((), {"memories/../../outside.md": b"x"}, "unsafe path"),
    ],
    ids=["symlink", "hardlink", "absolute", "dotdot"],
)
def test_links_and_unsafe_paths_are_refused_before_anything_is_written(
    tmp_path: Path, extra: tuple[tarfile.TarInfo, ...], members: dict[str, bytes], message: str
) -> None:
    home = tmp_path / "home"
    archive = build(
        tmp_path / "evil.tar.gz", {"memories/MEMORY.md": MEMORY, **members}, extra=extra
    )
    done = restore(home, archive)
    assert done.returncode == 1
    assert message in done.stderr and "was not restored" in done.stderr
    assert not home.exists()
    assert not (tmp_path / "outside.md").exists()


def test_a_member_bigger_than_the_manifest_says_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    big = b"Pixel likes boxes. " * 1000
    archive = build(
        tmp_path / "grown.tar.gz",
        {"memories/MEMORY.md": MEMORY, "memories/users/telegram/1/USER.md": big},
        sizes={"memories/MEMORY.md": len(MEMORY), "memories/users/telegram/1/USER.md": 40},
    )
    done = restore(home, archive)
    assert done.returncode == 1
    assert f"memories/users/telegram/1/USER.md is {len(big)} bytes" in done.stderr
    assert "manifest says 40" in done.stderr
    assert not home.exists()


def test_a_huge_member_of_a_small_archive_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    zeros = tarfile.TarInfo("state.db")
    zeros.size = 300 * 1024 * 1024
    archive = build(tmp_path / "bomb.tar.gz", {"memories/MEMORY.md": MEMORY})
    with tarfile.open(archive, "w:gz") as tar:  # the same members, and 300 MB of zeros
        for name, content in {"memories/MEMORY.md": MEMORY, MANIFEST: manifest()}.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        with open("/dev/zero", "rb") as source:
            tar.addfile(zeros, source)
    assert archive.stat().st_size < 2 * 1024 * 1024
    done = restore(home, archive)
    assert done.returncode == 1
    assert f"would unpack to {zeros.size + len(MEMORY)} bytes" in done.stderr
    assert not home.exists()


def test_a_memory_file_over_its_cap_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    huge = os.urandom(5 * 1024 * 1024)
    archive = build(tmp_path / "fat.tar.gz", {"memories/MEMORY.md": huge})
    done = restore(home, archive)
    assert done.returncode == 1
    assert "memories/MEMORY.md is 5242880 bytes, more than a restore takes" in done.stderr
    assert not home.exists()
