"""Hold'em abstraction benchmarks, side by side in one run.

1. Hand evaluations per second: `abstractions.hand_rank` (batched, jitted, after a
   warm-up, median of repeats) against phevaluator's public `evaluate_cards`, its
   C function `evaluate_7cards` called from Python (`phevaluator._pheval`), and
   eval7, on the same random 7-card hands; disagreements are counted.
2. Table build times per street for the small profile (budget: 120 s on 2 CPU cores;
   its sampling, per `cli.PROFILE_SETTINGS`, is stated in the tables' metadata) and,
   with --default, the default 169-200-200-200 profile (a far longer build).

    python experiments/bench_abstractions.py [--hands 1000000] [--default] [--skip-build]

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import jax
import numpy as np

import abstractions
from abstractions import tables
from jaxcfr.cli import abstract as cli


def rate(function, count: int, repeats: int) -> float:
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    function()
    times.append(time.perf_counter() - start)
  return count / statistics.median(times)


def evaluators(hands_count: int, repeats: int) -> list[tuple[str, float, int]]:
  rng = np.random.default_rng(0)
  hands = np.argsort(rng.random((hands_count, 52)), axis=1)[:, :7].astype(np.int32)
  rows = []
  ranked = jax.jit(abstractions.hand_rank)
  device_hands = jax.device_put(hands)
  ranked(device_hands).block_until_ready()
  ours = np.asarray(ranked(device_hands))
  rows.append(
    (
      'abstractions.hand_rank (JAX, batched)',
      rate(lambda: ranked(device_hands).block_until_ready(), len(hands), repeats),
      0,
    )
  )
  listed = hands.tolist()
  sample = listed[: min(len(listed), 1_000_000)]
  try:
    from phevaluator import _pheval, evaluate_cards  # noqa: PLC0415

    theirs = np.array(list(itertools.starmap(evaluate_cards, sample)))
    rows.append(
      (
        'phevaluator.evaluate_cards (per hand)',
        rate(lambda: list(itertools.starmap(evaluate_cards, sample)), len(sample), max(1, repeats // 2)),
        int(np.sum(ours[: len(sample)] != 7462 - theirs)),
      )
    )
    seven = _pheval.evaluate_7cards
    theirs = np.array(list(itertools.starmap(seven, sample)))
    rows.append(
      (
        'phevaluator C evaluate_7cards (per hand)',
        rate(lambda: list(itertools.starmap(seven, sample)), len(sample), repeats),
        int(np.sum(ours[: len(sample)] != 7462 - theirs)),
      )
    )
  except ImportError:
    rows.append(('phevaluator (not installed)', float('nan'), -1))
  try:
    import eval7  # noqa: PLC0415

    deck = [eval7.Card(r + s) for r in '23456789TJQKA' for s in 'cdhs']
    cards = [[deck[c] for c in hand] for hand in sample]
    theirs = np.array([eval7.evaluate(hand) for hand in cards])
    # eval7: higher is stronger on its own scale. Agreement: sorted by ours, eval7's values
    # never decrease, and ties are ties in both.
    order = np.argsort(ours[: len(sample)], kind='stable')
    a, b = np.diff(ours[: len(sample)][order]), np.diff(theirs[order])
    eval7_disagreements = int(np.sum(b < 0) + np.sum((a == 0) != (b == 0)))
    rows.append(
      (
        'eval7.evaluate (per hand)',
        rate(lambda: [eval7.evaluate(hand) for hand in cards], len(sample), max(1, repeats // 2)),
        eval7_disagreements,
      )
    )
  except ImportError:
    rows.append(('eval7 (not installed)', float('nan'), -1))
  return rows


def build(profile: str) -> dict:
  settings = tables.BuildSettings(buckets=tables.PROFILES[profile], **cli.PROFILE_SETTINGS[profile])
  _, metadata = tables.build_tables(settings, quiet=True)
  return metadata['seconds']


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--hands', type=int, default=1_000_000)
  parser.add_argument('--repeats', type=int, default=5)
  parser.add_argument('--default', action='store_true', help='also build the default profile')
  parser.add_argument('--skip-build', action='store_true')
  args = parser.parse_args()

  print(f'jax {jax.__version__}, backend {jax.default_backend()}, {jax.device_count()} device(s)\n')
  rows = evaluators(args.hands, args.repeats)
  ours = rows[0][1]
  print('| 7-card evaluator | evaluations / s | ours is x faster | disagreements |')
  print('| --- | ---: | ---: | ---: |')
  for name, speed, disagreements in rows:
    shown = 'n/a' if disagreements < 0 else f'{disagreements:,}'
    print(f'| {name} | {speed / 1e6:.2f} M | {ours / speed:.1f} | {shown} |')

  if args.skip_build:
    return
  profiles = ['small'] + (['default'] if args.default else [])
  timings = {profile: build(profile) for profile in profiles}
  print('\n| table build (s) | ' + ' | '.join(f'{p} {tables.PROFILES[p]}' for p in profiles) + ' |')
  print('| --- |' + ' ---: |' * len(profiles))
  for stage in timings['small']:
    print(f'| {stage} | ' + ' | '.join(f'{timings[p][stage]:.0f}' for p in profiles) + ' |')


if __name__ == '__main__':
  main()
