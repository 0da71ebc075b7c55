"""The one token bucket of the server's rate limits (mcp_tasks/token_buckets.py), on a clock the
test moves by hand."""

from __future__ import annotations

from mcp_tasks.token_buckets import TokenBucket, TokenBuckets


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_gives_its_burst_then_one_token_per_refill_period() -> None:
    bucket = TokenBucket(3, now=0.0)
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    assert bucket.seconds_to_next(per_second=2.0) == 0.5
    bucket.refill(now=0.5, per_second=2.0)
    assert bucket.take() and not bucket.take()


def test_a_bucket_never_holds_more_than_its_burst_however_long_it_waits() -> None:
    bucket = TokenBucket(2, now=0.0)
    bucket.refill(now=3600.0, per_second=10.0)
    assert bucket.tokens == 2.0
    bucket.give_back()
    assert bucket.tokens == 2.0


def test_the_least_recently_used_key_is_forgotten_and_starts_full_again() -> None:
    clock = Clock()
    buckets: TokenBuckets[str, TokenBucket] = TokenBuckets(
        lambda now: TokenBucket(1, now), clock, max_keys=2
    )
    assert buckets.touch("a").take() and buckets.touch("b").take()
    buckets.touch("a")  # "b" is now the least recently used
    buckets.touch("c")
    assert len(buckets) == 2 and buckets.get("b") is None
    assert not buckets.touch("a").take()
    assert buckets.touch("b").take()


def test_refilled_applies_the_rate_the_bucket_asks_for_at_the_clocks_time() -> None:
    clock = Clock()
    buckets: TokenBuckets[str, TokenBucket] = TokenBuckets(lambda now: TokenBucket(1, now), clock)
    assert buckets.refilled("a", lambda _: 1.0).take()
    clock.now = 0.25
    assert not buckets.refilled("a", lambda _: 1.0).take()
    clock.now = 1.0
    assert buckets.refilled("a", lambda _: 1.0).take()
