"""The runtime's NumPy bucket lookup against the jitted JAX one, side by side in one run.

The blueprint policy looks each hand's bucket up from the abstraction tables: the search bot asks for
all 1,326 hole pairs on a board (a range query, each new board once), a match for one pair. Timed per
street (flop, turn, river), median of repeats after a warm-up:

- the tables alone: `abstractions.lookup.BucketTables.bucket` (NumPy) against `abstractions.Abstraction.
  bucket` under `jax.jit` (what the policy ran before the runtime), for 1,326 pairs on 1 and on 16
  boards, and for one pair;
- the policy's range query on fresh boards (`BlueprintPolicy._range_buckets` after `forget_boards`),
  the library's policy (the runtime's NumPy lookup) against the same policy with the jitted lookup.

    python experiments/bench_runtime.py [--tables DIR] [--repeats 50]

Without --tables, stand-in tables of the default profile's sizes (169, 200, 200, 200 buckets, each
class's bucket its index modulo the count) are written to a temporary directory (about 140 MB).
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time

import jax
import numpy as np

import abstractions
from jaxcfr.poker.blueprint import files
from jaxcfr.poker.blueprint import policy as policy_lib
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.rules import nlhe

BOARD_CARDS = {'flop': 3, 'turn': 4, 'river': 5}


def standin_tables(directory: str, sizes=(169, 200, 200, 200)) -> str:
  arrays = {
    street: np.resize(
      np.arange(k, dtype=np.uint8), 169 if street == 'preflop' else abstractions.hand_indexer(street).size
    )
    for street, k in zip(abstractions.STREETS, sizes, strict=True)
  }
  abstractions.save(arrays, {'buckets': list(sizes)}, directory)
  return directory


def median_ms(function, repeats: int) -> float:
  function()
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    function()
    times.append(time.perf_counter() - start)
  return 1e3 * statistics.median(times)


@functools.partial(jax.jit, static_argnums=0)
def jitted_bucket(street: str, tables, hole, board):
  return tables.bucket(street, hole, board)


class JittedPolicy(policy_lib.BlueprintPolicy):
  """The blueprint policy with the jitted lookup it had before the runtime (padded to a power of two)."""

  def __init__(self, blueprint, abstraction):
    super().__init__(blueprint, abstraction.as_numpy())
    self.abstraction = abstraction

  def _street_buckets(self, street, hole, board):
    n = len(hole)
    size = 1 << max(n - 1, 0).bit_length()
    pad = np.concatenate([np.arange(n), np.zeros(size - n, np.int64)])
    shown = np.broadcast_to(board[pad, None, :], (size, hole.shape[1], board.shape[-1])).astype(np.int32)
    name = abstractions.STREETS[street]
    return np.asarray(jitted_bucket(name, self.abstraction, hole[pad].astype(np.int32), shown))[:n]


def lookups(numpy_tables, jax_tables, repeats: int, rng) -> list[tuple[str, float, float]]:
  rows = []
  for street, n in BOARD_CARDS.items():
    for boards, pairs in ((1, 1326), (16, 1326), (1, 1)):
      deals = np.argsort(rng.random((boards, 52)), axis=1)[:, : 2 + n].astype(np.int32)
      hole = np.broadcast_to(abstractions.HOLES, (boards, 1326, 2)) if pairs == 1326 else deals[:, None, :2]
      board = np.broadcast_to(deals[:, None, 2:], (boards, pairs, n))
      ours = numpy_tables.bucket(street, hole, board)
      theirs = np.asarray(jitted_bucket(street, jax_tables, hole, board))
      valid = ~(hole[..., :, None] == board[..., None, :]).any((-1, -2))  # pairs the board leaves
      assert (ours[valid] == theirs[valid]).all()
      numpy_ms = median_ms(lambda h=hole, b=board, s=street: numpy_tables.bucket(s, h, b), repeats)
      jax_ms = median_ms(
        lambda h=hole, b=board, s=street: np.asarray(jitted_bucket(s, jax_tables, h, b)), repeats
      )
      rows.append((f'{street}: {boards} board(s) x {pairs} pair(s)', numpy_ms, jax_ms))
  return rows


def range_queries(numpy_tables, jax_tables, repeats: int) -> list[tuple[str, float, float]]:
  tree = tree_lib.build_tree('small')
  probabilities = np.full((tree.num_decisions, max(numpy_tables.buckets), tree.num_actions), 0.25, np.float32)
  metadata = {
    'buckets': list(numpy_tables.buckets), 'board_cards': [0, 3, 1, 1], 'deck': [13, 4],
    'abstraction_fingerprint': numpy_tables.fingerprint,
  }  # fmt: skip
  blueprint = files.Blueprint(tree, probabilities, metadata)
  ours, theirs = policy_lib.BlueprintPolicy(blueprint, numpy_tables), JittedPolicy(blueprint, jax_tables)
  rows = []
  for street in (1, 2, 3):
    for hands in (1, 16):
      state = nlhe.deal(street, hands)
      state = state._replace(street=np.full(hands, street, state.street.dtype))  # distinct boards, one street
      shown = state.board[:, : nlhe.BOARD_SIZES[street]]
      valid = ~(abstractions.HOLES[None, :, :, None] == shown[:, None, None, :]).any((-1, -2))  # [B, H]
      np.testing.assert_array_equal(ours._range_buckets(state)[valid], theirs._range_buckets(state)[valid])

      def fresh(policy, state=state):
        policy.forget_boards()
        policy._range_buckets(state)

      rows.append(
        (
          f'policy range query: {abstractions.STREETS[street]}, {hands} new board(s)',
          median_ms(lambda: fresh(ours), repeats),
          median_ms(lambda: fresh(theirs), repeats),
        )
      )
  return rows


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    '--tables', help='abstraction tables (default: stand-in tables in a temporary directory)'
  )
  parser.add_argument('--repeats', type=int, default=50)
  args = parser.parse_args()
  with tempfile.TemporaryDirectory() as scratch:
    directory = args.tables or standin_tables(os.path.join(scratch, 'tables'))
    numpy_tables = abstractions.load_tables(directory)
    jax_tables = abstractions.load(directory, verify=False)
    rng = np.random.default_rng(0)
    rows = lookups(numpy_tables, jax_tables, args.repeats, rng) + range_queries(
      numpy_tables, jax_tables, args.repeats
    )
  print(
    f'jax {jax.__version__}, numpy {np.__version__}, {os.cpu_count()} CPUs, {jax.devices()[0].platform}\n'
  )
  print('| lookup | NumPy (ms) | jitted JAX (ms) | NumPy / JAX |')
  print('| --- | ---: | ---: | ---: |')
  for name, numpy_ms, jax_ms in rows:
    print(f'| {name} | {numpy_ms:.3f} | {jax_ms:.3f} | {numpy_ms / jax_ms:.2f} |')


if __name__ == '__main__':
  main()
