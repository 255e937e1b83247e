"""How a sharded game and a full-width solver's state split over devices: bytes on each device
(`jax.Array.addressable_shards`) against the one-device total, and one iteration's time.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python experiments/shard_memory.py
    python experiments/shard_memory.py --games leduc,liars_dice --devices 4 --algorithm dcfr
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--games', default='kuhn,leduc,liars_dice')
  parser.add_argument('--devices', type=int, default=4)
  parser.add_argument('--algorithm', default='dcfr')
  parser.add_argument('--iterations', type=int, default=20)
  parser.add_argument('--split-levels', action='store_true', help='split the per-level tables too')
  args = parser.parse_args(argv)
  flags = os.environ.get('XLA_FLAGS', '')
  if 'xla_force_host_platform_device_count' not in flags:  # before JAX starts
    os.environ['XLA_FLAGS'] = f'{flags} --xla_force_host_platform_device_count={args.devices}'.strip()
  import jax  # noqa: PLC0415

  jax.config.update('jax_enable_x64', True)
  import numpy as np  # noqa: PLC0415

  import jaxcfr  # noqa: PLC0415
  from jaxcfr import sharding  # noqa: PLC0415

  solver = jaxcfr.make_solver(args.algorithm)
  run = jax.jit(jaxcfr.run, static_argnums=(0, 3))
  print(f'{args.devices} {jax.default_backend()} devices, {args.algorithm}, float64')
  header = f'{"game":<12}{"game MB":>9}{"MB/device":>11}{"state MB":>10}{"MB/device":>11}'
  print(f'{header}{"ms/it 1":>9}{"ms/it N":>9}{"max |diff|":>12}', file=sys.stdout)
  for name in args.games.split(','):
    game = jaxcfr.compile_game(name, dtype='float64')
    split = jaxcfr.shard_game(game, args.devices, split_levels=args.split_levels)
    states, times = [], []
    for g in (game, split):
      state = jaxcfr.shard_state(solver.init(g), g)
      jax.block_until_ready(run(solver, state, g, 1))  # compile
      start = time.perf_counter()
      states.append(jax.block_until_ready(run(solver, state, g, args.iterations)))
      times.append(1000 * (time.perf_counter() - start) / args.iterations)
    game_bytes = sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(game))
    state_bytes = sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(states[0]))
    per_device = max(sharding.bytes_per_device(split).values())
    state_per_device = max(sharding.bytes_per_device(states[1]).values())
    rows = game.num_infosets
    diff = np.abs(
      np.asarray(states[1].cumulative_regret)[:rows] - np.asarray(states[0].cumulative_regret)
    ).max()
    print(
      f'{name:<12}{game_bytes / 1e6:>9.3f}{per_device / 1e6:>11.3f}{state_bytes / 1e6:>10.3f}'
      f'{state_per_device / 1e6:>11.3f}{times[0]:>9.2f}{times[1]:>9.2f}{diff:>12.2e}'
    )


if __name__ == '__main__':
  main()
