"""Numbers the console reads from text (a form field, a path, a header) are ASCII digits or a 4xx.

``str.isdigit`` takes ``"²"`` and ``"①"``, on which ``int`` then fails; ``int`` itself takes
``"١٢"`` and ``"1_0"``. Through the real app, none of them may become a 500 or change anything.
"""

from __future__ import annotations

import httpx2
import pytest

from capabilities.services import Services
from capabilities.serving import build_service_app
from tests.capabilities.api_helpers import running_api, seed_review, table_counts
from tests.capabilities.console.test_console_http import browser_like, csrf_of, log_in

pytestmark = pytest.mark.anyio

_NOT_DECIMAL = ["²", "①", "١", "1_0", "9" * 19, "-1", "1\n", " ", ""]


async def test_a_revise_form_with_digits_that_are_not_ascii_is_a_4xx(services: Services) -> None:
    async with running_api(services) as api, browser_like(api) as client:
        ids = seed_review(api.store)
        mid = ids["decision_id"]
        await log_in(client, api.token)
        csrf = csrf_of((await client.get(f"/memories/{mid}")).text)
        before = table_counts(api.store)
        for expected in _NOT_DECIMAL:
            form = {"csrf_token": csrf, "expected_revision": expected, "body_md": "new", "title": "t"}
            answer = await client.post(f"/memories/{mid}/revise", data=form)
            assert 400 <= answer.status_code < 500, (expected, answer.status_code, answer.text[:300])
            assert "Traceback" not in answer.text
        assert table_counts(api.store) == before


async def test_a_feedback_path_with_digits_that_are_not_ascii_is_a_4xx(services: Services) -> None:
    async with running_api(services) as api, browser_like(api) as client:
        ids = seed_review(api.store)
        await log_in(client, api.token)
        csrf = csrf_of((await client.get(f"/proposals/{ids['proposal_id']}")).text)
        before = table_counts(api.store)
        for event_id in ("²", "①", "١", "9" * 19):
            answer = await client.post(
                f"/warnings/{event_id}/feedback", data={"csrf_token": csrf, "verdict": "confirmed"}
            )
            assert 400 <= answer.status_code < 500, (event_id, answer.status_code, answer.text[:300])
        assert table_counts(api.store) == before


@pytest.mark.parametrize("declared", ["²", "①", "١٢", "1_0", "-5", "x"])
async def test_a_form_whose_content_length_is_not_a_number_is_a_400(
    services: Services, declared: str
) -> None:
    """uvicorn's parser refuses such a header itself, so the app is driven directly here."""
    app = build_service_app(services)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as client:
        answer = await client.post(
            "/login",
            content=b"csrf_token=x&token=y",
            headers={
                b"content-type": b"application/x-www-form-urlencoded",
                b"content-length": declared.encode("utf-8"),
            },
        )
    assert answer.status_code == 400, answer.text[:300]
    assert "Content-Length" in answer.text
