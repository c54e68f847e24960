"""The HTTP API's rate limit per token (issue 28): a token bucket per principal.

Each principal (``token:NAME``, or ``anonymous`` in ``--no-auth`` mode) has a bucket of
``burst`` requests that refills at ``rate_per_s`` requests per second; a request takes
one, and finding the bucket empty answers 429 with ``Retry-After`` (whole seconds until
one request is available again, at least 1; RFC 9110 §10.2.3). The buckets live in the
server's memory (they start full at each start; several servers behind one name limit
each its own share).
"""

from __future__ import annotations

import math
import threading
import time


class RateLimiter:
    """Token buckets by key.

    Args:
        rate_per_s: requests per second a key may sustain (> 0).
        burst: requests a key may make at once after a quiet spell (>= 1).
        clock: ``() -> seconds`` (monotonic; for tests).

    Raises:
        ValueError: a rate or burst out of range.
    """

    def __init__(self, rate_per_s: float, burst: int, clock=time.monotonic) -> None:
        if not rate_per_s > 0 or burst < 1:
            raise ValueError(f"a rate limit needs rate > 0 and burst >= 1, got {rate_per_s}, {burst}")
        self.rate, self.burst, self._clock = float(rate_per_s), int(burst), clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Take one request from ``key``'s bucket: 0.0 if granted, else the seconds
        until one is available (the request is refused and takes nothing)."""
        now = self._clock()
        with self._lock:
            tokens, at = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    @staticmethod
    def retry_after(wait_s: float) -> str:
        """The ``Retry-After`` value of a wait: whole seconds, at least 1."""
        return str(max(1, math.ceil(wait_s)))


__all__ = ["RateLimiter"]
