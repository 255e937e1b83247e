"""An exported bot on each Chipzen tier's resources: its directory's size and zipped size, and the bot
itself (`python -u bot.py`, in an environment of its requirements alone) playing a Chipzen match server
on localhost (tests/support/chipzen_server.py: an always-calling opponent, stacks reset every hand)
pinned to one core (`taskset -c 0`), its memory capped at the tier's (`prlimit --as`), and at the
Free tier sharing that core with a busy process (half a core). Reports per tier the sizes, the peak
resident memory (`/usr/bin/time`), the seconds from the bot's start to its connection (Chipzen wants
a hello within about 15), and the decision times as the server saw them (request to answer: median,
p99, max), each against its limit less the 25% margin (at Free the p99 against half the clock).

    jaxcfr bot export bp-300.npz --out bot-free/ --tier free
    python experiments/export_tiers.py --bot free=bot-free/ --python /tmp/czv/bin/python --hands 300
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'support'))

from chipzen_server import ChipzenServer  # noqa: E402

from jaxcfr.poker.tables import export  # noqa: E402


def run_tier(tier: export.Tier, bot: str, python: str, hands: int, seed: int) -> dict:
  """Sizes, peak memory and decision times of the bot directory `bot` on `tier`'s resources."""
  sizes = export.measure(bot)
  server = ChipzenServer(hands, (50, 100), 0, 20_000, tier.decision_ms, seed, reset=True)
  busy = None
  if tier.cores < 1:  # half a core: the bot shares core 0 with a process that never sleeps
    busy = subprocess.Popen(['taskset', '-c', '0', python, '-c', 'while True: pass'])
  memory = tier.memory_mb * 2**20
  env = {**os.environ, 'OPENBLAS_NUM_THREADS': '1', 'OMP_NUM_THREADS': '1'}
  try:
    with server.running() as url:
      command = ['/usr/bin/time', '-f', 'maxrss_kb=%M', 'taskset', '-c', '0', 'prlimit', f'--as={memory}']
      command += [python, '-u', 'bot.py']
      started = time.monotonic()
      done = subprocess.run(
        command, cwd=bot, env={**env, 'CHIPZEN_WS_URL': url, 'CHIPZEN_TOKEN': 'local'},
        capture_output=True, text=True, check=False, timeout=3600,
      )  # fmt: skip
      seconds = time.monotonic() - started
  finally:
    if busy is not None:
      busy.kill()
  found = re.search(r'maxrss_kb=(\d+)', done.stderr)
  latency = np.array(server.latencies_ms or [np.nan])
  clock = tier.decision_ms * (0.5 if tier.cores < 1 else 1.0)
  peak_mb = int(found.group(1)) / 1024 if found else None
  p99, mb = float(np.percentile(latency, 99)), 2**20
  return {
    'tier': tier.name, 'exit_status': done.returncode, 'hands': len(server.results),
    'decisions': server.decisions, 'invalid_or_late': len(server.errors), 'seconds': round(seconds, 1),
    'connect_seconds': None if server.connected_at is None else round(server.connected_at - started, 2),
    'uncompressed_mb': round(sizes['uncompressed_bytes'] / mb, 2),
    'compressed_mb': round(sizes['compressed_bytes'] / mb, 2), 'upload_limit_mb': tier.upload_mb,
    'peak_memory_mb': None if peak_mb is None else round(peak_mb, 1), 'memory_limit_mb': tier.memory_mb,
    'decision_ms': {'median': float(np.median(latency)), 'p99': p99, 'max': float(latency.max())},
    'clock_ms': tier.decision_ms, 'p99_bound_ms': clock * (1 - export.MARGIN),
    'within_margin': {
      'upload': sizes['compressed_bytes'] <= tier.upload_mb * mb * (1 - export.MARGIN),
      'memory': peak_mb is not None and peak_mb <= tier.memory_mb * (1 - export.MARGIN),
      'p99': p99 <= clock * (1 - export.MARGIN),
      'max': float(latency.max()) <= tier.decision_ms * (1 - export.MARGIN),
    },
    'bot_errors': done.stderr.strip().splitlines()[-3:],
  }  # fmt: skip


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument(
    '--bot', action='append', required=True, metavar='TIER=DIR', help='an exported bot per tier'
  )
  parser.add_argument('--python', default=sys.executable, help="the bot's Python (its requirements alone)")
  parser.add_argument('--hands', type=int, default=200)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--json')
  args = parser.parse_args()
  reports = []
  for item in args.bot:
    name, _, directory = item.partition('=')
    reports.append(
      run_tier(export.TIERS[name], os.path.abspath(directory), args.python, args.hands, args.seed)
    )
    print(json.dumps(reports[-1]), flush=True)
  if args.json:
    with open(args.json, 'x') as f:
      json.dump(reports, f, indent=1)


if __name__ == '__main__':
  main()
