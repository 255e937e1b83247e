"""A match on the real ACPC dealer: `jaxcfr acpc` against a second client, the dealer's log against
ours hand by hand. Prints the result as JSON.

    python experiments/acpc_match.py /opt/acpc/project_acpc_server/dealer --hands 1000 --bots equity random
    python experiments/acpc_match.py DEALER --bots equity example \
        --example-player /opt/acpc/project_acpc_server/example_player

The dealer (`project_acpc_server`'s `dealer`, built) plays `holdem.nolimit.2p.reverse_blinds` (jaxcfr's
`acpc.DEFAULT_GAME`, written to the run's directory) between players A and B, seats rotating every
hand; A is `jaxcfr acpc --bot BOTS[0]`, B is `jaxcfr acpc --bot BOTS[1]`, or the dealer's own
`example_player` (random actions) with `example`. Each jaxcfr client logs its hands (`--log`) and its
result (`--json`); afterwards each log is compared with the dealer's `.log` hand by hand (chips won
per hand) and with its final SCORE line, and the dealer's warnings (an invalid action it fixed) are
listed; the exit status is 0 only where every hand agreed and the dealer warned of nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jaxcfr.poker.tables import acpc  # noqa: E402


def run(dealer: str, hands: int, bots: list[str], seed: int, directory: str, example_player: str | None):
  """Plays the match in `directory`; returns the report (see the module)."""
  game = os.path.join(directory, 'holdem.nolimit.2p.reverse_blinds.game')
  with open(game, 'w') as file:
    file.write(acpc.DEFAULT_GAME)
  started = time.monotonic()
  server = subprocess.Popen(
    [dealer, 'match', game, str(hands), str(seed), 'A', 'B', '-q', '--start_timeout', '120000'],
    cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
  )  # fmt: skip
  ports = server.stdout.readline().split()
  if len(ports) != 2:
    server.kill()
    raise SystemExit(f'the dealer printed no ports: {server.stderr.read()}')
  clients, commands = [], []
  for name, port, bot in zip('AB', ports, bots, strict=True):
    if bot == 'example':
      command = [example_player, game, '127.0.0.1', port]
    else:
      command = [
        sys.executable,
        '-m',
        'jaxcfr.cli',
        'acpc',
        '127.0.0.1',
        port,
        '--bot',
        bot,
        '--seed',
        str(seed),
      ]
      command += ['--log', f'{name}.jsonl', '--json', f'{name}.json', '--quiet']
    commands.append(command)
    clients.append(
      subprocess.Popen(command, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    )
  try:
    finished = [client.wait(timeout=3600) for client in clients]
    errors = [client.stderr.read().strip() for client in clients]
    server.wait(timeout=60)
    dealer_stderr = server.stderr.read().splitlines()
  finally:
    for process in (server, *clients):
      if process.poll() is None:
        process.kill()
  seconds = time.monotonic() - started
  report = {
    'dealer': dealer,
    'hands': hands,
    'seed': seed,
    'bots': {'A': bots[0], 'B': bots[1]},
    'wall_seconds': seconds,
    'dealer_exit': server.returncode,
    # The dealer warns of every invalid action it had to fix (a raise resized, an action made a call).
    'dealer_warnings': [line for line in dealer_stderr if line.startswith(('WARNING', 'ERROR'))][:10],
    'clients': {},
  }
  log = os.path.join(directory, 'match.log')
  _, score = acpc.dealer_log(log)
  report['dealer_score'] = score
  for name, bot, code, error, command in zip('AB', bots, finished, errors, commands, strict=True):
    entry = {'bot': bot, 'exit': code, 'stderr': error[-500:], 'command': ' '.join(command)}
    if bot != 'example' and code == 0:
      result = json.load(open(os.path.join(directory, f'{name}.json')))
      entry['result'] = {
        key: result[key] for key in ('hands', 'chips', 'mbb_per_hand', 'ci95_low', 'ci95_high')
      }
      entry['result']['think_median_seconds'] = result['think_median_seconds']
      entry['log_vs_dealer'] = acpc.compare_logs(log, os.path.join(directory, f'{name}.jsonl'), name)
    report['clients'][name] = entry
  compared = [entry['log_vs_dealer'] for entry in report['clients'].values() if 'log_vs_dealer' in entry]
  report['every_hand_agreed'] = bool(compared) and all(
    c['hands'] == c['agree'] == hands and not c['missing'] and c['score'] == c['total'] for c in compared
  )
  return report


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('dealer', help="the built ACPC dealer (project_acpc_server's `dealer`)")
  parser.add_argument('--hands', type=int, default=1000)
  parser.add_argument('--bots', nargs=2, default=['equity', 'random'], metavar=('A', 'B'))
  parser.add_argument('--seed', type=int, default=1, help="the dealer's card seed and the bots' seed")
  parser.add_argument('--example-player', help="the dealer's example_player, for --bots A example")
  parser.add_argument('--dir', help='where the match runs and its logs stay (default: a temporary directory)')
  args = parser.parse_args()
  if 'example' in args.bots and not args.example_player:
    parser.error('--bots ... example needs --example-player')
  if args.dir:
    os.makedirs(args.dir, exist_ok=True)
    report = run(
      args.dealer, args.hands, args.bots, args.seed, os.path.abspath(args.dir), args.example_player
    )
  else:
    with tempfile.TemporaryDirectory(prefix='acpc-match-') as directory:
      report = run(args.dealer, args.hands, args.bots, args.seed, directory, args.example_player)
  print(json.dumps(report, indent=2))
  clean = report['every_hand_agreed'] and report['dealer_exit'] == 0 and not report['dealer_warnings']
  return 0 if clean else 1


if __name__ == '__main__':
  sys.exit(main())
