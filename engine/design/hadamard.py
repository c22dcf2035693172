"""Two-level orthogonal arrays: Plackett–Burman matrices from Hadamard constructions.

A Plackett–Burman design for N runs is a normalised Hadamard matrix of order N (H'H = N·I, first
column all +1) without its first column: N−1 columns, each balanced (N/2 runs at +1) and every pair
orthogonal. Orders built here: Plackett and Burman's cyclic designs when N−1 is prime (Paley I; for
N = 12 this is exactly the ``+ + − + + + − − − + −`` generator of the paper and of R's fixture),
Paley II when N/2−1 is a prime ≡ 1 (mod 4), Sylvester doubling, and Kronecker products of these:
every multiple of 4 up to 200 except 52, 92, 100, 116, 156, 172, 184 and 188 (screening then
uses the next order that exists).
"""

from __future__ import annotations

import numpy as np


def _is_prime(q: int) -> bool:
    return q >= 2 and all(q % d for d in range(2, int(q**0.5) + 1))


def _chi(q: int) -> np.ndarray:
    """Quadratic character modulo the prime q: χ(0) = 0, +1 on squares, −1 otherwise."""
    squares = {(i * i) % q for i in range(1, q)}
    return np.array([0] + [1 if i in squares else -1 for i in range(1, q)], dtype=np.int64)


def cyclic_pb(runs: int) -> np.ndarray:
    """Plackett–Burman's cyclic design (runs−1 prime): rows are cyclic shifts of the generator
    (+1, χ(1), …, χ(q−1)), plus a final row of −1. Returns runs × (runs−1)."""
    q = runs - 1
    generator = _chi(q)
    generator[0] = 1
    shifts = (np.arange(q)[None, :] - np.arange(q)[:, None]) % q
    return np.vstack([generator[shifts], -np.ones((1, q), dtype=np.int64)])


def _paley2(q: int) -> np.ndarray:
    chi = _chi(q)
    Q = chi[(np.arange(q)[None, :] - np.arange(q)[:, None]) % q]
    C = np.zeros((q + 1, q + 1), dtype=np.int64)
    C[0, 1:] = 1
    C[1:, 0] = 1
    C[1:, 1:] = Q
    return np.kron(C, np.array([[1, 1], [1, -1]])) + np.kron(np.eye(q + 1, dtype=np.int64), np.array([[1, -1], [-1, -1]]))


def hadamard(order: int) -> np.ndarray | None:
    """A Hadamard matrix of ``order`` with first column all +1, or None if no construction here."""
    if order in (1, 2):
        base = np.array([[1]], dtype=np.int64)
        return base if order == 1 else np.kron(np.array([[1, 1], [1, -1]]), base)
    if order % 4:
        return None
    if _is_prime(order - 1):
        H = np.hstack([np.ones((order, 1), dtype=np.int64), cyclic_pb(order)])
    elif _is_prime(order // 2 - 1) and (order // 2 - 1) % 4 == 1:
        H = _paley2(order // 2 - 1)
    else:
        half = hadamard(order // 2)
        if half is None:
            return None
        H = np.kron(np.array([[1, 1], [1, -1]]), half)
    signed: np.ndarray = H * H[:, :1]
    return signed  # rows times the sign of their first entry: first column all +1


def plackett_burman_matrix(runs: int) -> np.ndarray | None:
    """runs × (runs−1) matrix of ±1, balanced and orthogonal columns; None if not constructible."""
    if runs >= 4 and runs % 4 == 0 and _is_prime(runs - 1):
        return cyclic_pb(runs)
    H = hadamard(runs)
    return None if H is None or runs < 4 else H[:, 1:]
