"""The seed of the random operators (onnxruntime's ``set_seed``): RandomNormal, RandomUniform, Multinomial, Bernoulli
and Dropout in training mode draw from their session's generator when the node gives no ``seed`` attribute."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

__all__ = ["SessionGenerator", "seeded", "session_rng", "set_seed"]

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


class SessionGenerator:
    """A session's generator, made on its first draw: calling it returns the same ``numpy.random.Generator`` each
    time. Most models draw nothing, and ``numpy.random`` takes about 10 ms to import (issue 42, item 3: time to
    first result); the seed is the one in force when the session was made."""

    __slots__ = ("_made", "_seed")

    def __init__(self, seed: int | None) -> None:
        self._seed = seed
        self._made: np.random.Generator | None = None

    def __call__(self) -> np.random.Generator:
        if self._made is None:
            self._made = np.random.default_rng(self._seed)
        return self._made


def session_rng() -> SessionGenerator:
    """A new session's generator (made on its first draw): seeded by :func:`set_seed` when it was called, else from
    the OS's entropy."""
    return SessionGenerator(_seed)


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
