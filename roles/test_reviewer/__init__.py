"""The test reviewer: ``python -m roles.test_reviewer``, an embedded reviewer that needs no model.

Its launch directory (``--channel-dir``, default ``$ROUNDTABLE_CHANNEL_DIR`` or ``/run/roundtable``)
holds, besides the socket and the token, what the supervisor staged: ``workspace.tar``, the
project's tracked files at ``HEAD`` with the patch version under review applied, and ``review.json``,
the manifest (proposal, patch version and SHA-256, the command, its timeout, whether the patch
applied). The reviewer:

1. asks ``patch.inspect`` for the proposal's current patch version; when it is not the manifest's
   (a newer version was attached), it votes nothing and exits 4: the staged tree is not the one
   under review;
2. extracts the tar into a fresh scratch directory under ``$TMPDIR`` (else ``/tmp``), accepting
   regular files and directories only (no absolute names, no ``..``, no links or devices, a cap on
   the bytes and the entries; tarfile's ``data`` filter as well where the Python has it);
3. runs the command there: no shell, stdin closed, in a new session, stdout and stderr merged and
   only the last 64 KiB kept, with an environment of ``PATH`` (this interpreter's directory first, so
   ``python`` means it), ``HOME`` and ``TMPDIR`` in the scratch directory, ``LANG=C.UTF-8`` and
   ``PYTHONDONTWRITEBYTECODE=1``, and nothing else; past the manifest's timeout its whole process
   group is killed;
4. checks the patch version again, then calls ``vote.cast`` as its grant's agent: ``approve`` when
   the patch applied and the command exited 0, ``revise`` otherwise, with a short Markdown reason
   (the command, its exit or "timed out after N s" or "the patch does not apply", the patch
   version, and the last 40 lines of the output in a fenced block).

It prints one JSON line, ``{"vote", "exit_code", "patch_version", "duration_seconds", "timed_out"}``.
Exit status: 0 the vote was cast; 2 no launch channel; 3 no grant; 4 the patch version is not the
manifest's (no vote) or a tool refused; 1 anything else (a bad manifest, an unsafe or oversized tar,
a command that cannot start). Each failure prints one line on stderr.
"""

from __future__ import annotations

from roles.test_reviewer._review import (
    EXIT_REFUSED,
    MANIFEST_FILE,
    WORKSPACE_FILE,
    Manifest,
    main,
    reason_markdown,
)
from roles.test_reviewer._sandbox import (
    CommandResult,
    WorkspaceRefused,
    command_environment,
    extract_workspace,
    run_command,
)

__all__ = [
    "EXIT_REFUSED",
    "MANIFEST_FILE",
    "WORKSPACE_FILE",
    "CommandResult",
    "Manifest",
    "WorkspaceRefused",
    "command_environment",
    "extract_workspace",
    "main",
    "reason_markdown",
    "run_command",
]
