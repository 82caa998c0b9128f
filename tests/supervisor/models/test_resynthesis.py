"""Memory resynthesis through the ``openai`` provider: a real HTTP model server, the status moving on."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from capabilities.serving._transports import serving
from store import Store
from store.config import OpenAIProviderConfig, ProjectConfig
from supervisor.models._resynthesis import OpenAISynthesizer, synthesizer_for
from tests.e2e.scripted_model import ScriptedModel, final

pytestmark = pytest.mark.anyio


def _entry_with_request(store: Store) -> tuple[str, str]:
    entry = store.memory.record(
        scope="project",
        kind="decision",
        title="SQL",
        body_md="Use the builder.\n\nUse the builder.",
        actor="op",
    )
    committed = store.memory_admin.request_resynthesis(entry.id, actor="op", reason="tidy")
    return entry.id, str(committed.body["request"]["id"])


async def test_openai_synthesizer_completes_a_request(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    prompts: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        prompts.append(body)
        return final("All SQL goes through the builder.")

    model = ScriptedModel([answer])
    monkeypatch.setenv("RT_RESYNTH_KEY", "sk-resynth")
    memory_id, request_id = _entry_with_request(store)
    async with serving(model.app(), host="127.0.0.1", port=0) as address:
        config = OpenAIProviderConfig(
            base_url=f"{address.base_url}/v1", api_key_env="RT_RESYNTH_KEY", model="m"
        )
        result = await anyio.to_thread.run_sync(
            lambda: store.memory_admin.fulfil_resynthesis(
                request_id, OpenAISynthesizer(config), provider="openai"
            )
        )
    assert result["status"] == "completed"
    entry = store.memory.get(memory_id)
    assert entry.body_md == "All SQL goes through the builder."
    assert entry.resynthesis_status == "completed"
    assert model.authorizations == ["Bearer sk-resynth"]
    assert "Use the builder." in prompts[0]["messages"][1]["content"]


async def test_a_failing_model_marks_the_request_failed_and_changes_nothing(store: Store) -> None:
    memory_id, request_id = _entry_with_request(store)
    before = store.memory.get(memory_id)
    async with serving(ScriptedModel([]).app(), host="127.0.0.1", port=0) as address:
        config = OpenAIProviderConfig(base_url=f"{address.base_url}/nowhere")
        result = await anyio.to_thread.run_sync(
            lambda: store.memory_admin.fulfil_resynthesis(
                request_id, OpenAISynthesizer(config), provider="openai"
            )
        )
    assert result["status"] == "failed"
    assert "404" in result["error"]
    after = store.memory.get(memory_id)
    assert (after.body_md, after.revision) == (before.body_md, before.revision)
    assert after.resynthesis_status == "failed"


def test_the_configured_provider_chooses_the_synthesizer() -> None:
    lexical = ProjectConfig()
    assert synthesizer_for(lexical) == (None, "lexical")
    openai = ProjectConfig.model_validate({"roles": {"memory_oracle": {"provider": "openai"}}})
    synthesizer, provider = synthesizer_for(openai)
    assert provider == "openai"
    assert isinstance(synthesizer, OpenAISynthesizer)
