"""CFR+ per iteration on a large game: jaxcfr against OpenSpiel's C++ `CFRPlusSolver`, in one run.

Both solvers start from scratch on the same game (default: the 2,271,795-history battleship).
The repeats alternate, so that a busy machine slows both alike: one timed chunk of jaxcfr
iterations (a compiled `jaxcfr.run`, about `--chunk-seconds` long), then
`--openspiel-iterations` timed iterations of OpenSpiel's solver
(`evaluate_and_update_policy`, each timed alone: one is seconds on this game). ms/iteration
is the median of each side's timings; the ratio is OpenSpiel's over jaxcfr's. jaxcfr's
compile (through the game cache), JIT and OpenSpiel's solver construction (its walk of the
tree) are reported apart, not timed as iterations.

The check that both solve the same game with the same algorithm: the exploitability of both
average policies after one iteration from scratch (`pyspiel.exploitability`, float64, slow on
this game; jaxcfr's own, in `--dtype`). Later iterates part ways by the rounding of exact
ties (see the comment in `main`; the tests hold jaxcfr's CFR+ to OpenSpiel's iteration for
iteration on Kuhn and Leduc). `--no-check` skips it.

    python experiments/bench_openspiel_cfr_large.py
    python experiments/bench_openspiel_cfr_large.py --game 'openspiel:leduc_poker' --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp

from jaxcfr import backend, evaluation, game_cache, protocol, solvers

BATTLESHIP = 'openspiel:battleship(board_height=3,board_width=2,ship_sizes=[2],ship_values=[1],num_shots=3)'


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--game', default=BATTLESHIP, help='an openspiel: spec')
  parser.add_argument('--repeats', type=int, default=5, help='alternating rounds (default 5)')
  parser.add_argument('--openspiel-iterations', type=int, default=1, help='OpenSpiel iterations a round')
  parser.add_argument('--chunk-seconds', type=float, default=1.0, help='about how long a jaxcfr chunk runs')
  parser.add_argument('--dtype', default='float32', choices=('float32', 'float64'))
  parser.add_argument('--no-check', action='store_true', help='skip the exploitability cross-check')
  args = parser.parse_args(argv)
  if not args.game.startswith('openspiel:'):
    parser.error('--game must be an openspiel: spec (OpenSpiel solves it too)')
  return args


def main(argv=None) -> None:
  args = parse_args(argv)
  if args.dtype == 'float64':
    jax.config.update('jax_enable_x64', True)
  import pyspiel  # noqa: PLC0415

  print(f'{args.game}; jax {jax.__version__} on {jax.default_backend()}; {os.cpu_count()} cores')
  print(f'load average at start {os.getloadavg()}')
  game, compile_seconds, hit = game_cache.load_or_compile(args.game, dtype=jnp.dtype(args.dtype))
  print(
    f'jaxcfr: {game.num_histories:,} histories, {game.num_infosets:,} infosets; '
    f'{"loaded from the game cache" if hit else "compiled"} in {compile_seconds:.1f} s'
  )
  solver = solvers.cfr_plus()
  start = time.perf_counter()
  state = solver.init(game)
  run = backend.jit(lambda s, g, n: protocol.run(solver, s, g, n))
  run = run.lower(state, game, jnp.int32(1)).compile()
  state = jax.block_until_ready(run(state, game, jnp.int32(1)))
  print(f'jaxcfr: JIT and one iteration {time.perf_counter() - start:.1f} s')

  open_game = pyspiel.load_game(args.game.removeprefix('openspiel:'))
  start = time.perf_counter()
  open_solver = pyspiel.CFRPlusSolver(open_game)
  print(f'OpenSpiel: CFRPlusSolver built in {time.perf_counter() - start:.1f} s')

  start = time.perf_counter()
  state = jax.block_until_ready(run(state, game, jnp.int32(3)))
  chunk = max(1, round(args.chunk_seconds / ((time.perf_counter() - start) / 3)))
  ours, theirs, loads = [], [], []
  for round_ in range(args.repeats):
    start = time.perf_counter()
    state = jax.block_until_ready(run(state, game, jnp.int32(chunk)))
    ours.append((time.perf_counter() - start) / chunk * 1e3)
    for _ in range(args.openspiel_iterations):
      start = time.perf_counter()
      open_solver.evaluate_and_update_policy()
      theirs.append((time.perf_counter() - start) * 1e3)
    loads.append(os.getloadavg()[0])
    print(
      f'round {round_ + 1}: jaxcfr {ours[-1]:.3g} ms/iteration ({chunk} iterations), '
      f'OpenSpiel {", ".join(f"{t:.0f}" for t in theirs[-args.openspiel_iterations :])} ms; '
      f'load {loads[-1]:.1f}'
    )
  mine, other = statistics.median(ours), statistics.median(theirs)
  done = args.repeats * args.openspiel_iterations
  print(
    f'\n| game | histories | jaxcfr CFR+ ms/iter ({args.dtype}) | OpenSpiel C++ CFRPlusSolver ms/iter '
    f'| ratio | OpenSpiel iterations | load |'
  )
  print('| --- | ---: | ---: | ---: | ---: | ---: | --- |')
  print(
    f'| {args.game} | {game.num_histories:,} | {mine:.3g} | {other:.4g} | {other / mine:.0f}x | {done} '
    f'| {min(loads):.1f}-{max(loads):.1f} |'
  )
  if args.no_check:
    return
  # The same first iteration; later ones part ways where regrets that are exactly 0 in exact
  # arithmetic come out as +-1e-17 on one side (battleship has many such ties): positive, such a
  # regret takes all of its infoset's next policy (regret matching), so both sides' iterates differ
  # from then on (as jaxcfr's over sequences and over histories do), by the rounding of ties.
  fresh = pyspiel.CFRPlusSolver(open_game)
  fresh.evaluate_and_update_policy()
  state = jax.block_until_ready(run(solver.init(game), game, jnp.int32(1)))
  exploitability = jax.jit(lambda s, g: evaluation.exploitability(g, solver.average_policy(s, g)))
  ours_value = float(exploitability(state, game))
  start = time.perf_counter()
  theirs_value = pyspiel.exploitability(open_game, fresh.average_policy())
  print(
    f'check after one iteration each: exploitability jaxcfr {ours_value:.6g}, OpenSpiel '
    f'{theirs_value:.6g} (difference {abs(ours_value - theirs_value):.2g}; pyspiel.exploitability took '
    f'{time.perf_counter() - start:.0f} s)'
  )


if __name__ == '__main__':
  main()
