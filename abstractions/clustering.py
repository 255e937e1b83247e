"""Earth mover's distance k-means (k-medians in CDF space) with k-means++ seeding,
and equity-percentile buckets.

Glossary: N points, D histogram bins, K clusters.

On one line of equal-width bins the earth mover's distance (Wasserstein-1) is
bin_width * sum_k |CDF_p(k) - CDF_q(k)|, an L1 distance between CDFs. The centre
that minimises the summed distance of a cluster is therefore the coordinate-wise
(weighted) median of its members' CDFs, itself a valid CDF; with that update
and nearest-centre assignment, neither step can increase the objective.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


def emd(p: jax.Array, q: jax.Array) -> jax.Array:
  """Earth mover's distance between histograms p, q [..., D] on the same bins over [0, 1].

  Histograms are normalised to sum to one; the result [...] is in units of the
  [0, 1] axis (bin width 1 / D).
  """
  p = p / jnp.sum(p, axis=-1, keepdims=True)
  q = q / jnp.sum(q, axis=-1, keepdims=True)
  return jnp.sum(jnp.abs(jnp.cumsum(p, axis=-1) - jnp.cumsum(q, axis=-1)), axis=-1) / p.shape[-1]


def cdf(histograms: jax.Array) -> jax.Array:
  """CDFs [..., D] of histograms [..., D] (normalised to sum to one), float32."""
  histograms = jnp.asarray(histograms, jnp.float32)
  return jnp.cumsum(histograms, axis=-1) / jnp.sum(histograms, axis=-1, keepdims=True)


def cdf_distances(cdfs: jax.Array, centres: jax.Array) -> jax.Array:
  """EMD [N, K] between points and centres given as CDFs [N, D] and [K, D]."""
  return jnp.mean(jnp.abs(cdfs[:, None, :] - centres[None, :, :]), axis=-1)


class KMeansResult(NamedTuple):
  centres: jax.Array  # [K, D] CDFs
  assignment: jax.Array  # [N] int32
  objectives: jax.Array  # [iterations + 1] weighted mean EMD after seeding and each iteration


def kmeans_plus_plus(key: jax.Array, cdfs: jax.Array, k: int, weights: jax.Array | None = None) -> jax.Array:
  """k-means++ seeding: K centres [K, D] drawn from the points, each with probability
  proportional to weight * (EMD to the nearest centre so far)^2. Consumes `key`."""
  n = cdfs.shape[0]
  weights = jnp.ones(n, cdfs.dtype) if weights is None else jnp.asarray(weights, cdfs.dtype)
  keys = jax.random.split(key, k)
  first = jax.random.choice(keys[0], n, p=weights / jnp.sum(weights))
  centres = jnp.zeros((k, cdfs.shape[1]), cdfs.dtype).at[0].set(cdfs[first])
  nearest = jnp.mean(jnp.abs(cdfs - cdfs[first]), axis=-1)  # [N]

  def step(i, carry):
    centres, nearest = carry
    score = weights * nearest**2
    total = jnp.sum(score)
    # All points coincide with centres: fall back to weights alone.
    p = jnp.where(total > 0, score / jnp.where(total > 0, total, 1), weights / jnp.sum(weights))
    chosen = jax.random.choice(keys[i], n, p=p)
    centres = centres.at[i].set(cdfs[chosen])
    nearest = jnp.minimum(nearest, jnp.mean(jnp.abs(cdfs - cdfs[chosen]), axis=-1))
    return centres, nearest

  return jax.lax.fori_loop(1, k, step, (centres, nearest))[0]


def assign(cdfs: jax.Array, centres: jax.Array, chunk: int = 4096) -> tuple[jax.Array, jax.Array]:
  """Nearest centre int32 [N] and its EMD float [N] for points [N, D], in chunks of rows."""
  n = cdfs.shape[0]
  pad = (-n) % chunk
  padded = jnp.pad(cdfs, ((0, pad), (0, 0))).reshape(-1, chunk, cdfs.shape[1])

  def one(block):
    distances = cdf_distances(block, centres)
    return jnp.argmin(distances, axis=-1).astype(jnp.int32), jnp.min(distances, axis=-1)

  labels, distances = jax.lax.map(one, padded)
  return labels.reshape(-1)[:n], distances.reshape(-1)[:n]


def _weighted_medians(cdfs: jax.Array, weights: jax.Array, labels: jax.Array, old: jax.Array) -> jax.Array:
  """Per cluster the coordinate-wise weighted median of its members' CDFs [K, D]; empty ones keep `old`."""
  k = old.shape[0]
  totals = jax.ops.segment_sum(weights, labels, num_segments=k)  # [K]

  def column(values, previous):  # [N], [K] -> [K]
    order = jnp.lexsort((values, labels))
    sorted_labels, sorted_values, sorted_weights = labels[order], values[order], weights[order]
    start = jnp.cumsum(totals) - totals  # [K] weight of all earlier clusters
    within = jnp.cumsum(sorted_weights) - start[sorted_labels]  # running weight inside the cluster
    reached = within >= 0.5 * totals[sorted_labels]
    position = jnp.where(reached, jnp.arange(values.shape[0]), values.shape[0])
    first = jax.ops.segment_min(position, sorted_labels, num_segments=k)
    median = sorted_values[jnp.minimum(first, values.shape[0] - 1)]
    return jnp.where(totals > 0, median, previous)

  return jax.vmap(column, in_axes=(1, 1), out_axes=1)(cdfs, old)


