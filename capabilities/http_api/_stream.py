"""The live event stream: one poller, many subscribers, and no client can stall the others.

:class:`EventBroadcaster` runs as one background task (started by the service lifespan): it reads
new events from the log (one indexed range query per poll, whatever the number of clients) and
fans each one out to every subscriber's bounded queue with a non-blocking put. A subscriber
whose queue is full is a client that does not keep up: it is dropped (its queue is closed) and
the poller moves on. It reconnects with ``Last-Event-ID`` and catches up from the log.

:class:`EventStreamEndpoint` is the ASGI app behind ``GET /api/v1/events/stream`` (and the
console's session-authenticated ``/console/events/stream``): it sends the backlog after the
client's position from the log, then the live events, as ``text/event-stream``; it finds the
broadcaster in ``request.app.state`` (:func:`capabilities.http_api._state.api_state`). Each write to
the socket has a deadline; a client that stops reading is disconnected rather than holding a
task forever. Polls are cheap (the poller also wakes at once when this process commits a
change), and the poll interval bounds the latency of changes made by other processes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import structlog
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from capabilities.http_api._boundary import query_int, query_text
from capabilities.http_api._errors import error_response
from capabilities.http_api._state import api_state
from store import Store, parse_decimal
from store.errors import InvalidArgument, RoundtableError
from store.events import Event

__all__ = ["EventBroadcaster", "EventStreamEndpoint", "format_event"]

_log = structlog.get_logger("roundtable.stream")
_BATCH = 500
_DROPPED = Event(id=-1, type="stream.dropped", created_at="", actor="", task_id=None, proposal_id=None)


@dataclass(eq=False)
class Subscriber:
    """One connected client: its bounded queue and where live delivery starts."""

    send: MemoryObjectSendStream[Event]
    receive: MemoryObjectReceiveStream[Event]
    live_from: int
    dropped: bool = field(default=False)


class EventBroadcaster:
    """Polls the event log once for everybody and fans out to bounded per-client queues."""

    def __init__(self, store: Store, *, poll_interval: float = 0.25, queue_size: int = 256):
        self.store = store
        self.poll_interval = poll_interval
        self.queue_size = queue_size
        self.position = 0
        self.polls = 0
        self.dropped = 0
        self.stalled = 0
        self.delivered = 0
        self._subscribers: set[Subscriber] = set()
        self._wake = anyio.Event()
        self._membership = anyio.Event()
        self._closed = False

    @property
    def subscriber_count(self) -> int:
        """How many clients are connected now."""
        return len(self._subscribers)

    async def wait_for_subscribers(self, count: int) -> None:
        """Return once at least ``count`` clients are connected (for tests and shutdown)."""
        while len(self._subscribers) < count:
            await self._membership.wait()

    def _members_changed(self) -> None:
        self._membership.set()
        self._membership = anyio.Event()

    def poke(self) -> None:
        """Poll now (called after this process commits a change)."""
        self._wake.set()

    def subscribe(self) -> Subscriber:
        """Register a client; live delivery starts after the current position."""
        send, receive = anyio.create_memory_object_stream[Event](self.queue_size)
        subscriber = Subscriber(send, receive, live_from=self.position)
        if self._closed:
            send.close()  # shutting down: the stream ends at once
            return subscriber
        self._subscribers.add(subscriber)
        self._members_changed()
        self.poke()
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Forget a client (idempotent)."""
        self._subscribers.discard(subscriber)
        subscriber.send.close()
        subscriber.receive.close()
        self._members_changed()

    def close(self) -> None:
        """End every stream now and refuse new ones (server shutdown).

        uvicorn waits for open responses before it shuts the application down, and a stream never
        ends on its own; ending them here lets the shutdown be prompt and clean.
        """
        self._closed = True
        for subscriber in list(self._subscribers):
            subscriber.send.close()
        self._subscribers.clear()
        self._members_changed()

    def _fan_out(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber.send.send_nowait(event)
                self.delivered += 1
            except anyio.WouldBlock:
                # The client does not keep up: drop it rather than wait for it.
                subscriber.dropped = True
                self.dropped += 1
                self._subscribers.discard(subscriber)
                subscriber.send.close()
                _log.info("stream.client_dropped", queue_size=self.queue_size, event_id=event.id)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._subscribers.discard(subscriber)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Poll and fan out until cancelled."""
        self.position = await self.store.db.run(self.store.event_feed.last_id)
        task_status.started()
        while True:
            if self._subscribers:
                try:
                    events = await self.store.db.run(self.store.event_feed.after, self.position, limit=_BATCH)
                except RoundtableError:  # a transient store failure: try again on the next poll
                    _log.warning("stream.poll_failed", exc_info=True)
                    events = []
                self.polls += 1
                for event in events:
                    self._fan_out(event)
                    self.position = event.id
                if len(events) == _BATCH:
                    continue  # more are waiting: no pause
            with anyio.move_on_after(self.poll_interval if self._subscribers else math.inf):
                await self._wake.wait()
            self._wake = anyio.Event()


def format_event(event: Event, *, named: bool = True) -> bytes:
    """One server-sent event: ``id``, ``event`` (the type, when ``named``) and the JSON ``data``.

    Unnamed events reach a browser's ``EventSource.onmessage``; the type is in the data too.
    """
    data = json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":"))
    name = f"event: {event.type}\n" if named else ""
    return f"id: {event.id}\n{name}data: {data}\n\n".encode()


Authorize = Callable[[Request], Awaitable[None]]
_REAUTHORIZE_EVERY = 50  # events between two checks of the stream's credential


class EventStreamEndpoint:
    """ASGI app: ``text/event-stream`` of events after ``?after=`` / ``Last-Event-ID``."""

    def __init__(
        self,
        authorize: Authorize,
        *,
        write_timeout: float = 10.0,
        heartbeat: float = 15.0,
        named_events: bool = True,
    ):
        self.named_events = named_events
        self.authorize = authorize
        self.write_timeout = write_timeout
        self.heartbeat = heartbeat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one stream until the client leaves, falls behind, or the server stops."""
        request = Request(scope, receive)
        try:
            if request.method != "GET":
                raise InvalidArgument("the event stream answers GET only")
            await self.authorize(request)
            after = self._start_position(request)
            proposal_id = query_text(request, "proposal_id", limit=200) or None
            broadcaster = api_state(request).broadcaster
        except RoundtableError as exc:
            await error_response(exc)(scope, receive, send)
            return
        subscriber = broadcaster.subscribe()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_disconnect, receive, tg.cancel_scope)
                await self._stream(send, broadcaster.store, subscriber, after, proposal_id, request)
                tg.cancel_scope.cancel()
        except TimeoutError:
            # The client stopped reading: abandon the response; the server closes the socket.
            broadcaster.stalled += 1
            _log.info("stream.client_stalled", write_timeout=self.write_timeout)
        finally:
            broadcaster.unsubscribe(subscriber)

    def _start_position(self, request: Request) -> int | None:
        after = query_int(request, "after")
        header = request.headers.get("last-event-id")
        if header is not None and header.strip():
            after = parse_decimal(header.strip())
            if after is None:
                raise InvalidArgument("Last-Event-ID must be an event ID")
        if after is not None and after < 0:
            raise InvalidArgument("after must be a non-negative event ID")
        return after

    async def _watch_disconnect(self, receive: Receive, scope: anyio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                scope.cancel()
                return

    async def _next(self, subscriber: Subscriber) -> Event | None:
        """The next live event, ``None`` when a heartbeat is due, :data:`_DROPPED` at the end."""
        with anyio.move_on_after(self.heartbeat):
            try:
                return await subscriber.receive.receive()
            except anyio.EndOfStream:
                return _DROPPED
        return None

    async def _write(self, send: Send, body: bytes) -> None:
        with anyio.fail_after(self.write_timeout):
            await send({"type": "http.response.body", "body": body, "more_body": True})

    async def _still_authorized(self, request: Request) -> bool:
        """Whether the credential that opened the stream is still good (revoked, expired, logged out)."""
        try:
            await self.authorize(request)
        except RoundtableError:
            return False
        return True

    async def _stream(
        self,
        send: Send,
        store: Store,
        subscriber: Subscriber,
        after: int | None,
        proposal_id: str | None,
        request: Request,
    ) -> None:
        # Without a position the stream starts now, fixed before the headers go out, so every
        # event committed after the client sees the response reaches it (the poller may lag
        # behind the log while nobody listens, hence the read).
        sent = await store.db.run(store.event_feed.last_id) if after is None else after
        with anyio.fail_after(self.write_timeout):
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream; charset=utf-8"),
                        (b"cache-control", b"no-store"),
                        (b"x-accel-buffering", b"no"),
                        (b"x-content-type-options", b"nosniff"),
                    ],
                }
            )
        await self._write(send, b"retry: 2000\n: connected\n\n")
        # The backlog, from the log: (after, live_from]. Live events all lie beyond live_from.
        while sent < subscriber.live_from:
            page = await store.db.run(store.event_feed.after, sent, limit=_BATCH, proposal_id=proposal_id)
            page = [old for old in page if old.id <= subscriber.live_from]
            if not page:
                break
            for old in page:
                await self._write(send, format_event(old, named=self.named_events))
            sent = page[-1].id
        sent = max(sent, subscriber.live_from)
        since_check = 0
        while True:
            event = await self._next(subscriber)
            if event is _DROPPED:
                break  # dropped for falling behind: end the response; the client reconnects
            # The credential is checked again at every heartbeat and every few events, so a token
            # revoked or a session ended while the stream is open stops it.
            since_check += 1
            if event is None or since_check >= _REAUTHORIZE_EVERY:
                if not await self._still_authorized(request):
                    _log.info("stream.credential_ended")
                    break
                since_check = 0
            if event is None:
                await self._write(send, b": keepalive\n\n")
            elif event.id > sent and (proposal_id is None or event.proposal_id == proposal_id):
                await self._write(send, format_event(event, named=self.named_events))
                sent = event.id
        with anyio.fail_after(self.write_timeout):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
