"""File access under the project root that never follows a symlink (SECURITY.md, safe file access).

One walk (:mod:`store.files._walk`) reaches every directory and file, for readers and writers
alike: component by component through directory descriptors, the root's device throughout, files
regular with one link and within a size cap. :class:`SafeFiles` reads stored artifacts through it
and checks their hash; :func:`opened_dir` and the ``*_file_at`` writers put files in place durably.
"""

from __future__ import annotations

from store.files._safe_files import SafeArtifact, SafeFiles
from store.files._walk import check_components, read_file_at, split_relative
from store.files._writes import (
    TEMP_PREFIX,
    create_file_at,
    open_dir,
    opened_dir,
    remove_file_at,
    replace_file_at,
)

__all__ = [
    "TEMP_PREFIX",
    "SafeArtifact",
    "SafeFiles",
    "check_components",
    "create_file_at",
    "open_dir",
    "opened_dir",
    "read_file_at",
    "remove_file_at",
    "replace_file_at",
    "split_relative",
]
