"""Warm starts and blending of the search bot's re-solves: how far from equilibrium a river, flop or
turn re-solve is after N iterations started from uniform regrets, and started from K iterations of
the blueprint's strategy (`SearchConfig.warm_start`), on spots where the blueprint's own play reaches
the street; and, for the depth-limited flop and turn, with the root blended with the blueprint's
strategy there (`SearchConfig.blend` B: alpha = min(1, N / B)).

    python experiments/warm_start.py bp.npz --tables tables-small/ --spots 40 --street river
    python experiments/warm_start.py bp.npz --tables tables-small/ --spots 12 --street flop
    python experiments/warm_start.py bp.npz --tables tables-small/ --spots 20 --street turn \
      --warm 0 --iterations 10,20,40 --blend 20,40,80

The spots: hands dealt from `--seed`, both seats played by the blueprint (its sampled actions) up to
the first decision on the street; the ranges are the search bot's (`search.track_ranges`). Each spot
is solved for every (warm start, iterations) pair; the table gives the median over the spots of the
exploitability of the average strategy, in % of the pot (on the flop, the depth-limited game's), and
the row "blueprint" that of the blueprint's own strategy mapped onto the search tree. Also the
median seconds of the blueprint's range queries that a warm start costs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import jax
import numpy as np

from jaxcfr import backend
from jaxcfr.poker.blueprint import load_policy
from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.search import bot as search
from jaxcfr.poker.search import depth_limited


def spots(blueprint, street: int, count: int, seed: int) -> list:
  """(state, b) of `count` hands at their first decision on `street`, blueprint against itself."""
  found = []
  key = jax.random.key(seed)
  chunk = 0
  while len(found) < count:
    deal_key, draw_key = jax.random.split(jax.random.fold_in(key, chunk))
    chunk += 1
    state = nlhe.deal(deal_key, 64)
    draws = nlhe.generator(draw_key).random(state.noise.shape)
    taken = np.zeros(64, bool)
    while not state.finished.all() and len(found) < count:
      at = ~state.finished & (state.street == street) & ~taken
      for b in np.flatnonzero(at)[: count - len(found)]:
        found.append((nlhe.take(state, [b]), 0))
      taken |= at
      live = ~state.finished & ~taken
      if not live.any():
        break
      index = np.flatnonzero(live)
      sub = nlhe.take(state, index)
      holes = sub.hole[np.arange(len(index)), sub.to_act][:, None, :]
      actions, probs = blueprint.strategy(sub, holes)
      choice = match.sample_actions(np.asarray(probs)[:, 0], draws[index, state.num_actions[index]])
      kind, amount = np.zeros(64, np.int64), np.zeros(64, np.int64)
      kind[index] = np.asarray(actions.kind)[np.arange(len(index)), choice]
      amount[index] = np.asarray(actions.amount)[np.arange(len(index)), choice]
      state = nlhe.apply(state, kind, amount, live)
  return found


def river_row(blueprint, state, b, config, warms, budgets) -> tuple[dict, float]:
  ranges = search.floor_ranges(
    search.track_ranges(blueprint, state)[b], nlhe.visible_board(state)[b], config.range_floor
  )
  game = search.build_spot(state, b, ranges, config)
  started = time.perf_counter()
  warm_policy = search.blueprint_policy(blueprint, state, b, game)
  query_seconds = time.perf_counter() - started
  exploitability = search._programs(config.algorithm)[-1]
  pot = game.tree.info.config.pot
  row = {'blueprint': 100 * float(exploitability(warm_policy, game)) / pot}
  for warm in warms:
    for n in budgets:
      cfg = search.SearchConfig(
        think_seconds=None, iterations=n, target_pct=None, min_iterations=1, warm_start=warm, gadget=None
      )
      policy, _, _ = search.solve_spot(game, cfg, None, warm_policy if warm else None)
      row[(warm, n)] = 100 * float(exploitability(policy, game)) / pot
  return row, query_seconds


def round_row(blueprint, state, b, config, warms, budgets, blends=()) -> tuple[dict, float]:
  """A depth-limited flop or turn spot's row; with `blends`, also ('blend', B, N): the uncapped
  average after N cold iterations with its root blended with the blueprint's root."""
  ranges = search.floor_ranges(
    search.track_ranges(blueprint, state)[b], nlhe.visible_board(state)[b], config.range_floor
  )
  tree_config = search.subgame_config(state, b, config)
  runouts = search.round_runouts(state, b, config)
  game = depth_limited.search_game(blueprint, state, b, tree_config, ranges, runouts)
  started = time.perf_counter()
  warm_policy = search.round_warm_policy(blueprint, state, b, game, tree_config)
  query_seconds = time.perf_counter() - started
  pot = tree_config.pot
  row = {'blueprint': 100 * depth_limited.exploitability(game, warm_policy) / pot}
  for warm in warms:
    for n in budgets:
      policy, _ = depth_limited.solve(game, n, warm=warm_policy if warm else None, warm_iterations=warm)
      row[(warm, n)] = 100 * depth_limited.exploitability(game, policy) / pot
      for blend in blends if warm == 0 else ():
        mixed = {**policy, 0: search.blended(policy[0], warm_policy[0], n, blend)}
        row[('blend', blend, n)] = 100 * depth_limited.exploitability(game, mixed) / pot
  return row, query_seconds


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('blueprint')
  parser.add_argument('--tables', default=None)
  parser.add_argument('--street', choices=('flop', 'turn', 'river'), default='river')
  parser.add_argument('--spots', type=int, default=40)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--warm', default='0,5,10,25', help='warm-start iterations to compare')
  parser.add_argument('--iterations', default='10,20,40,80', help='solver iterations to compare')
  parser.add_argument('--blend', default='', help='blend horizons B to compare (flop and turn; default none)')
  parser.add_argument('--json', default=None)
  args = parser.parse_args(argv)
  blends = [int(x) for x in args.blend.split(',') if x]
  warms = [int(x) for x in args.warm.split(',')]
  budgets = [int(x) for x in args.iterations.split(',')]
  blueprint = load_policy(args.blueprint, args.tables)
  backend.enable_compilation_cache()
  street = {'flop': 1, 'turn': 2, 'river': 3}[args.street]
  # Unsafe re-solves with every river card on the turn: the spots the warm starts were measured on.
  config = search.SearchConfig(streets=(street,), turn_depth_limited=True, river_cards=None, gadget=None)
  rows, queries = [], []
  for i, (state, b) in enumerate(spots(blueprint, street, args.spots, args.seed)):
    if street == 3:
      row, seconds = river_row(blueprint, state, b, config, warms, budgets)
    else:
      row, seconds = round_row(blueprint, state, b, config, warms, budgets, blends)
    rows.append(row), queries.append(seconds)
    print(
      f'spot {i}: blueprint {row["blueprint"]:.2f}% '
      + ' '.join(f'w{w}/n{n} {row[(w, n)]:.2f}' for w in warms for n in budgets),
      file=sys.stderr,
      flush=True,
    )
  table = {'blueprint': float(np.median([r['blueprint'] for r in rows]))}
  print(f'{args.street}: {len(rows)} spots; median exploitability, % of the pot')
  print(f'the blueprint on the search tree: {table["blueprint"]:.2f}')
  print('warm start | ' + ' | '.join(f'{n} it' for n in budgets))
  for w in warms:
    medians = [float(np.median([r[(w, n)] for r in rows])) for n in budgets]
    table[f'warm {w}'] = dict(zip(map(str, budgets), medians, strict=True))
    print(f'{w:>10} | ' + ' | '.join(f'{m:.2f}' for m in medians))
  for blend in blends:
    medians = [float(np.median([r[('blend', blend, n)] for r in rows])) for n in budgets]
    table[f'blend {blend}'] = dict(zip(map(str, budgets), medians, strict=True))
    print(f'{"blend " + str(blend):>10} | ' + ' | '.join(f'{m:.2f}' for m in medians))
    for n in budgets:
      closer = float(np.mean([r[('blend', blend, n)] < r[(0, n)] for r in rows]))
      print(f'  blend {blend}, {n} it: closer than the re-solve alone on {closer:.0%} of the spots')
  better = {}
  for w in warms[1:]:
    for n in budgets:
      better[f'warm {w}, {n} it'] = float(np.mean([r[(w, n)] < r[(0, n)] for r in rows]))
  print('share of spots where the warm start is closer than uniform:', json.dumps(better))
  print(f"median seconds of the warm start's blueprint queries: {np.median(queries):.3f}")
  if args.json:
    with open(args.json, 'w') as f:
      json.dump({'table': table, 'better': better, 'query_seconds': float(np.median(queries))}, f, indent=1)
  return 0


if __name__ == '__main__':
  sys.exit(main())
