"""Safe river re-solving (`SearchConfig.gadget`): how much more than its alternative (its best-response
value against the blueprint on the search tree) each hand of the opponent can win against a re-solve,
unsafe and with each gadget, after N iterations, on spots where the blueprint's own play reaches the
river (as `experiments/warm_start.py` finds them).

    python experiments/safe_resolving.py bp.npz --tables tables-small/ --spots 20 --iterations 60,150,300

Per spot and re-solve, with the gains per hand (best-response value minus alternative, per unit of the
bot's range that the hand leaves, in % of the pot): the largest gain over all hands ("worst", what a
best response aims at), the mean of the positive gains over all hands ("uniform": an opponent that
may hold any hand), and the prior-weighted gain (the opponent's range as the blueprint implies it:
what the unsafe re-solve answers). The table gives their medians over the spots. A re-solve is safe
against the blueprint when no hand gains (worst <= 0). The last column is what the bot wins, on the
tracked ranges, by playing the re-solve against the blueprint's strategy instead of playing the
blueprint's own (the mean over the spots, and its standard error): what a match against the blueprint
measures.
"""

from __future__ import annotations

import argparse
import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
from warm_start import spots

from jaxcfr import backend
from jaxcfr.poker.blueprint import load_policy
from jaxcfr.poker.search import bot as search
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import showdown
from jaxcfr.poker.subgame.resolving import safe_subgame

KINDS = (None, *search.GADGETS)


@functools.partial(jax.jit, static_argnums=2)
def _best_response(game, policy, opponent):
  reach = subgame.reach_probabilities(game, policy)
  return subgame.counterfactual_values(game, policy, reach, opponent, best_response=True)[0]


@jax.jit
def _expected(game, policy):
  return subgame.expected_values(game, policy)


def gains(blueprint, state, b, iterations: int, gadget) -> tuple[float, float, float, float]:
  """(worst, uniform, prior) gains of a re-solve of `iterations` with `gadget`, and what the bot wins
  by playing it instead of the blueprint's strategy against the blueprint's, % of the pot."""
  config = search.SearchConfig(
    think_seconds=None, iterations=iterations, target_pct=None, streets=(3,), gadget=gadget
  )
  ranges = search.track_ranges(blueprint, state)[b]
  game, _ = search._prepare(state, b, ranges, config, None, blueprint)
  policy, _, _ = search.solve_spot(game, config, None)
  inner = game.game if gadget else game
  opponent = int(state.to_act[b])
  replaced = jnp.asarray(search.blueprint_policy(blueprint, state, b, inner))
  alternative = np.asarray(safe_subgame(inner, replaced, opponent).alternatives)
  best = np.asarray(_best_response(inner, jnp.asarray(policy), opponent))
  own, prior = np.asarray(inner.spot.ranges[1 - opponent]), np.asarray(inner.spot.ranges[opponent])
  mass = np.asarray(showdown.compatible_mass(inner.spot.hands, jnp.asarray(own)[None])[0])
  gain = (best - alternative) / mass
  pot = inner.tree.info.config.pot
  weighted = (prior * mass * gain).sum() / (prior * mass).sum()
  bot = 1 - opponent
  player = np.asarray(inner.tree.decision_player)[:, None, None]
  mixed = jnp.asarray(np.where(player == bot, policy, np.asarray(replaced)))
  won = float(_expected(inner, mixed)[bot] - _expected(inner, replaced)[bot])
  return 100 * gain.max() / pot, 100 * np.maximum(gain, 0).mean() / pot, 100 * weighted / pot, 100 * won / pot


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('blueprint')
  parser.add_argument('--tables', default=None)
  parser.add_argument('--spots', type=int, default=20)
  parser.add_argument('--seed', type=int, default=3)
  parser.add_argument('--iterations', default='60,150,300')
  args = parser.parse_args(argv)
  budgets = [int(x) for x in args.iterations.split(',')]
  blueprint = load_policy(args.blueprint, args.tables)
  backend.enable_compilation_cache()
  rows = []
  for i, (state, b) in enumerate(spots(blueprint, 3, args.spots, args.seed)):
    row = {(kind, n): gains(blueprint, state, b, n, kind) for kind in KINDS for n in budgets}
    rows.append(row)
    print(
      f'spot {i}: ' + ' '.join(f'{k}/{n} {v[0]:+.1f}' for (k, n), v in row.items()),
      file=sys.stderr,
      flush=True,
    )
  print(
    f'{len(rows)} river spots; medians, % of the pot: worst gain | uniform positive gain | prior gain | '
    'won against the blueprint (mean, its standard error)'
  )
  for kind in KINDS:
    for n in budgets:
      worst, uniform, prior = (float(np.median([r[(kind, n)][k] for r in rows])) for k in range(3))
      won = np.array([r[(kind, n)][3] for r in rows])
      error = won.std(ddof=1) / np.sqrt(len(won)) if len(won) > 1 else float('nan')
      print(
        f'{kind or "unsafe":>15} {n:>4} it | {worst:+7.2f} | {uniform:6.2f} | {prior:+7.2f} | '
        f'{won.mean():+6.2f} ({error:.2f})'
      )
  return 0


if __name__ == '__main__':
  sys.exit(main())
