"""Boards per second of the vector-form blueprint trainer (`--algorithm pcs`), and its memory.

For each bet preset and each number of boards walked at a time (`--at-once`), it compiles one update
of `--boards` boards per player, reads the program's peak memory (XLA's account,
`jaxcfr.memory.program_bytes`), runs updates for `--seconds`, and prints boards/s (both players'
boards) and hand pairs/s (each board covers H x H' pairs of hole pairs: 1,081 x 990 on the full deck).
Without `--abstraction` the tables are stand-ins of the profile's bucket counts (full-size tables,
each class's bucket its index modulo the count: the cost of a lookup is a real table's).

    python experiments/bench_blueprint_pcs.py --bets small,default --boards 4 --at-once 1 --seconds 30
    python experiments/bench_blueprint_pcs.py --bets default --profile default --boards 64 \\
      --at-once 1,4,16 --devices 1 --seconds 60                          # an accelerator: larger batches
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

PROFILES = {'small': (8, 12, 12, 8), 'default': (169, 200, 200, 200)}


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--bets', default='small', help='bet presets, comma-separated')
  parser.add_argument('--profile', choices=PROFILES, default='small', help='stand-in tables of these counts')
  parser.add_argument('--abstraction', help='tables of `jaxcfr abstract` instead of stand-ins')
  parser.add_argument('--boards', type=int, default=4, help='boards per player per update')
  parser.add_argument('--at-once', default='1', help='boards walked at a time, comma-separated')
  parser.add_argument('--devices', type=int, default=1)
  parser.add_argument('--seconds', type=float, default=30, help='of updates per configuration')
  parser.add_argument('--json', help='write the results here')
  return parser.parse_args(argv)


def standin_tables(sizes) -> str:
  sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'support'))
  from standin import write_tables  # noqa: PLC0415

  return write_tables(os.path.join(tempfile.mkdtemp(prefix='pcs-tables-'), 'tables'), sizes)


def measure(game, boards: int, at_once: int, devices: int, seconds: float) -> dict:
  import jax  # noqa: PLC0415

  from jaxcfr import memory  # noqa: PLC0415
  from jaxcfr.poker.blueprint import vector  # noqa: PLC0415

  solver = vector.vector_solver(batch_size=boards, boards_per_step=at_once, devices=devices)
  state = solver.init(game, jax.random.key(0))
  start = time.perf_counter()
  update = jax.jit(solver.update).lower(state, game).compile()
  compile_seconds = time.perf_counter() - start
  state = jax.block_until_ready(update(state, game))  # the first run is slower than later ones
  updates, start = 0, time.perf_counter()
  while updates == 0 or time.perf_counter() - start < seconds:
    state = jax.block_until_ready(update(state, game))
    updates += 1
  elapsed = time.perf_counter() - start
  remaining = game.deck.shape[0] - sum(game.board_cards)
  pairs = remaining * (remaining - 1) // 2 * ((remaining - 2) * (remaining - 3) // 2)
  rate = 2 * boards * updates / elapsed
  return {
    'boards': boards, 'at_once': at_once, 'devices': devices, 'updates': updates, 'seconds': elapsed,
    'boards_per_second': rate, 'hand_pairs_per_second': rate * pairs,
    'compile_seconds': compile_seconds, 'program_bytes': memory.program_bytes(update),
  }  # fmt: skip


def main(argv=None) -> int:
  args = parse_args(argv)
  import jax  # noqa: PLC0415

  import abstractions  # noqa: PLC0415
  from jaxcfr.poker.blueprint import game as game_lib  # noqa: PLC0415
  from jaxcfr.poker.blueprint import tree as tree_lib  # noqa: PLC0415

  directory = args.abstraction or standin_tables(PROFILES[args.profile])
  tables = abstractions.load(directory)
  print(f'backend {jax.default_backend()}, {jax.device_count()} devices, tables {directory}', flush=True)
  results = []
  for bets in args.bets.split(','):
    tree = tree_lib.build_tree(tree_lib.preset(bets))
    game = game_lib.make_game(tree.bets, tables, tree=tree)
    for at_once in (int(k) for k in args.at_once.split(',')):
      measured = measure(game, args.boards, at_once, args.devices, args.seconds)
      row = {'bets': bets, 'buckets': list(game.num_buckets), **measured}
      results.append(row)
      peak = 'unknown' if row['program_bytes'] is None else f'{row["program_bytes"] / 1e9:.2f} GB'
      print(
        f'{bets} bets, {args.boards} boards x 2 per update, {at_once} at a time: '
        f'{row["boards_per_second"]:.3g} boards/s ({row["hand_pairs_per_second"]:.3g} hand pairs/s), '
        f'{row["updates"]} updates in {row["seconds"]:.1f} s, compile {row["compile_seconds"]:.1f} s, '
        f'peak {peak}',
        flush=True,
      )
  if args.json:
    with open(args.json, 'w') as out:
      json.dump(results, out, indent=1)
  return 0


if __name__ == '__main__':
  sys.exit(main())
