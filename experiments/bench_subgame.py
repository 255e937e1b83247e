"""Hold'em subgame solving speed: the issue's spot on the river and the turn, and a batch of river spots.

The spot: flop Td9d6h, turn Qc, river 3s; pot 200, effective stack 900; bets '60%, e, a', raises
'2.5x' on every street, a river donk bet of 50%; full ranges (1,081 hands each on the river, 1,128
on the turn); target 0.5% of the pot, exploitability checked every 10 iterations (checks excluded
from the solving time). Each figure is the median of `--repeats` solves after one warm-up (the JIT
compilation is reported on its own). The batch: `--batch` river spots (random boards and random
ranges, one tree shape) solved for the river spot's iteration count in one `vmap`ped call.

    python experiments/bench_subgame.py [--repeats 3] [--batch 100] [--skip-turn] [--compare dcfr,cfr+,pcfr+]
                                        [--showdown auto|sweep|matrix]
    python experiments/bench_subgame.py --gammas 2,3 [--rivers 20] [--turns 4]   # DCFR's gamma

`--showdown` picks how showdown values are computed: the sorted sweep (CPUs), the masked matrix
product per river board (GPUs), or what `subgame.showdown_method` picks for the backend (`auto`); the
results name the method used. `experiments/gpu_subgames.sh` runs both on a GPU.

`--gammas` counts DCFR's iterations to 0.5% of the pot (checked every 10) for each gamma on random
spots of the benchmark's sizing: river spots with random boards and random ranges, turn spots with
random boards and full ranges (the subgame solver's default gamma is `defaults.SUBGAME_HYPERPARAMETERS`).

`--peer BINARY` runs postflop-solver (Rust, one thread: this solver takes the machine's threads, so
these are not equal-threads figures; `experiments/bench_threads.py` gives those) on the same spots
side by side: per round its binary (`experiments/postflop_solver_peer`, which says how to build
it) solves the spot with the library's `solve` loop, then this solver does, alternately, and the
figures are the medians of the rounds and of the per-round ratios. Two comparisons: the iterations
alone (`ratio`: the peer's `solve_step`s against our `seconds`, which leave out the checks' exact
evaluations and count laying out the final policy), and the whole loops with their checks
(`ratio_with_checks`).

    python experiments/bench_subgame.py --repeats 5 \
      --peer experiments/postflop_solver_peer/target/release/postflop-solver-peer [--skip-turn]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxcfr
from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import solving, tree
from jaxcfr.poker.subgame.solver import subgame_solver

FULL = '22+,A2+,K2+,Q2+,J2+,T2+,92+,82+,72+,62+,52+,42+,32'


def config(board: str) -> tree.TreeConfig:
  """The issue's sizes: the donk size on the river only."""
  base = tree.street_sizes('60%,e,a', '2.5x')
  street = {6: 1, 8: 2, 10: 3}[len(board)]
  return tree.TreeConfig(street, 200, 900, (base, base, tree.street_sizes('60%,e,a', '2.5x', '50%')))


def method(spot: subgame.Spot) -> str:
  """How `spot`'s showdown values are computed: 'matrix' where its tables hold the sign matrix."""
  return 'sweep' if spot.tables.matrix is None else 'matrix'


def measure(board: str, algorithm: str, repeats: int, showdown_by: str = 'auto') -> dict:
  full = ranges.parse_range(FULL)
  game = subgame.build_subgame(config(board), cards.parse_board(board), (full, full), showdown_by=showdown_by)
  runs = [solving.solve(game, algorithm) for _ in range(repeats + 1)]
  first, rest = runs[0], runs[1:]
  return {
    'street': ('flop', 'turn', 'river')[game.tree.info.config.street - 1],
    'hands': game.num_hands,
    'nodes': game.tree.num_nodes,
    'showdown': method(game.spot),
    'iterations': rest[0].iterations,
    'seconds': statistics.median(r.seconds for r in rest),
    'jit_seconds_cold': first.jit_seconds,
    'jit_seconds_warm': statistics.median(r.jit_seconds for r in rest),
    'exploitability_pct': rest[0].exploitability_pct,
    'memory_bytes': rest[0].memory_bytes,
  }


