"""A jaxcfr bot through the Chipzen SDK's own client (`jaxcfr chipzen run --url`) against a Chipzen
match server on 127.0.0.1 (tests/support/chipzen_server.py: the SDK's protocol over a real WebSocket,
an always-calling opponent, stacks reset every hand unless --carry-stacks, every answer checked):
decision times as the server saw them, answers that were not valid or late, and chips won.

    python experiments/chipzen_local.py search:bp-300.npz --hands 100 --timeout-ms 2000 --json out.json
    taskset -c 0 python experiments/chipzen_local.py bp-300.npz --hands 200 --timeout-ms 500

Prints one JSON object (also to --json): the bot, the table, decisions, invalid or late answers, the
latency median / p99 / max in ms, and mbb/hand against the calling bot (no confidence interval: a
smoke run, not a match).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'support'))

from chipzen_server import ChipzenServer  # noqa: E402


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('bot', help='a policy spec, as `jaxcfr chipzen run --bot` takes it')
  parser.add_argument('--hands', type=int, default=50)
  parser.add_argument('--timeout-ms', type=int, default=2000)
  parser.add_argument('--blinds', default='50,100')
  parser.add_argument('--ante', type=int, default=0)
  parser.add_argument('--stack', type=int, default=20_000)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--json')
  parser.add_argument(
    '--carry-stacks', action='store_true', help="stacks carry over (Chipzen's rule): a match may end early"
  )
  args, extra = parser.parse_known_args()  # the rest: `jaxcfr chipzen run` options
  blinds = tuple(int(x) for x in args.blinds.split(','))
  server = ChipzenServer(
    args.hands, blinds, args.ante, args.stack, args.timeout_ms, args.seed, reset=not args.carry_stacks
  )
  started = time.monotonic()
  with server.running() as url:
    command = [
      sys.executable,
      '-m',
      'jaxcfr.cli',
      'chipzen',
      'run',
      '--bot',
      args.bot,
      '--url',
      url,
      '--token',
      'local',
      *extra,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
  latencies = np.array(server.latencies_ms or [0.0])
  report = {
    'bot': args.bot, 'hands': len(server.results), 'blinds': blinds, 'ante': args.ante, 'stack': args.stack,
    'timeout_ms': args.timeout_ms, 'exit_status': done.returncode, 'decisions': server.decisions,
    'invalid_or_late': len(server.errors),
    'latency_ms': {
      'median': float(np.median(latencies)), 'p99': float(np.percentile(latencies, 99)),
      'max': float(latencies.max()),
    },
    'mbb_per_hand_vs_calling_bot': 1000 * float(np.mean(server.results or [0])) / blinds[1],
    'seconds': round(time.monotonic() - started, 1),
    'bot_output': done.stdout.strip().splitlines()[-2:],
    'bot_errors': done.stderr.strip().splitlines()[-3:],
  }  # fmt: skip
  text = json.dumps(report, indent=1)
  print(text)
  if args.json:
    with open(args.json, 'x') as f:
      f.write(text + '\n')


if __name__ == '__main__':
  main()
