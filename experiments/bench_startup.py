"""Where the time goes between launching `jaxcfr solve` and its first solving iteration.

Runs `jaxcfr solve GAME --iterations N --json -` in fresh processes (the game and
compilation caches in `--cache-dir`, kept between runs: a first run fills them and the
next ones hit them) with a probe that stamps the wall clock at each step: the
interpreter up, `import jax`, `import jaxcfr.cli`, loading the game object (OpenSpiel's
import), the cache key (the source digest), reading the entry, the digest check,
decoding onto the device, the solver's JIT compilation, the up-front evaluations, and
the start of solving (the end of `training.median_seconds`, the last step before the
loop). "Launch to solving" is measured from just before the process is started;
"excluding JIT" subtracts the run's `jit_seconds`.

    python experiments/bench_startup.py --game 'openspiel:leduc_poker(players=3)' --runs 4
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

_PROBE = r"""
import json, sys, time
marks = [('python', time.time())]
def mark(name):
  marks.append((name, time.time()))
import jax
mark('import jax')
import jaxcfr.cli as cli
mark('import jaxcfr.cli')
from jaxcfr import game_cache, training

def wrap(module, name, label):
  original = getattr(module, name)
  def wrapped(*args, **kwargs):
    mark(label + ' start')
    try:
      return original(*args, **kwargs)
    finally:
      mark(label)
  setattr(module, name, wrapped)

for name in ('load_game', 'cache_key', 'load', '_digest', '_decode', '_read'):
  if hasattr(game_cache, name):
    wrap(game_cache, name, 'game_cache.' + name)
wrap(training, 'median_seconds', 'evaluations (solving starts)')
try:
  code = cli.main(sys.argv[1:])
finally:
  print('PROBE ' + json.dumps(marks), file=sys.stderr)
sys.exit(code)
"""


def run_once(game: str, iterations: int, cache_dir: str, extra: list[str]) -> dict:
  env = dict(os.environ, JAXCFR_CACHE_DIR=cache_dir)
  command = [sys.executable, '-c', _PROBE, 'solve', game, '--iterations', str(iterations), '--json', '-']
  launch = time.time()
  done = subprocess.run(command + extra, capture_output=True, text=True, env=env, check=False)
  end = time.time()
  if done.returncode != 0:
    raise SystemExit(f'run failed ({done.returncode}):\n{done.stderr[-3000:]}')
  report = json.loads(done.stdout)
  marks = json.loads(done.stderr.split('PROBE ', 1)[1].splitlines()[0])
  return {'launch': launch, 'end': end, 'marks': marks, 'report': report}


def timeline(result: dict) -> list[tuple[str, float]]:
  """(step, seconds since launch) for the first occurrence of each mark's end."""
  seen, rows = set(), []
  for name, stamp in result['marks']:
    if name == 'game_cache._digest start':
      name = 'game_cache: read and inflated (the digest starts)'
    elif name.endswith(' start') or name in seen:
      continue
    seen.add(name)
    rows.append((name, stamp - result['launch']))
  return rows


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--game', default='openspiel:leduc_poker(players=3)')
  parser.add_argument('--iterations', type=int, default=10)
  parser.add_argument('--runs', type=int, default=3, help='runs after the first (cache-filling) one')
  parser.add_argument('--cache-dir', help='cache directory (default: a fresh temporary one)')
  parser.add_argument('--keep-first', action='store_true', help='the cache is warm already: no filling run')
  parser.add_argument('extra', nargs='*', help='more `jaxcfr solve` flags (after --)')
  args = parser.parse_args()
  cache_dir = args.cache_dir or tempfile.mkdtemp(prefix='jaxcfr-startup-')
  print(f'{args.game}; cache {cache_dir}; load {os.getloadavg()}')
  if not args.keep_first:
    first = run_once(args.game, args.iterations, cache_dir, args.extra)
    report = first['report']
    print(
      f'first run: game_cache {report["game_cache"]}, compile {report["compile_seconds"]:.2f} s, '
      f'whole command {first["end"] - first["launch"]:.1f} s; game {report["game_bytes"] / 1e6:.1f} MB '
      f'({report["bytes_per_history"]:.1f} B/history)'
    )
  results = [run_once(args.game, args.iterations, cache_dir, args.extra) for _ in range(args.runs)]
  statuses = {r['report']['game_cache'] for r in results}
  print(f'{args.runs} more runs: game_cache {statuses}; load {os.getloadavg()}')
  steps = [name for name, _ in timeline(results[0])]
  print('| step | seconds since launch (median) | runs |')
  print('| --- | ---: | --- |')
  for step in steps:
    times = [dict(timeline(r)).get(step) for r in results]
    times = [t for t in times if t is not None]
    print(f'| {step} | {statistics.median(times):.2f} | {", ".join(f"{t:.2f}" for t in times)} |')
  starts = [dict(timeline(r))['evaluations (solving starts)'] for r in results]
  jit = [r['report']['jit_seconds'] for r in results]
  excluding = [s - j for s, j in zip(starts, jit, strict=True)]
  print(
    f'launch to solving: {statistics.median(starts):.2f} s; JIT {statistics.median(jit):.2f} s; '
    f'excluding JIT: {statistics.median(excluding):.2f} s ({", ".join(f"{t:.2f}" for t in excluding)}); '
    f'loaded in {statistics.median(r["report"]["compile_seconds"] for r in results):.2f} s; '
    f'evaluation {statistics.median(r["report"]["evaluation_seconds"] for r in results):.2f} s; '
    f'whole command {statistics.median(r["end"] - r["launch"] for r in results):.2f} s; '
    f'load {os.getloadavg()}'
  )


if __name__ == '__main__':
  main()