def batch(board: str, size: int, iterations: int, algorithm: str, showdown_by: str = 'auto') -> dict:
  """`size` river spots of one tree shape solved together (vmap over the spots)."""
  rng = np.random.default_rng(0)
  shape = subgame.build_tree(config(board))
  spots, deck = [], cards.Deck()
  for _ in range(size):
    chosen = tuple(int(c) for c in rng.choice(52, 5, replace=False))
    weights = [rng.random(1326) * (rng.random(1326) < 0.6) for _ in range(2)]
    spots.append(subgame.make_spot(shape, chosen, weights, deck, showdown_by=showdown_by))
  stacked = jax.tree.map(lambda *x: jnp.stack(x), *spots)
  solver = subgame_solver(algorithm)

  def solve_all(tree_arrays, spots):
    def one(spot):
      game = subgame.Subgame(tree_arrays, spot)
      state = jaxcfr.run(solver, solver.init(game), game, iterations)
      policy = solver.average_policy(state, game)
      return game.evaluate_profile(policy)[0] / 2

    return jax.vmap(one)(spots)

  start = time.perf_counter()
  compiled = jax.jit(solve_all).lower(shape, stacked).compile()
  jit_seconds = time.perf_counter() - start
  times = []
  for _ in range(3):
    start = time.perf_counter()
    exploitability = jax.block_until_ready(compiled(shape, stacked))
    times.append(time.perf_counter() - start)
  return {
    'spots': size,
    'showdown': method(spots[0]),
    'iterations': iterations,
    'seconds': statistics.median(times),
    'jit_seconds': jit_seconds,
    'median_exploitability_pct': float(np.median(np.asarray(exploitability) / 200 * 100)),
  }


def run_peer(binary: str, street: str) -> dict:
  """One solve by the peer's binary, on one thread (it is built with rayon: `RAYON_NUM_THREADS=1`):
  its JSON line (`seconds` with its checks, `iteration_seconds` without, `iterations`, ...). Equal
  threads at 1 and 2: `experiments/bench_threads.py`."""
  env = {**os.environ, 'RAYON_NUM_THREADS': '1'}
  out = subprocess.run([binary, street], capture_output=True, text=True, check=True, env=env).stdout
  return json.loads(out.strip().splitlines()[-1])


def side_by_side(binary: str, algorithm: str, repeats: int, skip_turn: bool = False) -> None:
  """The river and the turn spot, the peer and this solver alternately, `repeats` rounds each."""
  full = ranges.parse_range(FULL)
  spots = (('river', 'Td9d6hQc3s'),) + ((('turn', 'Td9d6hQc'),) if not skip_turn else ())
  for street, board in spots:
    game = subgame.build_subgame(config(board), cards.parse_board(board), (full, full))
    solving.solve(game, algorithm)  # the warm-up compiles
    peer, ours = [], []
    for _ in range(repeats):
      peer.append(run_peer(binary, street))
      ours.append(solving.solve(game, algorithm))
    # Iterations alone: ours without the checks' exact evaluations (with the final policy's layout),
    # the peer's `solve_step`s. With the checks: both whole loops, each check included.
    alone = [o.seconds / p['iteration_seconds'] for o, p in zip(ours, peer, strict=True)]
    whole = [(o.seconds + o.check_seconds) / p['seconds'] for o, p in zip(ours, peer, strict=True)]
    print(
      json.dumps(
        {
          'street': street,
          'seconds': statistics.median(o.seconds for o in ours),
          'peer_iteration_seconds': statistics.median(p['iteration_seconds'] for p in peer),
          'ratio': statistics.median(alone),
          'ratios': [round(r, 3) for r in alone],
          'seconds_with_checks': statistics.median(o.seconds + o.check_seconds for o in ours),
          'peer_seconds_with_checks': statistics.median(p['seconds'] for p in peer),
          'ratio_with_checks': statistics.median(whole),
          'ratios_with_checks': [round(r, 3) for r in whole],
          'iterations': ours[0].iterations,
          'peer_iterations': peer[0]['iterations'],
          'exploitability_pct': ours[0].exploitability_pct,
          'peer_exploitability_pct': peer[0]['exploitability_pct'],
          'memory_bytes': ours[0].memory_bytes,
          'peer_memory_bytes': peer[0]['memory_bytes'],
        }
      )
    )


