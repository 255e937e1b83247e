"""The OpenSpiel bridge: any OpenSpiel game compiles, solves and exports a
policy that OpenSpiel itself evaluates to the same NashConv."""

import json
import subprocess
import sys

import jax
import numpy as np
import pytest
from cli_runner import run_cli
from conftest import compiled, solve

import jaxcfr
from jaxcfr import policies

pyspiel = pytest.importorskip('pyspiel')
from open_spiel.python import policy as policy_lib  # noqa: E402
from open_spiel.python.algorithms import exploitability as os_exploitability  # noqa: E402

from jaxcfr.games import openspiel as bridge  # noqa: E402

# (game string, what it covers)
SUITE = [
  ('kuhn_poker', 'poker'),
  ('leduc_poker(suit_isomorphism=True)', 'poker'),
  ('liars_dice(dice_sides=3)', 'dice'),
  ('goofspiel(num_cards=3)', 'card game, simultaneous moves'),
  ('oshi_zumo(coins=4,size=1,horizon=3)', 'simultaneous moves'),
  ('kuhn_poker(players=3)', '3 players'),
  ('first_sealed_auction(max_value=3)', 'general-sum, simultaneous, chance'),
  ('sheriff(max_bribe=1,max_items=1)', 'general-sum'),
  ('matrix_bos', 'general-sum matrix game'),
  ('tiny_hanabi', 'identical interest'),
  ('dark_hex(board_size=2)', 'imperfect-information board game'),
]


@pytest.mark.parametrize('game_string,kind', SUITE)
def test_exported_policy_has_the_same_nash_conv_in_openspiel(game_string, kind, tmp_path):
  game = compiled(f'openspiel:{game_string}')
  solver = jaxcfr.cfr_plus()
  policy = jaxcfr.average_policy(solve(solver, game, 60), game)
  ours = float(jaxcfr.nash_conv(game, policy))
  path = tmp_path / 'policy.json'
  policies.save_json(str(path), game, policy, game=game.name, algorithm='cfr+', iterations=60)
  mapping, metadata = policies.load_json(str(path))
  assert metadata['game'] == f'openspiel:{game_string}'

  os_game = bridge.load(game_string).game
  tabular = policy_lib.TabularPolicy(os_game)
  assert set(mapping) == set(tabular.state_lookup)  # covers every information state, nothing else
  for key, pairs in mapping.items():
    row = tabular.state_lookup[key]
    tabular.action_probability_array[row] = 0
    for action, probability in pairs:
      tabular.action_probability_array[row, action] = probability
  assert ours == pytest.approx(os_exploitability.nash_conv(os_game, tabular), abs=1e-6), kind


@pytest.mark.parametrize('native,bridged', [('kuhn', 'kuhn_poker'), ('leduc', 'leduc_poker')])
def test_native_games_equal_their_bridged_twins(native, bridged):
  ours, theirs = compiled(native), compiled(f'openspiel:{bridged}')
  assert (ours.num_histories, ours.num_infosets) == (theirs.num_histories, theirs.num_infosets)
  assert ours.infoset_keys == theirs.infoset_keys
  solver = jaxcfr.dcfr()
  update = jax.jit(solver.update)
  exploitability = jax.jit(lambda s, g: jaxcfr.exploitability(g, jaxcfr.average_policy(s, g)))
  state_ours, state_theirs = solver.init(ours), solver.init(theirs)
  for _ in range(30):
    state_ours, state_theirs = update(state_ours, ours), update(state_theirs, theirs)
    assert float(exploitability(state_ours, ours)) == pytest.approx(
      float(exploitability(state_theirs, theirs)), abs=1e-12
    )


def test_tabular_policy_round_trip():
  game = compiled('openspiel:leduc_poker')
  policy = jaxcfr.average_policy(solve(jaxcfr.cfr_plus(), game, 20), game)
  tabular = bridge.to_tabular_policy(game, policy, bridge.load('leduc_poker'))
  np.testing.assert_allclose(bridge.from_tabular_policy(game, tabular), policy, atol=1e-15)


def test_policy_file_for_another_game_is_rejected(tmp_path):
  kuhn, leduc = compiled('kuhn'), compiled('leduc')
  path = tmp_path / 'kuhn.json'
  policies.save_json(str(path), kuhn, jaxcfr.average_policy(jaxcfr.cfr().init(kuhn), kuhn), game='kuhn')
  mapping, _ = policies.load_json(str(path))
  with pytest.raises(jaxcfr.GameError, match='does not cover'):
    policies.from_dict(leduc, mapping)
  np.testing.assert_allclose(policies.from_dict(kuhn, mapping), 0.5 * np.ones((12, 2)))


def test_cli_solves_an_openspiel_game_and_exports_its_policy(tmp_path):
  policy_path, json_path = tmp_path / 'policy.json', tmp_path / 'result.json'
  code, _, err = run_cli(
    'solve', 'openspiel:kuhn_poker(players=3)', '--algorithm', 'cfr+', '--iterations', '200',
    '--dtype', 'float64', '--policy-out', str(policy_path), '--json', str(json_path),
  )  # fmt: skip
  assert code == 0, err
  result = json.loads(json_path.read_text())
  assert result['num_players'] == 3
  assert result['exploitability'] == pytest.approx(result['nash_conv'] / 3)
  os_game = pyspiel.load_game('kuhn_poker(players=3)')
  mapping = json.loads(policy_path.read_text())['policy']
  assert pyspiel.nash_conv(os_game, {k: [tuple(p) for p in v] for k, v in mapping.items()}) == pytest.approx(
    result['nash_conv'], abs=1e-6
  )


@pytest.mark.parametrize(
  'spec,message',
  [
    ('openspiel:not_a_game', "Unknown game 'not_a_game'"),
    ('openspiel:leduc_poker(players=', 'Missing closing bracket'),
    ('openspiel:bridge_uncontested_bidding', 'sampled chance'),
    ('openspiel:catch', 'no information-state string'),
    ('openspiel:mfg_crowd_modelling', 'dynamics'),
  ],
)
def test_unsupported_openspiel_games_give_one_clear_message(spec, message):
  code, _, err = run_cli('solve', spec)
  assert code == 2
  assert err.count('\n') == 1 and message in err, err
  assert 'Traceback' not in err


def test_size_guard_stops_early_with_a_message():
  code, _, err = run_cli('solve', 'openspiel:liars_dice', '--max-histories', '1000')
  assert code == 2
  assert 'more than 1,000 histories' in err and '--max-histories' in err


def test_missing_openspiel_gives_one_clear_message():
  code = (
    'import sys; sys.modules["pyspiel"] = None\n'  # makes `import pyspiel` fail
    'from jaxcfr import cli; sys.exit(cli.main(["solve", "openspiel:kuhn_poker"]))'
  )
  process = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
  assert process.returncode == 2
  assert 'OpenSpiel is not installed' in process.stderr and 'Traceback' not in process.stderr
