"""A fault-injecting fake of the Kubernetes API, served over HTTP on loopback for the real client.

It keeps Pods, Secrets and NetworkPolicies of any namespace in memory and answers the calls the
launcher makes, as the API server does: create (POST, 409 on a taken name, 422 for a document that
the pinned Kubernetes version's OpenAPI schema refuses), read, merge-patch, delete (with the garbage
collector's deletion of dependents, which a test may switch off), list by label selector, watch by
field selector (chunked JSON lines), a pod's log, and API group discovery.

Pods follow a :class:`PodScript` the test sets: the kubelet's moves (``Pending`` -> ``Running`` ->
``Succeeded``/``Failed``) happen as a watch observes them, so nothing depends on timing; a script
that never ends keeps the watch open until its ``timeoutSeconds`` or the pod's deletion.

:class:`Fault` rules inject failures into matching requests: an HTTP status (before the operation,
or after it, as a lost answer), a dropped connection, or an answer that never comes (the handler
waits until the fake stops or ``hang_seconds`` pass, so the client's own timeout fires).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes_validate

K8S_VERSION = "1.35.0"
"""The Kubernetes version whose OpenAPI schemas every document is validated against."""

_PATHS = [
    (re.compile(r"^/api/v1/namespaces/([^/]+)/(pods|secrets)(?:/([^/]+))?(/log)?$"), ""),
    (re.compile(r"^/apis/networking\.k8s\.io/v1/namespaces/([^/]+)/(networkpolicies)(?:/([^/]+))?()$"), ""),
]
_KIND = {"pods": "Pod", "secrets": "Secret", "networkpolicies": "NetworkPolicy"}


@dataclass
class Fault:
    """Answer matching requests (``method``, ``resource``, and ``log``/``watch`` for those) with ``action``.

    ``action`` is an HTTP status, ``"drop"`` (close the connection) or ``"hang"``; ``after`` applies the
    operation first (the answer is lost). ``times`` matching requests are hit."""

    method: str
    resource: str
    action: int | str
    times: int = 1
    after: bool = False
    watch: bool | None = None


@dataclass
class PodScript:
    """How the fake kubelet runs a pod: ``exit_code`` (None: it runs until deleted), its log, the
    container's termination ``reason`` (``OOMKilled``) or the pod's (``DeadlineExceeded``)."""

    exit_code: int | None = 0
    log: str = "role output\n"
    reason: str | None = None
    pod_reason: str | None = None
    starts: bool = True
    waiting: str | None = None
    """A waiting reason the container stays in instead of starting (``ImagePullBackOff``)."""


@dataclass
class FakeCluster:
    """The fake API server's state and rules; :meth:`start` serves it on 127.0.0.1."""

    script: PodScript = field(default_factory=PodScript)
    gc: bool = True
    sandbox: bool = False
    hang_seconds: float = 10.0
    faults: list[Fault] = field(default_factory=list)
    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, bool]] = field(default_factory=list)
    """Every request: method, path, whether it asked to watch."""
    created: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _stopped: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The base URL the client is configured with."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeCluster:
        """Serve in a daemon thread."""
        cluster = self

        class Handler(_Handler):
            fake = cluster

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Release hanging handlers and stop serving."""
        self._stopped.set()
        with self._lock:
            self._lock.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def names(self, resource: str) -> list[str]:
        """The names of the stored objects of ``resource`` (``pods``, ``secrets``, ``networkpolicies``)."""
        with self._lock:
            return sorted(name for (res, _ns, name) in self.objects if res == resource)

    def put(self, resource: str, document: dict[str, Any]) -> None:
        """Store an object as if someone else had created it."""
        meta = document["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        with self._lock:
            self.objects[(resource, meta.get("namespace", "default"), meta["name"])] = document
            self._lock.notify_all()

    def fault_for(self, method: str, resource: str, watch: bool) -> Fault | None:
        """The first armed fault matching a request (spent by the call)."""
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == method and fault.resource == resource:
                    if fault.watch is not None and fault.watch != watch:
                        continue
                    fault.times -= 1
                    return fault
        return None

    def delete(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Remove an object (and, with ``gc``, what it owns)."""
        with self._lock:
            gone = self.objects.pop((resource, namespace, name), None)
            if gone is not None and self.gc:
                uid = gone["metadata"].get("uid")
                for key, obj in list(self.objects.items()):
                    refs = obj["metadata"].get("ownerReferences") or []
                    if any(ref.get("uid") == uid for ref in refs):
                        del self.objects[key]
            self._lock.notify_all()
            return gone

    def advance(self, key: tuple[str, str, str]) -> bool:
        """One move of the fake kubelet for the pod at ``key``; whether anything changed."""
        with self._lock:
            pod = self.objects.get(key)
            if pod is None:
                return False
            status = pod.setdefault("status", {"phase": "Pending"})
            script = self.script
            if status["phase"] == "Pending" and script.waiting and not status.get("containerStatuses"):
                waiting = {"reason": script.waiting, "message": "injected"}
                status["containerStatuses"] = [{"name": "role", "state": {"waiting": waiting}}]
                return True
            if status["phase"] == "Pending" and script.starts and not script.waiting:
                status["phase"] = "Running"
                status["containerStatuses"] = [{"name": "role", "state": {"running": {}}}]
                return True
            if status["phase"] == "Running" and (script.exit_code is not None or script.pod_reason):
                code = script.exit_code if script.exit_code is not None else 137
                status["phase"] = "Succeeded" if code == 0 and not script.pod_reason else "Failed"
                if script.pod_reason:
                    status["reason"] = script.pod_reason
                terminated: dict[str, Any] = {"exitCode": code}
                if script.reason:
                    terminated["reason"] = script.reason
                status["containerStatuses"] = [{"name": "role", "state": {"terminated": terminated}}]
                return True
            return False


