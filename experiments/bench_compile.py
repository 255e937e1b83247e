"""Compiling a game in one process against worker processes, side by side in one run.

Each (game, workers) compile runs in a fresh Python process (`jaxcfr.compile_game` with the
arrays on the device, as `timed_compile` reports), interleaved over `--repeats` rounds so that
a busy machine slows every variant alike; the table gives medians. Peak memory is the compiling
process's peak resident set (VmHWM), also as bytes per history over the peak of compiling an
empty game (Kuhn: Python, JAX and its CPU backend), and the largest worker's own peak (read
from /proc before the pool stops it; a forked child's rusage would count its parent's pages). The
fingerprints of all variants of a game must agree (the compiles are bit-identical; the tests
check every array).

    python experiments/bench_compile.py --games 'openspiel:leduc_poker' --repeats 1
    python experiments/bench_compile.py --games 'openspiel:leduc_poker(players=3)' --workers 1,2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--games', nargs='+', default=['openspiel:leduc_poker(players=3)'])
  parser.add_argument('--workers', default='1,2', help='worker counts, comma-separated (1: one process)')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--child', nargs=2, metavar=('GAME', 'WORKERS'), help=argparse.SUPPRESS)
  return parser.parse_args(argv)


def child(spec: str, workers: int) -> None:
  """Compiles once and prints one JSON line."""
  from jaxcfr import compiler, walker  # noqa: PLC0415

  worker_peaks = [0.0]
  close = walker.Pool.close

  def close_and_record(pool):  # each worker's own peak, read before the pool stops it
    for process in pool._processes:
      worker_peaks.append(_peak_mb(process.pid))
    close(pool)

  walker.Pool.close = close_and_record
  before = resource.getrusage(resource.RUSAGE_SELF)
  game, seconds = compiler.timed_compile(spec, workers=workers, max_histories=None)
  own, workers_used = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
  result = {
    'seconds': seconds,
    'cpu': own.ru_utime + own.ru_stime - before.ru_utime - before.ru_stime,  # this process's, compiling
    'worker_cpu': workers_used.ru_utime + workers_used.ru_stime,
    'peak_mb': _peak_mb('self'),
    'worker_peak_mb': max(worker_peaks),
    'histories': game.num_histories,
    'fingerprint': game.info.fingerprint,
  }
  print(json.dumps(result))


def _peak_mb(pid) -> float:
  """A process's peak resident set (VmHWM) in MB; 0 if it has ended."""
  try:
    with open(f'/proc/{pid}/status') as status:
      return int(status.read().split('VmHWM:')[1].split()[0]) / 1e3
  except (OSError, IndexError):
    return 0.0


def run(spec: str, workers: int) -> dict:
  command = [sys.executable, __file__, '--child', spec, str(workers)]
  output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
  return json.loads(output.strip().splitlines()[-1])


def main() -> None:
  args = parse_args()
  if args.child:
    child(args.child[0], int(args.child[1]))
    return
  counts = [int(w) for w in args.workers.split(',')]
  baseline = run('kuhn', 1)['peak_mb']
  print(f'empty-game baseline (kuhn): peak {baseline:.0f} MB; {os.cpu_count()} cores; load {os.getloadavg()}')
  for spec in args.games:
    results = {w: [] for w in counts}
    for _ in range(args.repeats):
      for w in counts:
        results[w].append(run(spec, w))
        time.sleep(1)
    first = results[counts[0]]
    histories = first[0]['histories']
    fingerprints = {r['fingerprint'] for rs in results.values() for r in rs}
    reference = statistics.median(r['seconds'] for r in first)
    print(f'\n{spec}: {histories:,} histories, fingerprints agree: {len(fingerprints) == 1}')
    print(
      '| workers | seconds (median) | runs | speed-up | CPU s: main + workers | peak RSS | over baseline '
      '| B/history | worker peak |'
    )
    print('| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for w in counts:
      seconds = statistics.median(r['seconds'] for r in results[w])
      peak = statistics.median(r['peak_mb'] for r in results[w])
      worker = max(r['worker_peak_mb'] for r in results[w])
      each = ', '.join(f'{r["seconds"]:.1f}' for r in results[w])
      cpu = statistics.median(r['cpu'] for r in results[w])
      worker_cpu = statistics.median(r['worker_cpu'] for r in results[w])
      print(
        f'| {w} | {seconds:.1f} s | {each} | {reference / seconds:.2f}x | {cpu:.1f} + {worker_cpu:.1f} '
        f'| {peak:.0f} MB | '
        f'{peak - baseline:.0f} MB | {(peak - baseline) * 1e6 / histories:.0f} | {worker:.0f} MB |'
      )


if __name__ == '__main__':
  main()