def kmeans(
  key: jax.Array, histograms: jax.Array, k: int, iterations: int = 20, weights: jax.Array | None = None
) -> KMeansResult:
  """EMD k-means of histograms [N, D] into K clusters, seeded by k-means++ from `key`.

  Lloyd iterations alternate nearest-centre assignment and the weighted-median
  update; the weighted mean EMD to the assigned centre never increases.
  """
  cdfs = cdf(histograms)
  n = cdfs.shape[0]
  weights = jnp.ones(n, jnp.float32) if weights is None else jnp.asarray(weights, jnp.float32)
  centres = kmeans_plus_plus(key, cdfs, k, weights)
  labels, distances = assign(cdfs, centres)
  objective = lambda d: jnp.sum(weights * d) / jnp.sum(weights)
  seeded = objective(distances)

  def step(carry, _):
    centres, labels, _ = carry
    centres = _weighted_medians(cdfs, weights, labels, centres)
    labels, distances = assign(cdfs, centres)
    return (centres, labels, distances), objective(distances)

  (centres, labels, distances), history = jax.lax.scan(
    step, (centres, labels, distances), None, length=iterations
  )
  objectives = jnp.concatenate([seeded[None], history])
  return KMeansResult(centres, labels, objectives)


def percentile_thresholds(values: np.ndarray, weights: np.ndarray | None, k: int) -> np.ndarray:
  """K - 1 nondecreasing thresholds [K - 1] splitting values into K buckets of about equal (weighted)
  mass; bucket b holds the values v with thresholds[b - 1] < v <= thresholds[b] (`percentile_buckets`).

  Works on the sorted distinct values (those of positive weight) with their summed
  weights, so ties never straddle a bucket boundary: each distinct value goes to the
  bucket at the middle of its share of the cumulative weight. When that leaves a
  bucket empty (a heavy tie spans more than one bucket's mass) and there are at least
  K distinct values, the boundaries are moved so that every bucket receives at least
  one distinct value, keeping the order (a higher value never gets a lower bucket).
  With fewer than K distinct values the top buckets stay empty. Deterministic.
  """
  values = np.asarray(values, np.float64).ravel()
  weights = np.ones_like(values) if weights is None else np.asarray(weights, np.float64).ravel()
  if k <= 1:
    return np.zeros(0, np.float64)
  distinct, inverse = np.unique(values, return_inverse=True)
  mass = np.bincount(inverse.ravel(), weights=weights, minlength=len(distinct))
  if (mass > 0).any():
    distinct, mass = distinct[mass > 0], mass[mass > 0]
  else:
    mass = np.ones_like(distinct)
  buckets = distinct_buckets(mass, k)
  # The largest value of each bucket; a bucket left empty repeats the previous threshold.
  last = np.searchsorted(buckets, np.arange(k - 1), side='right') - 1  # [K - 1] index of the last member
  return distinct[np.maximum(last, 0)]


def distinct_buckets(mass: np.ndarray, k: int) -> np.ndarray:
  """Buckets int64 [M] of M sorted distinct values with masses [M] (all positive): nondecreasing,
  in steps of at most one, from 0, covering all K buckets when M >= K (else 0..M - 1)."""
  mass = np.asarray(mass, np.float64)
  m = len(mass)
  cumulative = np.cumsum(mass)
  middle = (cumulative - 0.5 * mass) / cumulative[-1]
  buckets = np.minimum(np.floor(middle * k), k - 1).astype(np.int64)
  # Feasible range of a surjective map with steps <= 1: at most i, and k - 1 still reachable.
  position = np.arange(m)
  buckets = np.clip(buckets, np.maximum(0, k - m + position), np.minimum(position, k - 1))
  # Steps of at most one, b_i = min(b_i, b_{i-1} + 1): an empty bucket takes the next distinct
  # values. In terms of b_i - i that is a running minimum; the bounds above keep the last at k - 1.
  return np.minimum.accumulate(buckets - position) + position


def percentile_buckets(values: jax.Array, thresholds: jax.Array) -> jax.Array:
  """Bucket int32 [...] of values [...]: how many thresholds lie strictly below each value."""
  return jnp.searchsorted(jnp.asarray(thresholds), values, side='left').astype(jnp.int32)
