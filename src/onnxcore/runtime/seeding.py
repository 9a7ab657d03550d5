"""The seed of the random operators (onnxruntime's ``set_seed``): RandomNormal, RandomUniform, Multinomial, Bernoulli
and Dropout in training mode draw from their session's generator when the node gives no ``seed`` attribute."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

__all__ = ["seeded", "session_rng", "set_seed"]

_seed: int | None = None


def set_seed(seed: int) -> None:
    """Seed the random operators of the sessions made from now on: each starts its generator from ``seed``, so two
    sessions of one model made after the same ``set_seed`` draw the same numbers (onnxruntime's ``set_seed``).

    Args:
        seed: A non-negative integer.

    Raises:
        TypeError: ``seed`` is not an integer.
        ValueError: ``seed`` is negative.
    """
    global _seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"set_seed: the seed must be an integer, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"set_seed: the seed must be 0 or more, got {seed}")
    _seed = int(seed)


def session_rng() -> Callable[[], np.random.Generator]:
    """A new session's generator, made on its first draw: a function returning the same ``numpy.random.Generator``
    each time, seeded by :func:`set_seed` (as in force now, when the session is made) when it was called, else from
    the OS's entropy. Most models draw nothing, and ``numpy.random`` takes about 10 ms to import (issue 42, item 3:
    time to first result)."""
    return functools.cache(functools.partial(_generator, _seed))


def _generator(seed: int | None) -> np.random.Generator:
    # np.random is read here, at the first draw: reading it imports numpy.random.
    return np.random.default_rng(seed)


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Sessions made within draw from generators seeded with ``seed`` (two sessions of one model draw the same
    numbers: how ``onnxcore.optimize`` compares a model with random operators to its result); the seed in force
    before is restored after."""
    global _seed
    old = _seed
    set_seed(seed)
    try:
        yield
    finally:
        _seed = old
