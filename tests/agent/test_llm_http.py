"""The HTTP under the openai client (``agent.llm_http``): the SDK's aiohttp transport,
which reports each request as sent to the task that made it, names a refused
connection a connection error, still goes through a proxy named in the
environment, and verifies an https endpoint with the CA bundle the environment
names. The real openai client against the fake endpoint, a forward proxy speaking
plain HTTP/1.1 (RFC 9112's absolute-form request target) and a TLS relay in front
of the endpoint, its certificate made by the test's own CA."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import ssl
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from agent import sending
from agent.errors import LLMUnavailable
from agent.llm import LLMClient
from agent.settings import LLMSettings
from tests.fakes import FakeOpenAI, Reply
from tests.waiting import until

ASK = [{"role": "user", "content": "hello"}]


def client_of(base_url: str) -> LLMClient:
    return LLMClient(LLMSettings(base_url=base_url, api_key=None, max_retries=0))


async def test_a_request_tells_its_own_task_once_it_is_sent(server: FakeOpenAI) -> None:
    """Two turns ask at once; only the one under ``when_sent`` hears of its request, once,
    and before its answer came (the model holds it back)."""
    server.responder(lambda body: Reply.of_text("late", delay=1.0))
    llm = client_of(server.base_url)
    told: list[int] = []
    answered = asyncio.Event()

    async def watched() -> None:
        def sent() -> None:
            told.append(len(server.requests))
            assert not answered.is_set()

        with sending.when_sent(sent):
            await llm.complete(ASK)
        answered.set()

    try:
        await asyncio.gather(watched(), llm.complete(ASK))
    finally:
        await llm.aclose()
    assert len(told) == 1
    assert len(server.requests) == 2


async def test_a_request_without_a_body_is_sent_with_its_headers(server: FakeOpenAI) -> None:
    """The connection opened ahead (a GET of the base URL) made under ``when_sent``."""
    llm = client_of(server.base_url)
    told: list[bool] = []
    try:
        with sending.when_sent(lambda: told.append(True)):
            llm.preconnect.warm()
        await llm.preconnect.settled()
    finally:
        await llm.aclose()
    assert llm.preconnect.sent == 1
    assert told == [True]


async def test_a_refused_connection_is_a_connection_error_not_a_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The SDK's aiohttp table makes every aiohttp connection error a ``ConnectTimeout``;
    a port nobody listens on must read as what it is."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = client_of(f"http://127.0.0.1:{port}/v1")
    try:
        with caplog.at_level(logging.WARNING, logger="agent"), pytest.raises(LLMUnavailable):
            await llm.complete(ASK)
    finally:
        await llm.aclose()
    assert "APIConnectionError (ConnectError)" in caplog.text
    assert "Timeout" not in caplog.text


class ForwardProxy:
    """An HTTP forward proxy: it reads each request (absolute-form target), records its
    request line and relays it to the origin named in it, and the answer back."""

    def __init__(self) -> None:
        self.request_lines: list[str] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *fields = head.decode("latin-1").split("\r\n")
                self.request_lines.append(line)
                method, target, version = line.split(" ")
                headers = dict(f.split(": ", 1) for f in fields if f)
                lowered = {k.lower(): v for k, v in headers.items()}
                body = await reader.readexactly(int(lowered.get("content-length", "0")))
                origin, _, path = target.removeprefix("http://").partition("/")
                host, port = origin.split(":")
                up_reader, up_writer = await asyncio.open_connection(host, int(port))
                kept = {k: v for k, v in headers.items() if not k.lower().startswith("proxy-")}
                kept["Connection"] = "close"
                up_writer.write(
                    f"{method} /{path} {version}\r\n".encode()
                    + "".join(f"{k}: {v}\r\n" for k, v in kept.items()).encode()
                    + b"\r\n"
                    + body
                )
                answer = await up_reader.read()  # the origin closes after its answer
                up_writer.close()
                writer.write(answer)
                await writer.drain()
                writer.close()
                return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[ForwardProxy, str]]:
    relay = ForwardProxy()
    url = await relay.start()
    yield relay, url
    await relay.close()


async def test_a_proxy_named_in_the_environment_carries_the_request(
    server: FakeOpenAI,
    proxy: tuple[ForwardProxy, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    relay, url = proxy
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", url)
    server.reply("through the proxy")
    llm = client_of(server.base_url)
    try:
        answer = await llm.complete(ASK)
    finally:
        await llm.aclose()
    assert answer.content == "through the proxy"
    await until(lambda: len(relay.request_lines) == 1)
    assert relay.request_lines[0].startswith(f"POST {server.base_url}/chat/completions ")


def tls_files(directory: Path) -> tuple[Path, Path, Path]:
    """A CA of the test's own and a certificate it signed for 127.0.0.1: (CA, cert, key)."""
    now = datetime.now(UTC)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("chorus test CA"))
        .issuer_name(name("chorus test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@pytest.fixture
async def tls_endpoint(server: FakeOpenAI, tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    """The fake endpoint behind TLS (a relay terminating it): its https base URL and the
    CA that signed its certificate."""
    ca, cert, key = tls_files(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    origin = server.base_url.removeprefix("http://").partition("/")[0].split(":")

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(origin[0], int(origin[1]))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, ssl.SSLError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    tls = await asyncio.start_server(relay, "127.0.0.1", 0, ssl=context)
    port = tls.sockets[0].getsockname()[1]
    yield f"https://127.0.0.1:{port}/v1", ca
    tls.close()


async def test_an_https_endpoint_signed_by_the_ca_in_ssl_cert_file_answers(
    server: FakeOpenAI, tls_endpoint: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A private endpoint's CA bundle, named as an operator names it for any Python
    HTTPS client (``SSL_CERT_FILE``), is what the client verifies the endpoint with."""
    url, ca = tls_endpoint
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    server.reply("over TLS")
    llm = client_of(url)
    try:
        answer = await llm.complete(ASK)
    finally:
        await llm.aclose()
    assert answer.content == "over TLS"


async def test_an_https_endpoint_whose_certificate_is_not_trusted_is_not_asked(
    server: FakeOpenAI,
    tls_endpoint: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, _ = tls_endpoint
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    llm = client_of(url)
    try:
        with caplog.at_level(logging.WARNING, logger="agent"), pytest.raises(LLMUnavailable):
            await llm.complete(ASK)
    finally:
        await llm.aclose()
    assert server.requests == []
    assert "APIConnectionError" in caplog.text