def gamma_study(gammas: list[float], rivers: int, turns: int) -> None:
  """DCFR's iterations to 0.5% of the pot per gamma, spot by spot, then the mean per street."""
  rng = np.random.default_rng(1)
  full = ranges.parse_range(FULL)
  for street, count, size in (('river', rivers, 5), ('turn', turns, 4)):
    counts = {gamma: [] for gamma in gammas}
    for _ in range(count):
      board = ''.join(cards.card_text(int(c)) for c in rng.choice(52, size, replace=False))
      weights = [rng.random(1326) * (rng.random(1326) < 0.6) for _ in range(2)] if size == 5 else [full, full]
      game = subgame.build_subgame(config(board), cards.parse_board(board), weights)
      for gamma in gammas:
        counts[gamma].append(solving.solve(game, 'dcfr', iterations=300, gamma=gamma).iterations)
      print(json.dumps({'street': street, 'board': board, 'iterations': [counts[g][-1] for g in gammas]}))
    if count:
      means = {str(gamma): statistics.mean(counts[gamma]) for gamma in gammas}
      print(json.dumps({'street': street, 'spots': count, 'mean_iterations': means}))


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--batch', type=int, default=100, help='river spots solved in one call (0: none)')
  parser.add_argument('--algorithm', default='dcfr')
  parser.add_argument('--skip-turn', action='store_true')
  parser.add_argument(
    '--compare',
    metavar='ALGORITHMS',
    help="only compare these algorithms on the river spot, e.g. 'dcfr,cfr+,pcfr+'",
  )
  parser.add_argument('--gammas', metavar='G,G', help="only count DCFR's iterations per gamma, e.g. '2,3'")
  parser.add_argument('--rivers', type=int, default=20, help='random river spots of --gammas (20)')
  parser.add_argument('--turns', type=int, default=4, help='random turn spots of --gammas (4)')
  parser.add_argument('--peer', metavar='BINARY', help="postflop-solver's binary, run side by side")
  parser.add_argument(
    '--showdown',
    choices=('auto', 'sweep', 'matrix'),
    default='auto',
    help="showdown values by the sorted sweep, the masked matrix product, or the backend's choice (auto)",
  )
  args = parser.parse_args()
  print(f'jax {jax.__version__}, backend {jax.default_backend()}, {jax.device_count()} device(s)')
  if args.gammas:
    gamma_study([float(g) for g in args.gammas.split(',')], args.rivers, args.turns)
    return
  if args.peer:
    side_by_side(args.peer, args.algorithm, args.repeats, args.skip_turn)
    return
  if args.compare:
    for name in args.compare.split(','):
      river = measure('Td9d6hQc3s', name, args.repeats, args.showdown)
      print(json.dumps({'algorithm': name, 'iterations': river['iterations'], 'seconds': river['seconds']}))
    return
  results = {'river': measure('Td9d6hQc3s', args.algorithm, args.repeats, args.showdown)}
  print(json.dumps(results['river']))
  if args.batch > 0:
    results['batch'] = batch(
      'Td9d6hQc3s', args.batch, results['river']['iterations'], args.algorithm, args.showdown
    )
    print(json.dumps(results['batch']))
  if not args.skip_turn:
    results['turn'] = measure('Td9d6hQc', args.algorithm, args.repeats, args.showdown)
    print(json.dumps(results['turn']))
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  print(f'peak resident memory of this process: {peak:.0f} MB')


if __name__ == '__main__':
  main()
