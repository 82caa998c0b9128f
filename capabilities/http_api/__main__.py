"""``python -m capabilities.http_api``: print the OpenAPI document (``docs/openapi.json``)."""

from __future__ import annotations

import sys

from capabilities.http_api._openapi import write_document

write_document(sys.stdout)
