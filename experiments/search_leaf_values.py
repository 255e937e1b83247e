"""What a depth-limited turn (or flop) decision's parts cost, decision by decision, without a match's
noise: the decisions of a short match (re-solves of `--iterations` each: the same decisions on any
machine) are kept, then each is valued again from fresh caches (its runouts' tables, the blueprint's
buckets of the boards, the leaf matrices) and solved for `--iterations`, twice over (the first pass
compiles what the disk cache lacks).

    python experiments/search_leaf_values.py bp-300.npz --tables tables-small/ --hands 40 --seed 7
    python experiments/search_leaf_values.py bp-300.npz --street flop --hands 20

    python experiments/search_leaf_values.py bp-300.npz --tables tables-small/ --hands 40 --seed 7 \
      --river-cards 6,8 --form factored          # the drawn river cards' games, leaves factored

A search game's leaf values are its runouts' tables, the blueprint's trees expanded over the runouts
(`_expand`) and the leaves' matrices or factored rows, all in `search_game`; the iterations are
`depth_limited.solve`.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from jaxcfr import backend, outputs
from jaxcfr.cli.common import river_card_count, whole_number
from jaxcfr.poker.blueprint import load_policy
from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.search import bot as search
from jaxcfr.poker.search import depth_limited


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('blueprint', help='a blueprint file (.npz)')
  parser.add_argument('--tables', default=None, help="the blueprint's abstraction tables (default: recorded)")
  parser.add_argument('--street', choices=('turn', 'flop'), default='turn')
  parser.add_argument('--hands', type=whole_number(2), default=40, help='hands of the match (default 40)')
  parser.add_argument('--seed', type=whole_number(0), default=7)
  parser.add_argument('--iterations', type=whole_number(1), default=10, help='DCFR iterations (default 10)')
  parser.add_argument(
    '--river-cards', type=_counts, default=(),
    help='turn: also value each decision on this many river cards sampled of 48 (e.g. 8,16,24) and '
    "measure the sampled game's solution in the game of every river card",
  )  # fmt: skip
  parser.add_argument(
    '--form', choices=depth_limited.FORMS, default=None,
    help="the sampled river cards' leaf values as matrices or factored (default: the search's choice)",
  )  # fmt: skip
  parser.add_argument('--json', default=None, metavar='PATH')
  parser.add_argument('--force', action='store_true')
  args = parser.parse_args(argv)
  try:
    if args.river_cards and args.street != 'turn':
      raise ValueError('--river-cards is for the turn')
    outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
    blueprint = load_policy(args.blueprint, args.tables)
  except ValueError as error:
    print(f'search_leaf_values: error: {error}', file=sys.stderr)
    return 2
  backend.enable_compilation_cache()
  street = 1 if args.street == 'flop' else 2
  # Re-solves of a fixed number of iterations: the same decisions whatever the machine's speed.
  budget = {'think_seconds': None, 'iterations': args.iterations, 'target_pct': None}
  bot = search.search_policy(
    blueprint, **budget, seed=args.seed, streets=(street,), turn_depth_limited=street == 2,
    river_cards=None, gadget=None,
  )  # fmt: skip
  decisions = []
  build = depth_limited.search_game

  def kept(policy, state, b, tree_config, ranges, runouts, cache=None):
    decisions.append((nlhe.take(state, [b]), tree_config, ranges, runouts.board, runouts.cards))
    return build(policy, state, b, tree_config, ranges, runouts, cache)

  depth_limited.search_game = kept
  try:
    match.play_match(bot, blueprint, args.hands, seed=args.seed, batch=args.hands)
  finally:
    depth_limited.search_game = build
  if not decisions:
    print(f'search_leaf_values: no {args.street} decision in {args.hands} hands', file=sys.stderr)
    return 2
  passes = []
  for rep in range(2):
    leaf, solve, games = [], [], []
    for state, tree_config, ranges, board, runout_cards in decisions:
      blueprint.forget_boards()
      started = time.perf_counter()
      runouts = depth_limited.runout_tables(board, runout_cards)
      game = depth_limited.search_game(blueprint, state, 0, tree_config, ranges, runouts).ready()
      games.append(game)
      valued = time.perf_counter()
      depth_limited.solve(game, iterations=args.iterations)
      leaf.append(valued - started)
      solve.append(time.perf_counter() - valued)
    passes.append(
      {
        'leaf_values_median_seconds': float(np.median(leaf)),
        'leaf_values_p90_seconds': float(np.percentile(leaf, 90)),
        'iterations_median_seconds': float(np.median(solve)),
      }
    )
    print(
      f'pass {rep + 1}: {len(leaf)} {args.street} decisions, leaf values median '
      f'{np.median(leaf) * 1e3:.0f} ms '
      f'(p90 {np.percentile(leaf, 90) * 1e3:.0f}), {args.iterations} iterations median '
      f'{np.median(solve) * 1e3:.0f} ms'
    )
  sampled = _sampled_river_cards(blueprint, decisions, games, args) if args.river_cards else []
  if args.json:
    report = {'street': args.street, 'hands': args.hands, 'seed': args.seed, 'decisions': len(decisions)}
    report.update(iterations=args.iterations, passes=passes, river_cards=sampled)
    outputs.write_json(args.json, report, force=args.force)
  return 0


def _counts(text: str) -> tuple[int, ...]:
  return tuple(river_card_count(part) for part in text.split(','))


def _sampled_river_cards(blueprint, decisions: list, exact: list, args) -> list:
  """Per count of sampled river cards: the leaf values' median seconds, and the exploitability (% of
  the pot, median over the decisions) in the game of every river card (`exact`, a game per decision)
  of the sampled game's solution after `args.iterations`, next to the full game's own solution's."""
  rows, full = [], []
  for (_, tree_config, *_), game in zip(decisions, exact, strict=True):
    policy, _ = depth_limited.solve(game, iterations=args.iterations)
    full.append(100 * depth_limited.exploitability(game, policy) / tree_config.pot)
  print(
    f'every river card: exploitability after {args.iterations} iterations median '
    f'{np.median(full):.2f}% of the pot'
  )
  for count in args.river_cards:
    seconds, solving, pct = [], [], []
    for k, (state, tree_config, ranges, board, _) in enumerate(decisions):
      cards = depth_limited.sample_river_cards(np.random.default_rng([args.seed, k, count]), board, count)
      blueprint.forget_boards()
      started = time.perf_counter()
      game = depth_limited.search_game(
        blueprint, state, 0, tree_config, ranges, depth_limited.runout_tables(board, cards), form=args.form
      ).ready()
      valued = time.perf_counter()
      policy, _ = depth_limited.solve(game, iterations=args.iterations)
      seconds.append(valued - started)
      solving.append(time.perf_counter() - valued)
      pct.append(100 * depth_limited.exploitability(exact[k], policy) / tree_config.pot)
    row = {'river_cards': count, 'leaf_values_median_seconds': float(np.median(seconds))}
    row.update(
      iterations_median_seconds=float(np.median(solving)), exploitability_pct_median=float(np.median(pct))
    )
    row.update(full_pct_median=float(np.median(full)), form=args.form)
    rows.append(row)
    print(
      f'{count} river cards: leaf values median {np.median(seconds) * 1e3:.0f} ms, {args.iterations} '
      f'iterations {np.median(solving) * 1e3:.0f} ms; the solution in the game of every river card: '
      f'exploitability median {np.median(pct):.2f}% of the pot'
    )
  return rows


if __name__ == '__main__':
  sys.exit(main())
