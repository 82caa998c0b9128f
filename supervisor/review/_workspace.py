"""The tree a test reviewer runs in: the project's tracked files at ``HEAD``, the patch applied, as a tar.

:func:`stage_review_workspace` builds what a test-reviewer launch finds in its runtime directory:
``workspace.tar`` (:data:`WORKSPACE_TAR`) and the manifest ``review.json`` (:data:`REVIEW_MANIFEST`).
It blocks (git runs in subprocesses); call it through ``anyio.to_thread``.

**What goes in.** The files git tracks in the ``HEAD`` commit, read as raw blobs: ``git ls-tree -r``
lists them and ``git cat-file --batch`` reads them. Not ``git archive``: that applies
``.gitattributes`` (``export-ignore``, ``export-subst``, smudge filters, end-of-line conversion), so
a committed attribute could change or hide what the reviewer tests, and filters are commands. The
blobs are exactly the committed bytes. Untracked and ignored files never enter, nor uncommitted
edits. Left out as well, and counted in the manifest's ``skipped``: anything under ``.roundtable/``;
symbolic links (the container's extraction accepts regular files and directories only, so a link
could only be dropped there; a patch that edits a tracked link therefore does not apply);
submodules (a commit id, no content); and entries no checkout would write (``..``, ``.git``).

**git, hardened.** Every git command has a fixed argv (no shell), a timeout, and an environment
built from nothing: ``PATH``, ``LANG``, ``HOME`` set to an empty private directory,
``GIT_CONFIG_NOSYSTEM=1`` and ``GIT_CONFIG_GLOBAL=/dev/null`` (no system or user configuration), no
other ``GIT_*`` variable of the caller, and ``GIT_NO_LAZY_FETCH=1``. The command line adds
``core.hooksPath=/dev/null``, ``core.fsmonitor=false`` and ``protocol.allow=never``: what the
repository's own configuration could make git run (hooks, an fsmonitor, a fetch of missing objects
of a partial clone) is switched off, and none of the commands used runs filters or a pager.

**The patch.** It is checked by the store's diff parser (paths inside the repository, never into
``.git`` or ``.roundtable``), then applied with ``git apply`` in the staged copy, as a plain patch
tool: no repository around it (``GIT_CEILING_DIRECTORIES`` stops the search at the copy) and no
``--unsafe-paths``. ``git apply`` is atomic; a patch that is refused or does not apply is no error:
the manifest says ``applied: false`` with the reason in ``apply_error``, and the tar holds the
unpatched base, so the reviewer can vote ``revise`` saying so.

**The tar.** Uncompressed, deterministic: names sorted, regular files (mode 0644, or 0755 when
executable) and directories (0755) only, mtime 0, uid and gid 0, no user or group names. The same
tree and patch always give the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import stat
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.errors import Conflict, InvalidArgument, RoundtableError
from store.patches import decode_patch, parse_diff

__all__ = [
    "DEFAULT_MAX_BYTES",
    "REVIEW_MANIFEST",
    "WORKSPACE_TAR",
    "StagedWorkspace",
    "stage_review_workspace",
]

WORKSPACE_TAR = "workspace.tar"
"""The runtime-directory file holding the tree under review."""
REVIEW_MANIFEST = "review.json"
"""The runtime-directory file holding the manifest."""
DEFAULT_MAX_BYTES = 256 * 1024**2
"""The default cap on the tree (the tracked content, and the tar)."""

_GIT_TIMEOUT_SECONDS = 120
_APPLY_ERROR_CHARS = 2000
_SKIPPED_TOP = ".roundtable"
_NEEDS = "the test reviewer needs a git work tree with a commit"
_GIT_CONFIG = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("protocol.allow", "never"),
)


@dataclass(frozen=True)
class StagedWorkspace:
    """What a test-reviewer launch reads: the tar of the tree under review and its manifest."""

    tar: bytes
    manifest: dict[str, Any] = field(default_factory=dict)

    def manifest_json(self) -> bytes:
        """The manifest as the ``review.json`` file holds it (UTF-8 JSON, sorted keys, a final newline)."""
        return (json.dumps(self.manifest, sort_keys=True, indent=2) + "\n").encode("utf-8")


@dataclass(frozen=True)
class _Entry:
    mode: str
    kind: str
    oid: str
    size: int
    path: str


def stage_review_workspace(
    project_root: Path,
    patch: bytes,
    *,
    proposal_id: str,
    patch_version: int,
    patch_sha256: str,
    command: Sequence[str],
    timeout_seconds: float,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> StagedWorkspace:
    """Stage the tree a test reviewer runs ``command`` in (see the module docstring). Blocking.

    ``Conflict`` when ``project_root`` is not the top of a git work tree with a commit, or when
    the tree is larger than ``max_bytes``; ``InvalidArgument`` when ``patch_sha256`` is not the
    patch's SHA-256 or ``command``/``timeout_seconds`` are unusable. A patch that does not apply is
    not an error (``applied: false``).
    """
    argv = _checked_command(command)
    if isinstance(timeout_seconds, bool) or not (math.isfinite(timeout_seconds) and timeout_seconds > 0):
        raise InvalidArgument(f"timeout_seconds must be a positive number, not {timeout_seconds!r}")
    if hashlib.sha256(patch).hexdigest() != patch_sha256:
        raise InvalidArgument("patch_sha256 is not the SHA-256 of the patch bytes")
    with tempfile.TemporaryDirectory(prefix="roundtable-stage-") as scratch:
        base = Path(scratch)
        home = base / "home"
        home.mkdir()
        git = _Git(home)
        root = Path(project_root).resolve()
        commit = git.head_commit(root)
        entries, skipped = _tracked(git.ls_tree(root, commit))
        content = sum(entry.size for entry in entries)
        if content > max_bytes:
            raise Conflict(f"the tracked tree at HEAD is {content} bytes; the cap is {max_bytes}")
        blobs = git.read_blobs(root, sorted({entry.oid for entry in entries}))
        files = {e.path: (blobs[e.oid], e.mode == "100755") for e in entries}
        tree = base / "tree"
        tree.mkdir()
        _write_tree(tree, files)
        apply_error = _apply(git, tree, patch, base)
        if apply_error is None:
            files, links = _read_tree(tree)
            skipped["symlinks"] += links
        tar = _tar(files)
    if len(tar) > max_bytes:
        raise Conflict(f"the tree under review is {len(tar)} bytes as a tar; the cap is {max_bytes}")
    manifest = {
        "proposal_id": proposal_id,
        "patch_version": patch_version,
        "patch_sha256": patch_sha256,
        "command": argv,
        "timeout_seconds": timeout_seconds,
        "applied": apply_error is None,
        "apply_error": apply_error,
        "files": len(files),
        "bytes": len(tar),
        "skipped": skipped,
    }
    return StagedWorkspace(tar=tar, manifest=manifest)


def _checked_command(command: Sequence[str]) -> list[str]:
    if isinstance(command, str | bytes) or not command:
        raise InvalidArgument("command must be a non-empty list of arguments, e.g. ['pytest', '-q']")
    argv = list(command)
    if not all(isinstance(arg, str) and arg and "\x00" not in arg for arg in argv):
        raise InvalidArgument("every argument of command must be a non-empty string without NUL")
    return argv


class _Git:
    """git with a fixed argv, a timeout and an environment built from nothing (module docstring)."""

    def __init__(self, home: Path):
        self.env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "LANG": "C",
            "LC_ALL": "C",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
        }
        config = [arg for key, value in _GIT_CONFIG for arg in ("-c", f"{key}={value}")]
        self.prefix = ["git", "--no-pager", *config]

    def run(
        self, args: Sequence[str], *, cwd: Path, stdin: bytes = b"", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                [*self.prefix, *args],
                cwd=cwd,
                input=stdin,
                capture_output=True,
                timeout=_GIT_TIMEOUT_SECONDS,
                env={**self.env, **(env or {})},
                check=False,
            )
        except FileNotFoundError:
            raise Conflict(f"{_NEEDS}: git is not installed on this machine") from None
        except subprocess.TimeoutExpired:
            raise Conflict(f"git {args[0]} took longer than {_GIT_TIMEOUT_SECONDS} s in {cwd}") from None

    def head_commit(self, root: Path) -> str:
        if not root.is_dir():
            raise Conflict(f"{_NEEDS}: {root} is not a directory")
        top = self.run(["rev-parse", "--show-toplevel"], cwd=root)
        if top.returncode != 0:
            raise Conflict(f"{_NEEDS}: {root} is not in a git work tree ({_first_line(top.stderr)})")
        toplevel = Path(os.fsdecode(top.stdout.rstrip(b"\n"))).resolve()
        if toplevel != root:
            raise Conflict(f"{_NEEDS}: {root} is inside the git work tree {toplevel}, not at its top")
        head = self.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], cwd=root)
        if head.returncode != 0:
            raise Conflict(f"{_NEEDS}: the repository at {root} has no commit yet")
        return head.stdout.decode("ascii").strip()

    def ls_tree(self, root: Path, commit: str) -> list[_Entry]:
        done = self.run(["ls-tree", "-r", "-l", "-z", "--full-tree", commit], cwd=root)
        if done.returncode != 0:
            raise Conflict(f"git ls-tree failed in {root}: {_first_line(done.stderr)}")
        entries = []
        for record in done.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            mode, kind, oid, size = meta.decode("ascii").split()
            entries.append(_Entry(mode, kind, oid, 0 if size == "-" else int(size), os.fsdecode(raw_path)))
        return entries

    def read_blobs(self, root: Path, oids: list[str]) -> dict[str, bytes]:
        if not oids:
            return {}
        done = self.run(["cat-file", "--batch"], cwd=root, stdin="".join(f"{oid}\n" for oid in oids).encode())
        if done.returncode != 0:
            raise Conflict(f"git cat-file failed in {root}: {_first_line(done.stderr)}")
        out, at, blobs = done.stdout, 0, {}
        for oid in oids:
            end = out.find(b"\n", at)
            header = out[at:end].decode("ascii", "replace").split() if end >= 0 else []
            if header[:2] != [oid, "blob"] or len(header) != 3 or len(out) < end + 1 + int(header[2]):
                raise Conflict(
                    f"git cat-file could not read {oid} in {root}: {' '.join(header) or 'no answer'}"
                )
            size = int(header[2])
            blobs[oid] = out[end + 1 : end + 1 + size]
            at = end + 1 + size + 1
        return blobs


def _first_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else "no message"


def _safe_path(path: str) -> bool:
    parts = path.split("/")
    return all(part not in ("", ".", "..") and part.casefold() != ".git" for part in parts)


def _tracked(entries: list[_Entry]) -> tuple[list[_Entry], dict[str, int]]:
    """The regular files to stage, and how many tracked entries of each kind were left out."""
    skipped = {"roundtable": 0, "symlinks": 0, "submodules": 0, "unsafe": 0}
    kept = []
    for entry in entries:
        if not _safe_path(entry.path):
            skipped["unsafe"] += 1
        elif entry.path.split("/", 1)[0] == _SKIPPED_TOP:
            skipped["roundtable"] += 1
        elif entry.kind == "commit":
            skipped["submodules"] += 1
        elif entry.mode == "120000":
            skipped["symlinks"] += 1
        elif entry.kind == "blob" and entry.mode in ("100644", "100755"):
            kept.append(entry)
        else:
            skipped["unsafe"] += 1
    return kept, skipped


def _write_tree(tree: Path, files: dict[str, tuple[bytes, bool]]) -> None:
    """Write the base files into the fresh private ``tree`` (which holds no symlink)."""
    for path, (data, executable) in files.items():
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(target, 0o755 if executable else 0o644)


def _apply(git: _Git, tree: Path, patch: bytes, base: Path) -> str | None:
    """Apply ``patch`` in ``tree``; ``None`` when it applied, else why not (trimmed)."""
    try:
        parsed = parse_diff(decode_patch(patch, max_bytes=len(patch)), max_bytes=len(patch))
    except RoundtableError as exc:
        return _trim(f"the patch is refused: {exc}")
    done = git.run(
        ["apply", "--whitespace=nowarn", f"-p{parsed.strip}", "-"],
        cwd=tree,
        stdin=patch,
        env={"GIT_CEILING_DIRECTORIES": str(base)},
    )
    if done.returncode != 0:
        return _trim(done.stderr.decode("utf-8", "replace").strip() or f"git apply exited {done.returncode}")
    return None


def _trim(message: str) -> str:
    return message if len(message) <= _APPLY_ERROR_CHARS else message[: _APPLY_ERROR_CHARS - 3] + "..."


def _read_tree(tree: Path) -> tuple[dict[str, tuple[bytes, bool]], int]:
    """The regular files under ``tree`` after the patch (``.roundtable/`` left out), and how many
    symlinks or other non-regular entries were dropped."""
    files: dict[str, tuple[bytes, bool]] = {}
    dropped = 0
    for rel, info in _walk(tree, ""):
        if stat.S_ISREG(info.st_mode):
            if rel.split("/", 1)[0] != _SKIPPED_TOP:
                files[rel] = ((tree / rel).read_bytes(), bool(info.st_mode & stat.S_IXUSR))
        else:
            dropped += 1
    return files, dropped


def _walk(root: Path, prefix: str) -> Iterator[tuple[str, os.stat_result]]:
    """Every non-directory under ``root`` with its ``lstat``; symlinks are never followed."""
    for entry in sorted(os.scandir(root / prefix if prefix else root), key=lambda e: e.name):
        rel = f"{prefix}{entry.name}"
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            yield from _walk(root, rel + "/")
        else:
            yield rel, info


def _tar(files: dict[str, tuple[bytes, bool]]) -> bytes:
    """The deterministic tar of ``files`` (see the module docstring)."""
    directories = {path.rsplit("/", depth)[0] for path in files for depth in range(1, path.count("/") + 1)}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(directories | set(files)):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if name in directories:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                data, executable = files[name]
                info.size, info.mode = len(data), 0o755 if executable else 0o644
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
