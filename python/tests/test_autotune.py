import threading

import pytest

import fastinfer


def test_default_buckets_round_up():
    assert fastinfer.current_bucket(1) == 1
    assert fastinfer.current_bucket(3) == 4
    assert fastinfer.current_bucket(300) == 512


def test_scope_overrides_nest_and_restore():
    with fastinfer.autotune(buckets=[1, 16, 128]):
        assert fastinfer.current_bucket(20) == 16  # custom list: round down by default
        with fastinfer.autotune(round_up=True):
            assert fastinfer.current_bucket(20) == 128  # inherits the list, rounds up
        assert fastinfer.current_bucket(20) == 16
    assert fastinfer.current_bucket(20) == 32


def test_scope_is_per_thread():
    seen = []
    with fastinfer.autotune(buckets=[1, 16, 128]):
        t = threading.Thread(target=lambda: seen.append(fastinfer.current_bucket(20)))
        t.start()
        t.join()
    assert seen == [32]


def test_empty_bucket_list_is_an_error():
    with pytest.raises(ValueError, match="bucket"):
        with fastinfer.autotune(buckets=[]):
            pass
