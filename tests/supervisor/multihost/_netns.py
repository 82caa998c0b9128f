"""Two "hosts" on one machine: network namespaces with their own addresses, and a way to the store.

Each :class:`Host` is a network namespace (``ip netns``) joined to the root namespace by a veth pair
on its own /30: the namespace's end has ``10.213.N.2``, the root's end ``10.213.N.1``. Nothing else
is routed, so a process in a namespace reaches exactly one thing: the root-side address.

The PostgreSQL server listens on 127.0.0.1 only (``.ci/postgres.sh``), which a namespace cannot
reach. :class:`Forwarder` is a small TCP relay in the root namespace, listening on each root-side
veth address and passing bytes to the server; it records the peer address of every connection, so
a test can show that each host talked to the store from its own address. A relay needs nothing of
the server (no restart, no ``listen_addresses``), which is why it was chosen over a second server.

The Docker engine's Unix socket is a file, reachable from every network namespace.
"""

from __future__ import annotations

import contextlib
import secrets
import selectors
import socket
import subprocess
import threading
from dataclasses import dataclass, field

__all__ = ["Forwarder", "Host", "create_host", "delete_host"]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass(frozen=True)
class Host:
    """One namespace: its name, its address, and the root-side address it reaches the store on."""

    namespace: str
    link: str  # the root-side veth
    address: str
    gateway: str


def _free_subnet() -> int:
    used = subprocess.run(["ip", "-4", "-o", "addr"], check=True, capture_output=True, text=True).stdout
    for _ in range(200):
        n = 1 + secrets.randbelow(250)
        if f"10.213.{n}." not in used:
            return n
    raise RuntimeError("no free 10.213.N.0/30 subnet")


def create_host(tag: str) -> Host:
    """A namespace ``rt<tag>`` with a veth pair to the root namespace, both ends up."""
    token = secrets.token_hex(3)
    namespace, link, peer = f"rt{tag}{token}", f"rt{tag}{token}h", f"rt{tag}{token}n"
    n = _free_subnet()
    host = Host(namespace, link, f"10.213.{n}.2", f"10.213.{n}.1")
    _ip("netns", "add", namespace)
    try:
        _ip("link", "add", link, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", namespace)
        _ip("addr", "add", f"{host.gateway}/30", "dev", link)
        _ip("link", "set", link, "up")
        _ip("-n", namespace, "addr", "add", f"{host.address}/30", "dev", peer)
        _ip("-n", namespace, "link", "set", peer, "up")
        _ip("-n", namespace, "link", "set", "lo", "up")
    except BaseException:
        delete_host(host)
        raise
    return host


def delete_host(host: Host) -> None:
    """Remove the namespace (which takes its veth end, and so the pair) and the root-side link."""
    subprocess.run(["ip", "netns", "delete", host.namespace], check=False, capture_output=True)
    subprocess.run(["ip", "link", "delete", host.link], check=False, capture_output=True)


@dataclass
class Forwarder:
    """Relays TCP connections from ``listen`` addresses to ``target`` (module docstring)."""

    target: tuple[str, int]
    peers: list[str] = field(default_factory=list)
    _servers: list[socket.socket] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def listen(self, address: str) -> int:
        """Listen on ``address`` (a free port); returns the port."""
        server = socket.create_server((address, 0))
        server.settimeout(0.2)
        self._servers.append(server)
        thread = threading.Thread(target=self._accept, args=(server,), daemon=True)
        thread.start()
        self._threads.append(thread)
        return int(server.getsockname()[1])

    def _accept(self, server: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                client, peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.peers.append(peer[0])
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        pairs = {client: upstream, upstream: client}
        with selectors.DefaultSelector() as selector:
            for sock in pairs:
                selector.register(sock, selectors.EVENT_READ)
            try:
                while not self._stop.is_set():
                    for key, _ in selector.select(timeout=0.2):
                        data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                        if not data:
                            return
                        pairs[key.fileobj].sendall(data)  # type: ignore[index]
            except OSError:
                return
            finally:
                for sock in pairs:
                    with contextlib.suppress(OSError):
                        sock.close()

    def close(self) -> None:
        """Stop accepting and relaying; close every socket."""
        self._stop.set()
        for server in self._servers:
            server.close()
        for thread in self._threads:
            thread.join(timeout=5)
