"""`jaxcfr subgame --spots FILE`: many spots in one process, one JSON line each, bad lines reported
by number while the others solve."""

from __future__ import annotations

import json

from cli_runner import run_cli

GOOD = {'board': 'Td9d6hQc3s', 'pot': 200, 'stack': 900, 'oop_range': 'QQ+,AK', 'ip_range': 'JJ+,AQ+'}


def test_spots_solve_in_one_process_and_bad_lines_are_named(tmp_path):
  spots = tmp_path / 'spots.jsonl'
  lines = ['', json.dumps({**GOOD, 'bets': '33%,a'}), json.dumps({**GOOD, 'pot': 'lots'}), '{"board": ']
  spots.write_text('\n'.join(lines) + '\n')
  out_file = tmp_path / 'out.jsonl'
  code, out, err = run_cli(
    'subgame', '--spots', str(spots), '--bets', '50%', '--raises', '', '--iterations', '20',
    '--json', str(out_file), '--quiet',
  )  # fmt: skip
  assert code == 2  # some lines were bad
  assert 'Traceback' not in err
  assert 'line 3: pot must be a whole number' in err and 'line 4: not JSON' in err
  results = [json.loads(line) for line in out_file.read_text().splitlines()]
  assert [r['line'] for r in results] == [2]
  assert (
    results[0]['spot']['bets'] == '33%,a' and results[0]['spot']['raises'] == ''
  )  # the line's, the flag's
  assert results[0]['iterations'] == 20 and results[0]['exploitability_pct'] >= 0
  # The same spot alone gives the same answer.
  code, out, err = run_cli(
    'subgame', '--board', GOOD['board'], '--pot', '200', '--stack', '900', '--oop-range', GOOD['oop_range'],
    '--ip-range', GOOD['ip_range'], '--bets', '33%,a', '--raises', '', '--iterations', '20', '--json', '-',
  )  # fmt: skip
  assert code == 0, err
  alone = json.loads(out)
  assert alone['ev'] == results[0]['ev'] and alone['exploitability'] == results[0]['exploitability']


def test_spots_take_no_single_spot_flags(tmp_path):
  spots = tmp_path / 'spots.jsonl'
  spots.write_text(json.dumps(GOOD) + '\n')
  code, out, err = run_cli('subgame', '--spots', str(spots), '--board', 'AsKsQs')
  assert code == 2 and 'drop --board' in err
  code, out, err = run_cli('subgame', '--spots', str(tmp_path / 'missing.jsonl'))
  assert code == 2 and 'cannot read' in err
