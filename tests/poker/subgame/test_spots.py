"""`jaxcfr subgame --spots FILE`: many spots in one process, one JSON line each, bad lines reported
by number while the others solve."""

from __future__ import annotations

import json

import pytest
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
  # --spots pads the hands with hands of weight 0 (shared shapes): float32 sums in another order.
  assert results[0]['ev'] == {k: pytest.approx(v, rel=1e-6) for k, v in alone['ev'].items()}
  assert results[0]['exploitability'] == pytest.approx(alone['exploitability'], rel=1e-4, abs=1e-6)


def test_a_spots_file_is_jaxcfrs_to_replace_and_quiet_runs_print_no_line_a_spot(tmp_path):
  """Each result line starts with jaxcfr's mark, so --force replaces a file an earlier run wrote (and
  nothing replaces it without); --quiet leaves out the line a spot, not the closing one."""
  spots, out_file = tmp_path / 'spots.jsonl', tmp_path / 'out.jsonl'
  spots.write_text(json.dumps(GOOD) + '\n')
  flags = ('subgame', '--spots', str(spots), '--iterations', '10', '--json', str(out_file))
  code, out, err = run_cli(*flags)
  assert code == 0 and 'line 1: 10 iterations' in out, err
  assert json.loads(out_file.read_text())['producer'] == 'jaxcfr'
  code, out, err = run_cli(*flags)
  assert code == 2 and 'pass --force' in err
  code, out, err = run_cli(*flags, '--force', '--quiet')
  assert code == 0 and 'line 1:' not in out + err and '1 spots written' in out, err


def test_a_spot_over_the_memory_limit_is_refused_by_line(tmp_path):
  """--max-memory holds for the spots solved natively too: a line over it is named, the rest solve."""
  spots = tmp_path / 'spots.jsonl'
  big = {**GOOD, 'board': 'Td9d6hQc', 'oop_range': '22+,A2+,K2+', 'ip_range': '22+,A2+,K2+'}
  spots.write_text(json.dumps(GOOD) + '\n' + json.dumps(big) + '\n')
  code, out, err = run_cli('subgame', '--spots', str(spots), '--iterations', '10', '--max-memory', '0.01')
  assert code == 2 and err.count('error') == 1 and 'line 2: ' in err and 'over the limit' in err, err
  assert '"line": 1' in out and '"line": 2' not in out


def test_spots_take_no_single_spot_flags(tmp_path):
  spots = tmp_path / 'spots.jsonl'
  spots.write_text(json.dumps(GOOD) + '\n')
  code, out, err = run_cli('subgame', '--spots', str(spots), '--board', 'AsKsQs')
  assert code == 2 and 'drop --board' in err
  code, out, err = run_cli('subgame', '--spots', str(tmp_path / 'missing.jsonl'))
  assert code == 2 and 'cannot read' in err


