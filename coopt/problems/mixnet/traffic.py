"""Expert all-to-all traffic matrices: the seeded families the generators and benchmarks draw from.

Every function returns an ``R x R`` numpy array of bytes, row ``i`` the sender, with a zero
diagonal (a server's traffic to its own experts stays on NVLink). The families:

* ``uniform``: every pair draws ``U(0.5, 1.5)`` times the mean; the near-uniform case where a
  circuit per pair is about right.
* ``zipf``: each sender ranks the destinations in its own random order and sends to rank ``r``
  in proportion to ``r^-s``. This is the shape of the authors' measured matrices
  (Gabriel-Yoon/mixnet-htsim ``test/wm_ep*.txt``: every row is a permutation of one popularity
  vector; ``wm_ep32_skew1p2`` and ``skew2p0`` are sharper versions).
* ``pareto``: i.i.d. Pareto(shape) pair volumes, heavy-tailed (the research notes' 1.2): a few hot
  pairs want several circuits each, which the authors' damped greedy rarely grants.
* ``mixtral``: top-k gating over ``E`` experts placed ``E / R`` per server. A gate popularity
  vector (Zipf over a random expert order, drifting per layer) routes each server's tokens; the
  pair volume is tokens x k-choices landing on the destination's experts x bytes per token.

``hidden x 2`` bytes per token (bf16 activations) is the dispatch payload; the combine all-to-all
sends the same bytes back (the transpose).
"""

from __future__ import annotations

import numpy as np

FAMILIES = ("uniform", "zipf", "pareto", "mixtral")


def _zero_diagonal(matrix: np.ndarray) -> np.ndarray:
    out = np.array(matrix, dtype=float)
    np.fill_diagonal(out, 0.0)
    return out


def uniform(rng: np.random.Generator, servers: int, mean_bytes: float) -> np.ndarray:
    """Pair volumes ``U(0.5, 1.5) * mean_bytes``."""
    return _zero_diagonal(rng.uniform(0.5, 1.5, (servers, servers)) * mean_bytes)


def zipf(rng: np.random.Generator, servers: int, row_bytes: float, exponent: float = 1.2) -> np.ndarray:
    """Each row sends ``row_bytes`` in all (its own share included, then dropped), split over the
    destinations in a random order with weights ``rank^-exponent``."""
    weights = np.arange(1, servers + 1, dtype=float) ** -exponent
    weights /= weights.sum()
    out = np.empty((servers, servers))
    for i in range(servers):
        out[i] = weights[rng.permutation(servers)] * row_bytes
    return _zero_diagonal(out)


def pareto(rng: np.random.Generator, servers: int, scale_bytes: float, shape: float = 1.2) -> np.ndarray:
    """Pair volumes ``scale_bytes * (1 + Pareto(shape))`` (Lomax draws plus one: minimum
    ``scale_bytes``, tail index ``shape``)."""
    return _zero_diagonal((1.0 + rng.pareto(shape, (servers, servers))) * scale_bytes)


def gate_popularity(rng: np.random.Generator, experts: int, exponent: float) -> np.ndarray:
    """Probabilities over experts: Zipf(``exponent``) over a random order of the experts."""
    weights = np.arange(1, experts + 1, dtype=float) ** -exponent
    weights = weights[rng.permutation(experts)]
    return weights / weights.sum()


def mixtral(
    rng: np.random.Generator,
    servers: int,
    *,
    experts: int,
    top_k: int,
    tokens: int,
    bytes_per_token: float,
    popularity: np.ndarray | None = None,
    exponent: float = 1.0,
) -> np.ndarray:
    """Top-k routing of ``tokens`` tokens per server over ``experts`` experts, ``experts / servers``
    consecutive experts per server. Each token picks ``top_k`` distinct experts with probability
    proportional to ``popularity`` (drawn with :func:`gate_popularity` when not given) times a
    per-server bias (a server's tokens prefer some experts, as measured routers do). The pair
    volume counts the choices that land on the destination's experts."""
    if experts % servers:
        raise ValueError(f"{experts} experts do not split evenly over {servers} servers")
    if not 1 <= top_k <= experts:
        raise ValueError(f"top_k must be in 1..{experts}, got {top_k}")
    base = gate_popularity(rng, experts, exponent) if popularity is None else np.asarray(popularity, float)
    per_server = experts // servers
    out = np.zeros((servers, servers))
    for i in range(servers):
        bias = base * rng.gamma(4.0, 0.25, experts)
        bias /= bias.sum()
        chosen = _top_k_counts(rng, bias, top_k, tokens)
        out[i] = chosen.reshape(servers, per_server).sum(axis=1) * bytes_per_token
    return _zero_diagonal(out)


def _top_k_counts(rng: np.random.Generator, probabilities: np.ndarray, top_k: int, tokens: int) -> np.ndarray:
    """How often each expert is among a token's ``top_k`` distinct picks, over ``tokens`` tokens
    (Gumbel top-k: the ``top_k`` largest of ``log p + Gumbel`` are a draw without replacement)."""
    keys = np.log(probabilities)[None, :] + rng.gumbel(size=(tokens, probabilities.size))
    picks = np.argpartition(-keys, top_k - 1, axis=1)[:, :top_k]
    return np.bincount(picks.ravel(), minlength=probabilities.size).astype(float)


def draw(rng: np.random.Generator, family: str, servers: int, row_bytes: float) -> np.ndarray:
    """One matrix of ``family`` whose average row sends about ``row_bytes``."""
    if family == "uniform":
        return uniform(rng, servers, row_bytes / max(servers - 1, 1))
    if family == "zipf":
        return zipf(rng, servers, row_bytes * servers / max(servers - 1, 1))
    if family == "pareto":
        # the Lomax mean is 1 / (shape - 1) = 5 at shape 1.2, so a pair averages 6 scales
        return pareto(rng, servers, row_bytes / (6.0 * max(servers - 1, 1)))
    if family == "mixtral":
        experts = servers * max(1, 8 // servers) if servers < 8 else servers
        tokens = 512
        return mixtral(rng, servers, experts=experts, top_k=2, tokens=tokens,
                       bytes_per_token=row_bytes / (2 * tokens))
    raise ValueError(f"unknown traffic family {family!r}; one of {FAMILIES}")
