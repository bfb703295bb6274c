"""The engine server's connections: uvicorn's h11 protocol with a bound on how long a request's
headers may take and on how many connections one client address holds (docs/security.md)."""

from __future__ import annotations

import json

MAX_CONNECTIONS = 64
HEADER_TIMEOUT_S = 5.0
MAX_CONNECTIONS_PER_CLIENT = 16


def guarded_protocol(*, header_timeout_s: float, per_client: int) -> type:
    """uvicorn's h11 protocol with a header timeout and a per-client connection cap (one class per
    server: the count of open connections per client address is shared by its connections)."""
    from collections import Counter

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    open_by_client: Counter[str] = Counter()

    def _refuse(transport, status: int, message: str) -> None:
        body = json.dumps(
            {"error": {"message": message, "type": "invalid_request_error", "code": status}}
        ).encode()
        phrase = {408: b"Request Timeout", 503: b"Service Unavailable"}[status]
        transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, phrase, len(body), body)
        )
        transport.close()

    class GuardedH11Protocol(H11Protocol):
        _counted = False
        _header_timer = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._client_host = self.client[0] if self.client else ""
            if open_by_client[self._client_host] >= per_client:
                _refuse(
                    transport,
                    503,
                    f"this client already holds {per_client} connections (the limit per "
                    "client); reuse one or close one",
                )
                return
            open_by_client[self._client_host] += 1
            self._counted = True
            self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            self._cancel_header_timer()
            self._header_timer = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            waiting = self.cycle is None or self.cycle.response_complete
            if waiting and not self.transport.is_closing():
                if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
                    self.transport.close()  # an idle keep-alive connection: nothing was started
                else:
                    _refuse(
                        self.transport,
                        408,
                        f"request headers not received within {header_timeout_s:g} s",
                    )

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                # a request's headers are in; its body has read_body's timeout
                self._cancel_header_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_header_timer()  # the next request's headers get the same bound

        def connection_lost(self, exc) -> None:
            self._cancel_header_timer()
            if self._counted:
                self._counted = False
                open_by_client[self._client_host] -= 1
                if open_by_client[self._client_host] <= 0:
                    del open_by_client[self._client_host]
            super().connection_lost(exc)

    return GuardedH11Protocol
