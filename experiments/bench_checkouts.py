"""CFR+ per iteration, exploitability and game bytes of two jaxcfr checkouts, side by side in one run.

For a change to the compiled layout (e.g. the sequence form's tables): each checkout runs in
its own fresh processes (`PYTHONPATH=CHECKOUT`, its own game cache under `--cache-dir`, so
each compiles once and then loads), alternating A, B, A, B over `--repeats` rounds so that
a busy machine slows both alike. A child times chunks of a compiled `jaxcfr.run` (CFR+,
float32, iterations traced) and reports the median ms/iteration, the game's bytes per
history, NashConv after `--iterations` iterations and one exact evaluation's time. The table
gives medians over rounds and the ratio B / A.

    python experiments/bench_checkouts.py --a ../main --b . --games 'leduc,openspiel:leduc_poker(players=3)'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def child(spec: str, iterations: int) -> None:
  """In the checkout's process: one JSON line of measurements."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  import jaxcfr  # noqa: PLC0415
  from jaxcfr import backend, game_cache, memory, protocol  # noqa: PLC0415

  game = game_cache.load_or_compile(spec, max_histories=None)[0]
  solver = jaxcfr.cfr_plus()
  state = solver.init(game)
  run = jax.jit(lambda s, g, n: protocol.run(solver, s, g, n), compiler_options=backend.compiler_options())
  run = run.lower(state, game, jnp.int32(1)).compile()

  def timed(n):
    start = time.perf_counter()
    jax.block_until_ready(run(state, game, jnp.int32(n)))
    return time.perf_counter() - start

  timed(1)
  chunk = max(1, int(0.3 / max(timed(3) / 3, 1e-7)))
  ms = statistics.median(timed(chunk) / chunk * 1e3 for _ in range(5))
  final = jax.block_until_ready(run(state, game, jnp.int32(iterations)))
  nash_conv = jax.jit(lambda s, g: jaxcfr.nash_conv(g, jaxcfr.average_policy(s, g)))
  value = float(nash_conv(final, game))
  start = time.perf_counter()
  float(nash_conv(final, game))
  result = {
    'file': jaxcfr.__file__,
    'ms': ms,
    'bytes_per_history': memory.nbytes(game) / game.num_histories,
    'nash_conv': value,
    'evaluation_s': time.perf_counter() - start,
  }
  print(json.dumps(result))


def measure(checkout: str, spec: str, iterations: int, cache_dir: str) -> dict:
  checkout = os.path.abspath(checkout)
  env = dict(os.environ, PYTHONPATH=checkout, JAXCFR_CACHE_DIR=cache_dir)
  command = [sys.executable, os.path.abspath(__file__), '--child', spec, str(iterations)]
  done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=checkout, check=False)
  if done.returncode:
    raise SystemExit(f'{checkout} {spec} failed:\n{done.stderr[-3000:]}')
  return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--a', help='checkout A (the baseline)')
  parser.add_argument('--b', help='checkout B')
  parser.add_argument('--games', default='kuhn,leduc,openspiel:leduc_poker(players=3)')
  parser.add_argument('--iterations', type=int, default=100, help='CFR+ iterations before NashConv')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--cache-dir', help='game caches (default: a fresh temporary directory)')
  parser.add_argument('--child', nargs=2, metavar=('GAME', 'ITERATIONS'), help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    child(args.child[0], int(args.child[1]))
    return
  if not (args.a and args.b):
    parser.error('--a and --b are required')
  root = args.cache_dir or tempfile.mkdtemp(prefix='jaxcfr-checkouts-')
  caches = {'a': os.path.join(root, 'a'), 'b': os.path.join(root, 'b')}
  print(f'A = {args.a}, B = {args.b}; CFR+ float32; load {os.getloadavg()}')
  print('| game | A ms/iter | B ms/iter | B / A | B/history A, B | NashConv A, B | eval s A, B | load |')
  print('| --- | ---: | ---: | ---: | --- | --- | --- | --- |')
  for spec in args.games.split(';') if ';' in args.games else _split(args.games):
    for side in ('a', 'b'):  # fill each cache (compile) outside the timed rounds
      imported = measure(getattr(args, side), spec, 1, caches[side])['file']
      if not imported.startswith(os.path.abspath(getattr(args, side))):
        raise SystemExit(f'checkout {side.upper()} imported {imported}')
    rows = {'a': [], 'b': []}
    for _ in range(args.repeats):
      for side in ('a', 'b'):
        rows[side].append(measure(getattr(args, side), spec, args.iterations, caches[side]))
        time.sleep(0.5)
    med = {side: statistics.median(r['ms'] for r in rows[side]) for side in rows}
    a, b = rows['a'][0], rows['b'][0]
    print(
      f'| {spec} | {med["a"]:.4g} | {med["b"]:.4g} | {med["b"] / med["a"]:.3f} '
      f'| {a["bytes_per_history"]:.1f}, {b["bytes_per_history"]:.1f} '
      f'| {a["nash_conv"]:.6g}, {b["nash_conv"]:.6g} '
      f'| {a["evaluation_s"]:.3f}, {b["evaluation_s"]:.3f} | {os.getloadavg()[0]:.1f} |',
      flush=True,
    )


def _split(games: str) -> list[str]:
  """Comma-separated specs, commas inside parentheses kept."""
  parts, depth, current = [], 0, ''
  for char in games:
    if char == ',' and depth == 0:
      parts.append(current)
      current = ''
      continue
    depth += {'(': 1, ')': -1, '[': 1, ']': -1}.get(char, 0)
    current += char
  return [*parts, current] if current else parts


if __name__ == '__main__':
  main()
