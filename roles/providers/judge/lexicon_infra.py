"""The infrastructure part of the concept table: containers, Kubernetes, Terraform and images.

See :mod:`roles.providers.judge.lexicon` for the format; :data:`INFRA_CONCEPTS` joins its table.
"""

from __future__ import annotations

from roles.providers.judge.concepts import Concept, cue, pattern
from roles.providers.judge.detectors import dockerfile_without_user

__all__ = ["INFRA_CONCEPTS"]


INFRA_CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "run_as_root",
        cue(r"\b(root|non-root|nonroot|unprivileged|runasnonroot|uid 0)\b"),
        (
            pattern(
                r"^\s*USER\s+(root|0)(:\S*)?\s*$",
                "docker",
                "switches the container user to root",
                strength=0.9,
            ),
            pattern(
                r"\brunAsUser\s*:\s*0\b|\brunAsNonRoot\s*:\s*false\b|\brunAsGroup\s*:\s*0\b",
                "yaml",
                "runs the pod as root",
                strength=0.9,
            ),
            pattern(
                r"\buser\s*:\s*[\"']?(root|0)(:0)?[\"']?\s*$",
                "yaml",
                "runs the service as root",
                strength=0.8,
            ),
        ),
        anti_cue=cue(r"\broot (file ?system|fs|volume)\b|\brootfs\b|root ca\b"),
        detector=dockerfile_without_user,
        detector_what="adds a Dockerfile whose final stage never drops root (no USER)",
        detector_strength=0.7,
    ),
    Concept(
        "privileged",
        cue(
            r"\b(privileged|privilege escalation|host(network|pid|ipc|path)|host (network|namespaces?)|"
            r"(node|host)('s)? (network|pid|ipc|namespaces?|file ?system)|"
            r"capabilities|sys_admin)\b"
        ),
        (
            pattern(
                r"\bprivileged\s*:\s*true\b|--privileged\b",
                "yaml docker shell ci",
                "runs a privileged container",
                strength=0.9,
            ),
            pattern(
                r"\ballowPrivilegeEscalation\s*:\s*true\b",
                "yaml",
                "allows privilege escalation",
                strength=0.9,
            ),
            pattern(
                r"\bhost(Network|PID|IPC)\s*:\s*true\b|^\s*hostPath\s*:",
                "yaml",
                "shares the host's namespaces or filesystem",
                strength=0.85,
            ),
            pattern(
                r"\b(SYS_ADMIN|NET_ADMIN|ALL)\b",
                "yaml",
                "adds Linux capabilities",
                strength=0.8,
                unless_near=r"\bdrop\s*:",
                also=r"^\s*-\s*[\"']?\w+[\"']?\s*$|add\s*:",
            ),
        ),
    ),
    Concept(
        "mutable_image",
        cue(
            r"\b(latest|pinned|pin|pins|immutable|digests?|explicit versions?|version tags?|reproducib\w*|"
            r"floating tags?)\b"
        ),
        (
            pattern(
                r"^\s*FROM\s+(--platform=\S+\s+)?[\w./:-]+:latest\b",
                "docker",
                "builds FROM a :latest tag",
                strength=0.9,
            ),
            pattern(
                r"^\s*-?\s*image\s*:\s*[\"']?[\w./-]+:latest[\"']?\s*$",
                "yaml",
                "deploys a :latest image",
                strength=0.9,
            ),
            pattern(
                r"^\s*-?\s*image\s*:\s*[\"']?[\w.-]+(/[\w.-]+)*[\"']?\s*$",
                "yaml",
                "deploys an image with no tag",
                strength=0.7,
            ),
            pattern(
                r"\bimage\s*=\s*\"[\w./-]+:latest\"", "terraform", "deploys a :latest image", strength=0.85
            ),
        ),
        anti_cue=cue(r"\bactions?\b|\bsha\b"),
    ),
    Concept(
        "unpinned_action",
        cue(r"\b(actions?|workflows?|uses)\b.*\b(pin\w*|sha|commit|digest)\b|\bpin\w*\b.*\bactions?\b"),
        (
            pattern(
                r"^\s*-?\s*uses\s*:\s*(?!\./|docker://)([\w.-]+/[\w./-]+)@(?![0-9a-f]{40}\b)[\w.-]+",
                "ci",
                "uses an action by a movable tag or branch",
                strength=0.85,
            ),
        ),
        exemptions=((cue(r"third[- ]party"), cue(r"uses\s*:\s*(actions|github)/")),),
    ),
    Concept(
        "public_bucket",
        cue(r"\b(public|publicly|world-readable|anonymous|public-read|allusers)\b"),
        (
            pattern(
                r"\bacl\s*=\s*\"(public-read|public-read-write|authenticated-read)\"",
                "terraform",
                "makes a bucket public",
                strength=0.9,
            ),
            pattern(
                r"\b(block_public_acls|block_public_policy|ignore_public_acls"
                r"|restrict_public_buckets)\s*=\s*false",
                "terraform",
                "lifts a public-access block",
                strength=0.85,
            ),
            pattern(
                r"\b(publicly_accessible|associate_public_ip_address|map_public_ip_on_launch)\s*=\s*true\b|"
                r"\"?Principal\"?\s*[:=]\s*\"\*\"|\ballUsers\b|\ballAuthenticatedUsers\b",
                "terraform config",
                "grants access to everyone",
                strength=0.85,
            ),
        ),
    ),
    Concept(
        "open_ingress",
        cue(
            r"\b(internet|0\.0\.0\.0|world|anywhere|inside the vpc|ingress|firewall|"
            r"security groups?|publicly reachable|exposed)\b|\bare private\b"
        ),
        (
            pattern(
                r"[\"']0\.0\.0\.0/0[\"']|[\"']::/0[\"']",
                "terraform yaml",
                "opens access to the whole internet",
                strength=0.85,
                unless_near=r"\begress\b",
            ),
            pattern(
                r"\b(publicly_accessible|associate_public_ip_address|map_public_ip_on_launch)\s*=\s*true\b",
                "terraform",
                "puts the resource on a public address",
                strength=0.85,
            ),
            pattern(
                r"^\s*type\s*:\s*(LoadBalancer|NodePort)\s*$|^\s*hostPort\s*:",
                "yaml",
                "exposes the service outside the cluster",
                strength=0.7,
            ),
        ),
    ),
    Concept(
        "deletion_protection",
        cue(
            r"deletion[- ]protect\w*|prevent_destroy|final snapshots?|"
            r"accidental(ly)? (deletion|destroy)|backups?"
        ),
        (
            pattern(
                r"\bdeletion_protection\s*=\s*false\b|\bskip_final_snapshot\s*=\s*true\b|"
                r"\bprevent_destroy\s*=\s*false\b|\bbackup_retention_period\s*=\s*0\b|"
                r"\bforce_destroy\s*=\s*true\b",
                "terraform",
                "lets the resource be destroyed without protection",
                strength=0.85,
            ),
        ),
    ),
    Concept(
        "encryption_off",
        cue(r"\bencrypt\w*|at rest\b|\bkms\b"),
        (
            pattern(
                r"\b(storage_encrypted|encrypted|encryption|encrypt|enable_encryption|sse_enabled)\s*[:=]\s*"
                r"[\"']?(false|disabled|none)\b",
                "terraform yaml config",
                "turns encryption off",
                strength=0.9,
            ),
        ),
    ),
    Concept(
        "remote_script",
        cue(
            r"\b(curl|wget|download\w*|remote|fetched)\b.*\b(scripts?|shell|pipe|execut\w*|bash)\b|"
            r"\bpipe\w*\b.*\b(shell|sh|bash)\b|install scripts?"
        ),
        (
            pattern(
                r"\b(curl|wget)\b[^|#]*\|\s*(sudo\s+)?(ba|z|k)?sh\b|\b(ba)?sh\s+<\(\s*(curl|wget)",
                "any",
                "pipes a downloaded script into a shell",
                strength=0.9,
            ),
            pattern(r"^\s*ADD\s+https?://", "docker", "adds a remote file at build time", strength=0.7),
        ),
    ),
)
