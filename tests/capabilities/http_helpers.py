"""Helpers for tests that talk to Roundtable over streamable HTTP (TCP or a Unix socket)."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from capabilities.serving._transports import BoundAddress
from tests.helpers import insert_proposal

__all__ = ["body", "http_client", "insert_proposal", "mcp_client"]


@asynccontextmanager
async def http_client(
    address: BoundAddress, token: str | None = None, *, verify: ssl.SSLContext | bool = True
) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client for ``address`` (over its Unix socket when it has one), with a bearer token.

    ``verify`` is the TLS trust for an ``https://`` address (a context holding the test CA).
    """
    transport = httpx2.AsyncHTTPTransport(uds=address.uds) if address.uds is not None else None
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(transport=transport, headers=headers, timeout=30, verify=verify) as client:
        yield client


@asynccontextmanager
async def mcp_client(
    address: BoundAddress, token: str, *, verify: ssl.SSLContext | bool = True
) -> AsyncIterator[Client]:
    """A real MCP client session over streamable HTTP (``verify``: as for :func:`http_client`)."""
    async with http_client(address, token, verify=verify) as hc:
        with anyio.fail_after(60):
            async with Client(streamable_http_client(address.mcp_url, http_client=hc)) as client:
                yield client


def body(result: CallToolResult) -> dict[str, Any]:
    """The structured answer, checked to equal the JSON text content."""
    assert result.structured_content is not None
    text = result.content[0]
    assert getattr(text, "type", None) == "text"
    assert json.loads(getattr(text, "text", "")) == result.structured_content
    answer: dict[str, Any] = result.structured_content
    return answer