def _selected(obj: dict[str, Any], labels: str | None, fields: str | None) -> bool:
    meta = obj["metadata"]
    for term in filter(None, (labels or "").split(",")):
        key, _, value = term.partition("=")
        if (meta.get("labels") or {}).get(key) != value:
            return False
    for term in filter(None, (fields or "").split(",")):
        key, _, value = term.partition("=")
        if key == "metadata.name" and meta["name"] != value:
            return False
    return True


class _Handler(BaseHTTPRequestHandler):
    fake: FakeCluster
    protocol_version = "HTTP/1.1"

    def handle(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a watch the client stopped
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str) -> None:
        self._send(
            code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}
        )

    def _body(self) -> dict[str, Any]:
        size = int(self.headers.get("Content-Length") or 0)
        return dict(json.loads(self.rfile.read(size) or b"{}"))

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        fake.requests.append((method, parts.path, query.get("watch") == "true"))
        body = self._body() if method in ("POST", "PATCH", "DELETE") else {}
        try:
            self._route(method, parts.path, query, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (a watch it stopped)

    def _route(self, method: str, path: str, query: dict[str, str], body: dict[str, Any]) -> None:
        fake = self.fake
        if path.rstrip("/") == "/apis":
            groups = [
                {
                    "name": "networking.k8s.io",
                    "versions": [{"groupVersion": "networking.k8s.io/v1", "version": "v1"}],
                }
            ]
            if fake.sandbox:
                version = {"groupVersion": "extensions.agents.x-k8s.io/v1alpha1", "version": "v1alpha1"}
                groups.append({"name": "extensions.agents.x-k8s.io", "versions": [version]})
            self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
            return
        for pattern, _ in _PATHS:
            if match := pattern.match(path):
                namespace, resource, name, log = match.groups()
                break
        else:
            self._status(404, "NotFound")
            return
        watching = query.get("watch") == "true"
        label = "log" if log else resource
        fault = fake.fault_for(method, label, watching)
        if fault is not None and not fault.after:
            self._fail(fault)
            return
        self._operate(method, namespace, resource, name, bool(log), query, body, fault)

    def _fail(self, fault: Fault) -> None:
        if fault.action == "drop":
            self.close_connection = True
            self.connection.close()
        elif fault.action == "hang":
            self.fake._stopped.wait(self.fake.hang_seconds)
            self.close_connection = True
        else:
            self._status(int(fault.action), "Injected")

    def _operate(
        self,
        method: str,
        namespace: str,
        resource: str,
        name: str | None,
        log: bool,
        query: dict[str, str],
        body: dict[str, Any],
        fault: Fault | None,
    ) -> None:
        fake = self.fake
        key = (resource, namespace, name or "")
        if method == "POST":
            body.setdefault("metadata", {})
            key = (resource, namespace, body["metadata"].get("name", ""))
            try:
                kubernetes_validate.validate(body, K8S_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                self._send(
                    422, {"kind": "Status", "code": 422, "reason": "Invalid", "message": str(exc)[:500]}
                )
                return
            with fake._lock:
                if key in fake.objects:
                    answer: tuple[int, Any] = (409, None)
                else:
                    body["metadata"].update(uid=str(uuid.uuid4()), namespace=namespace, resourceVersion="1")
                    if resource == "pods":
                        body["status"] = {"phase": "Pending"}
                    fake.objects[key] = body
                    fake.created.append(json.loads(json.dumps(body)))
                    answer = (201, body)
        elif method == "GET" and name is None:
            if query.get("watch") == "true":
                self._watch(namespace, resource, query)
                return
            with fake._lock:
                items = [o for (r, ns, _), o in fake.objects.items() if r == resource and ns == namespace]
                items = [
                    o for o in items if _selected(o, query.get("labelSelector"), query.get("fieldSelector"))
                ]
            answer = (
                200,
                {"kind": f"{_KIND[resource]}List", "apiVersion": "v1", "metadata": {}, "items": items},
            )
        elif method == "GET" and log:
            obj = fake.objects.get(key)
            lines = fake.script.log.splitlines(keepends=True)
            window = "".join(lines[-int(query["tailLines"]) :] if "tailLines" in query else lines)
            text = window[: int(query.get("limitBytes") or 10**9)]  # the API server cuts the END off
            answer = (200, text) if obj is not None else (404, None)
        elif method == "GET":
            obj = fake.objects.get(key)
            answer = (200, obj) if obj is not None else (404, None)
        elif method == "PATCH":
            with fake._lock:
                obj = fake.objects.get(key)
                if obj is not None:
                    obj["metadata"].update(body.get("metadata") or {})
            answer = (200, obj) if obj is not None else (404, None)
        else:
            uid = (body.get("preconditions") or {}).get("uid")
            with fake._lock:
                obj = fake.objects.get(key)
                if uid is not None and obj is not None and obj["metadata"].get("uid") != uid:
                    self._status(409, "Conflict")  # a precondition the object does not meet
                    return
            gone = fake.delete(resource, namespace, name or "")
            answer = (200, {"kind": "Status", "status": "Success"}) if gone is not None else (404, None)
        if fault is not None:
            self._fail(fault)
        elif answer[1] is None:
            self._status(answer[0], "NotFound" if answer[0] == 404 else "AlreadyExists")
        else:
            self._send(*answer)

    def _watch(self, namespace: str, resource: str, query: dict[str, str]) -> None:
        fake = self.fake
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        keys = []
        with fake._lock:
            for key, obj in fake.objects.items():
                if (
                    key[0] == resource
                    and key[1] == namespace
                    and _selected(obj, None, query.get("fieldSelector"))
                ):
                    keys.append(key)
                    self._event("ADDED", obj)
        deadline = float(query.get("timeoutSeconds") or 30)
        for key in keys:
            while fake.advance(key):
                self._event("MODIFIED", fake.objects[key])
            with fake._lock:

                def gone(k: tuple[str, str, str] = key) -> bool:
                    return k not in fake.objects or fake._stopped.is_set()

                if fake._lock.wait_for(gone, deadline) and key not in fake.objects:
                    self._event("DELETED", {"metadata": {"name": key[2]}})
        self.wfile.write(b"0\r\n\r\n")

    def _event(self, kind: str, obj: dict[str, Any]) -> None:
        line = (json.dumps({"type": kind, "object": obj}) + "\n").encode()
        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        self.wfile.flush()
