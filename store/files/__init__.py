"""File access under the project root that never follows a symlink (SECURITY.md, safe file access).

Directory file descriptors walked component by component; :class:`SafeFiles` reads stored
artifacts, checking type, link count, device, size and hash.
"""

from __future__ import annotations

from store.files._dirfd import (
    TEMP_PREFIX,
    create_file_at,
    open_dir,
    opened_dir,
    read_file_at,
    replace_file_at,
)
from store.files._safe_files import SafeFiles

__all__ = [
    "TEMP_PREFIX",
    "SafeFiles",
    "create_file_at",
    "open_dir",
    "opened_dir",
    "read_file_at",
    "replace_file_at",
]