@pytest.mark.slow  # the default suite's 10 minutes
def test_padded_hands_share_shapes_and_change_no_value():
  """`hands_multiple` (what --spots uses): spots on two boards get the same hand count, a multiple of
  it, and the same pytree structure, and each solves to the values of its unpadded spot (the
  padding hands weigh 0)."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415
  import numpy as np  # noqa: PLC0415

  from jaxcfr.poker.subgame import solving  # noqa: PLC0415

  shapes = []  # per board: (hands, pytree structure)
  for board in ('Td9d6hQc3s', '2c7d8hKsAs'):
    spec = solving.SpotSpec(board, 200, 900, (GOOD['oop_range'], GOOD['ip_range']), '50%,a', '')
    plain, padded = spec.build(jnp.float64), spec.build(jnp.float64, hands_multiple=32)
    assert padded.num_hands % 32 == 0 and padded.num_hands > plain.num_hands
    shapes.append((padded.num_hands, jax.tree.structure(padded)))
  assert shapes[0] == shapes[1]  # one shape: one compiled program
  # The last board's values (the default suite's minutes: each solve compiles its own programs).
  results = [solving.solve(g, target_pct=None, iterations=30, dtype=jnp.float64) for g in (plain, padded)]
  assert results[0].exploitability > 1e-3
  np.testing.assert_allclose(results[1].exploitability, results[0].exploitability, rtol=1e-9)
  np.testing.assert_allclose(results[1].ev, results[0].ev, rtol=1e-9)


def test_spots_of_one_shape_share_compiled_programs_and_solve_as_alone():
  """`solve(programs=)`, as --spots uses it: the second spot of a shape takes the first's compiled
  programs (one entry in the dict) and solves to what it solves to alone."""
  import numpy as np  # noqa: PLC0415

  from jaxcfr.poker.subgame import solving  # noqa: PLC0415

  ranges = (GOOD['oop_range'], GOOD['ip_range'])
  specs = [solving.SpotSpec(board, 200, 900, ranges, '50%,a', '') for board in ('Td9d6hQc3s', '2c7d8hKsAs')]
  games = [spec.build(hands_multiple=64) for spec in specs]
  programs = {}
  first, second = (solving.solve(g, target_pct=None, iterations=25, programs=programs) for g in games)
  alone = solving.solve(games[1], target_pct=None, iterations=25)
  assert len(programs) == 1 and first.exploitability > 0
  assert second.iterations == alone.iterations == 25
  np.testing.assert_allclose(second.exploitability, alone.exploitability, rtol=1e-6)
  np.testing.assert_allclose(second.ev, alone.ev, rtol=1e-6)


def test_a_donated_state_too_large_to_copy_skips_the_warm_up(monkeypatch):
  """A blocked turn subgame's iterations take the state donated; over `WARM_UP_COPY_BYTES` the run
  skips its warm-up calls (which would copy the state) and solves to the same values."""
  import jax.numpy as jnp  # noqa: PLC0415
  import numpy as np  # noqa: PLC0415

  from jaxcfr import training  # noqa: PLC0415
  from jaxcfr.poker.rules import cards  # noqa: PLC0415
  from jaxcfr.poker.subgame import game as subgame  # noqa: PLC0415
  from jaxcfr.poker.subgame import solving  # noqa: PLC0415
  from jaxcfr.poker.subgame.tree import TreeConfig, street_sizes  # noqa: PLC0415

  deck = cards.Deck(4, 3)
  config = TreeConfig(2, 60, 120, (street_sizes('50%', 'a'),) * 3, deck_size=deck.size)
  rng = np.random.default_rng(3)
  board = tuple(int(c) for c in rng.choice(deck.cards, 4, replace=False))
  ranges = [rng.random(1326) for _ in range(2)]
  game = subgame.build_subgame(config, board, ranges, deck, jnp.float64, blocks=True, range_hands=True)
  assert game.blocks is not None and subgame.Subgame.donate_state
  calls = []
  donated = training._donated
  monkeypatch.setattr(training, '_donated', lambda *args: calls.append(int(args[-1])) or donated(*args))
  warm = solving.solve(game, target_pct=None, iterations=12, eval_every=4)
  assert calls[:2] == [1, 1] and sum(calls[2:]) == 12  # two warm-up calls, then the run's
  calls.clear()
  monkeypatch.setattr(training, 'WARM_UP_COPY_BYTES', 0)
  cold = solving.solve(game, target_pct=None, iterations=12, eval_every=4)
  assert sum(calls) == 12 and cold.exploitability > 0
  np.testing.assert_allclose(cold.exploitability, warm.exploitability, rtol=1e-9)
  np.testing.assert_allclose(cold.ev, warm.ev, rtol=1e-9)


@pytest.mark.slow  # the default suite's minutes: --batch is off by default (CPU); its CLI runs below
def test_river_spots_of_one_shape_solve_together_as_alone():
  """`solve_many` (`--spots --batch`): spots of one shape in one vmapped call stop at the same checks
  with the same values as alone (float64), each at its own iteration count."""
  import jax.numpy as jnp  # noqa: PLC0415
  import numpy as np  # noqa: PLC0415

  from jaxcfr.poker.subgame import solving  # noqa: PLC0415

  ranges = (GOOD['oop_range'], GOOD['ip_range'])
  boards = ('Td9d6hQc3s', '2c7d8hKsAs', '3c4d9hJsQd')
  games = [
    solving.SpotSpec(b, 200, 900, ranges, '50%,a', '').build(jnp.float64, hands_multiple=64) for b in boards
  ]
  assert len({solving.batch_key(g) for g in games}) == 1
  together = solving.solve_many(games, target_pct=0.4, iterations=200)
  alone = [solving.solve(g, target_pct=0.4, iterations=200, dtype=jnp.float64) for g in games]
  assert len({r.iterations for r in alone}) > 1  # the spots stop at different checks
  for batch, one in zip(together, alone, strict=True):
    assert batch.iterations == one.iterations and batch.exploitability_pct <= 0.4
    assert [c['iteration'] for c in batch.curve] == [c['iteration'] for c in one.curve]
    np.testing.assert_allclose(batch.exploitability, one.exploitability, rtol=1e-9)
    np.testing.assert_allclose(batch.ev, one.ev, rtol=1e-9)
  with pytest.raises(ValueError, match='one shape'):
    solving.solve_many([games[0], solving.SpotSpec(boards[0], 200, 900, ranges, 'a', '').build()])


def test_spots_batch_on_the_command_line(tmp_path):
  """--batch: the river spots of one shape in one call (`solve_many`, equal to one by one: above),
  each written with its line, in the file's order."""
  spots = tmp_path / 'spots.jsonl'
  boards = ('Td9d6hQc3s', '2c7d8hKsAs', '3c4d9hJsQd')
  spots.write_text(''.join(json.dumps({**GOOD, 'board': b}) + '\n' for b in boards))
  out_file = tmp_path / 'out.jsonl'
  code, out, err = run_cli(
    'subgame', '--spots', str(spots), '--bets', '50%', '--raises', '', '--iterations', '30',
    '--target', '0', '--json', str(out_file), '--quiet', '--batch',
  )  # fmt: skip
  assert code == 0, err
  results = [json.loads(line) for line in out_file.read_text().splitlines()]
  assert [r['line'] for r in results] == [1, 2, 3] and {r['iterations'] for r in results} == {30}
  assert len({r['ev']['oop'] for r in results}) == 3 and all(r['exploitability_pct'] < 2 for r in results)
  code, _, err = run_cli('subgame', '--board', 'Td9d6hQc3s', '--pot', '200', '--stack', '900',
                         '--oop-range', 'QQ+', '--ip-range', 'JJ+', '--batch')  # fmt: skip
  assert code == 2 and 'give --spots' in err


def test_a_study_pads_spots_on_every_board_to_one_shape():
  """`SpotSpec.study_hands` (what --spots pads to): the ranges' hands before any board, rounded up, so
  that boards that remove different numbers of the ranges' hands still give one shape (one compile),
  where each board's own count rounded up gives two."""
  from jaxcfr import training  # noqa: PLC0415
  from jaxcfr.poker.subgame import solving  # noqa: PLC0415

  ranges = (GOOD['oop_range'], GOOD['ip_range'])  # 56 hands before a board
  specs = [solving.SpotSpec(board, 200, 900, ranges, '50%,a', '') for board in ('Td9d6hQc3s', 'AsKsQs2c3d')]
  assert [spec.build(hands_multiple=16).num_hands for spec in specs] == [64, 48]
  assert [spec.study_hands(16) for spec in specs] == [64, 64]
  games = [spec.build(hands_multiple=spec.study_hands(16)) for spec in specs]
  assert training.shape_signature(games[0]) == training.shape_signature(games[1])
