"""Native games against OpenSpiel, compiled sizes, the spec registry and known game values.

OpenSpiel (`pyspiel`) is the oracle for rules and information-state strings; the tests that need it
skip when it is not installed, the rest run without it.
"""

import jax
import numpy as np
import pytest

import jaxcfr
from jaxcfr.games import parse_spec
from jaxcfr.games.kuhn import KuhnPoker
from jaxcfr.games.leduc import LeducPoker
from jaxcfr.games.liars_dice import LiarsDice
from jaxcfr.games.matrix import MatrixGame

# (native spec, OpenSpiel game string) for the same game.
TWINS = [
  ('kuhn', 'kuhn_poker'),
  ('kuhn(players=3)', 'kuhn_poker(players=3)'),
  ('leduc', 'leduc_poker'),
  ('leduc(suit_isomorphism=True)', 'leduc_poker(suit_isomorphism=True)'),
  ('liars_dice(dice_sides=3)', 'liars_dice(dice_sides=3)'),
  ('leduc(players=3)', 'leduc_poker(players=3)'),
  ('liars_dice', 'liars_dice'),
]
# Small enough to walk every history; the others (leduc(players=3) has 1.8M) are sampled.
EXHAUSTIVE = TWINS[:5]
SAMPLED = [TWINS[2], TWINS[5], TWINS[6]]
NUM_TRAJECTORIES = 300


def twin(spiel_spec):
  pyspiel = pytest.importorskip('pyspiel')
  return pyspiel.load_game(spiel_spec)


def assert_same_history(native, spiel, num_players, path):
  """Every observable of one history agrees; `path` (actions from the root) names it on failure."""
  where = f'after actions {path}'
  assert native.is_terminal() == spiel.is_terminal(), where
  assert native.is_chance_node() == spiel.is_chance_node(), where
  assert native.current_player() == spiel.current_player(), where
  if native.is_terminal():
    assert native.returns() == pytest.approx(spiel.returns(), abs=1e-12), where
    return
  assert list(native.legal_actions()) == list(spiel.legal_actions()), where
  if native.is_chance_node():
    native_actions, native_probs = zip(*native.chance_outcomes(), strict=True)
    spiel_actions, spiel_probs = zip(*spiel.chance_outcomes(), strict=True)
    assert native_actions == spiel_actions, where
    assert native_probs == pytest.approx(spiel_probs, abs=1e-12), where
    return
  assert native.returns() == pytest.approx([0.0] * num_players), where
  for p in range(num_players):
    assert native.information_state_string(p) == spiel.information_state_string(p), f'{where}, player {p}'


@pytest.mark.parametrize('native_spec,spiel_spec', EXHAUSTIVE)
def test_every_history_matches_openspiel(native_spec, spiel_spec):
  spiel_game = twin(spiel_spec)
  game = jaxcfr.load_game(native_spec)
  assert game.num_players() == spiel_game.num_players()
  assert game.num_distinct_actions() == spiel_game.num_distinct_actions()
  stack = [(game.new_initial_state(), spiel_game.new_initial_state(), ())]
  while stack:
    native, spiel, path = stack.pop()
    assert_same_history(native, spiel, game.num_players(), path)
    if not native.is_terminal():
      stack.extend((native.child(a), spiel.child(a), path + (a,)) for a in native.legal_actions())


@pytest.mark.parametrize('native_spec,spiel_spec', SAMPLED)
def test_random_trajectories_match_openspiel(native_spec, spiel_spec):
  spiel_game = twin(spiel_spec)
  game = jaxcfr.load_game(native_spec)
  rng = np.random.default_rng(20240601)
  for _ in range(NUM_TRAJECTORIES):
    native, spiel, path = game.new_initial_state(), spiel_game.new_initial_state(), ()
    assert_same_history(native, spiel, game.num_players(), path)
    while not native.is_terminal():
      action = int(rng.choice(native.legal_actions()))
      native, spiel, path = native.child(action), spiel.child(action), path + (action,)
      assert_same_history(native, spiel, game.num_players(), path)


@pytest.mark.parametrize('spec', ['kuhn', 'kuhn(players=3)', 'leduc', 'liars_dice(dice_sides=2)', 'rps'])
def test_child_leaves_the_parent_unchanged(spec):
  game = jaxcfr.load_game(spec)
  state = game.new_initial_state()
  while not state.is_terminal():
    before = [state.current_player(), list(state.legal_actions())]
    if not state.is_chance_node():
      before.append([state.information_state_string(p) for p in range(game.num_players())])
    children = [state.child(a) for a in state.legal_actions()]
    after = [state.current_player(), list(state.legal_actions())]
    if not state.is_chance_node():
      after.append([state.information_state_string(p) for p in range(game.num_players())])
    assert after == before
    state = children[-1]


@pytest.mark.parametrize('spec', ['kuhn', 'kuhn(players=3)', 'leduc', 'liars_dice(dice_sides=2)', 'rps'])
def test_terminals_have_no_legal_actions(spec):
  """As in OpenSpiel, whose `legal_actions()` is empty at a terminal."""
  game = jaxcfr.load_game(spec)
  state = game.new_initial_state()
  while not state.is_terminal():
    state = state.child(state.legal_actions()[-1])
  assert list(state.legal_actions()) == []


# Sizes.


@pytest.mark.parametrize(
  'spec,histories,infosets',
  [
    ('kuhn', 58, 12),
    ('leduc', 9_457, 936),
    ('leduc(suit_isomorphism=True)', 1_939, 288),
    ('rps', 13, 2),
    pytest.param('liars_dice', 294_883, 24_576, marks=pytest.mark.slow),
  ],
)
def test_compiled_sizes(spec, histories, infosets):
  compiled = jaxcfr.compile_game(spec)
  assert compiled.num_histories == histories
  assert compiled.num_infosets == infosets
  assert len(set(compiled.infoset_keys)) == infosets


@pytest.mark.parametrize('sides', [2, 3, 4])
def test_liars_dice_sizes_follow_the_bid_count(sides):
  """Two players, one die each: 2S bids. A bidding sequence is an increasing run of bids (2^(2S) of
  them, each a decision) or a non-empty one ended by Liar (2^(2S) - 1 terminals), under each of S^2
  rolls; each decision is an infoset for one roll of the actor's die. Six sides gives 294,883 / 24,576.
  """
  sequences = 2 ** (2 * sides)
  compiled = jaxcfr.compile_game(f'liars_dice(dice_sides={sides})')
  assert compiled.num_histories == 1 + sides + sides**2 * (sequences + sequences - 1)
  assert compiled.num_infosets == sides * sequences


@pytest.mark.parametrize(
  'native_spec,spiel_spec',
  [
    ('kuhn', 'kuhn_poker'),
    ('leduc', 'leduc_poker'),
    ('leduc(suit_isomorphism=True)', 'leduc_poker(suit_isomorphism=True)'),
  ],
)
def test_infoset_keys_are_openspiel_information_states(native_spec, spiel_spec):
  policy_lib = pytest.importorskip('open_spiel.python.policy')
  tabular = policy_lib.TabularPolicy(twin(spiel_spec))
  compiled = jaxcfr.compile_game(native_spec)
  assert set(compiled.infoset_keys) == set(tabular.state_lookup)


def test_openspiel_bridge_compiles_the_same_tree():
  twin('kuhn_poker')
  native = jaxcfr.compile_game('kuhn')
  bridged = jaxcfr.compile_game('openspiel:kuhn_poker')
  assert (bridged.num_histories, bridged.num_infosets) == (native.num_histories, native.num_infosets)
  assert set(bridged.infoset_keys) == set(native.infoset_keys)


# Specs and the registry.


@pytest.mark.parametrize(
  'spec,name,params',
  [
    ('leduc', 'leduc', {}),
    ('leduc()', 'leduc', {}),
    (' kuhn(players=3) ', 'kuhn', {'players': 3}),
    ('leduc(suit_isomorphism=True)', 'leduc', {'suit_isomorphism': True}),
    ('leduc(suit_isomorphism=true)', 'leduc', {'suit_isomorphism': True}),
    ('leduc(players=3, suit_isomorphism=false)', 'leduc', {'players': 3, 'suit_isomorphism': False}),
    ('liars_dice(dice_sides=6)', 'liars_dice', {'dice_sides': 6}),
    ('matrix(payoffs=[[1,-1],[-1,1]])', 'matrix', {'payoffs': [[1, -1], [-1, 1]]}),
  ],
)
def test_parse_spec(spec, name, params):
  assert parse_spec(spec) == (name, params)


def test_load_game_reads_parameters():
  leduc = jaxcfr.load_game('leduc(suit_isomorphism=True)')
  assert isinstance(leduc, LeducPoker) and leduc.suit_isomorphism and leduc.players == 2
  assert jaxcfr.load_game('leduc(suit_isomorphism=true)').suit_isomorphism
  assert not jaxcfr.load_game('leduc(suit_isomorphism=false)').suit_isomorphism
  dice = jaxcfr.load_game('liars_dice(dice_sides=6)')
  assert isinstance(dice, LiarsDice) and dice.dice_sides == 6 and dice.num_distinct_actions() == 13
  assert jaxcfr.load_game('liars_dice(dice_sides=3)').num_distinct_actions() == 7
  matrix = jaxcfr.load_game('matrix(payoffs=[[1,-1],[-1,1]])')
  assert isinstance(matrix, MatrixGame)
  np.testing.assert_array_equal(matrix.row_payoffs, [[1, -1], [-1, 1]])
  np.testing.assert_array_equal(matrix.column_payoffs, [[-1, 1], [1, -1]])
  assert jaxcfr.load_game('kuhn(players=3)').num_players() == 3


def test_aliases():
  assert isinstance(jaxcfr.load_game('kuhn_poker'), KuhnPoker)
  assert isinstance(jaxcfr.load_game('leduc_poker(players=3)'), LeducPoker)
  assert jaxcfr.load_game('leduc_poker(players=3)').num_players() == 3
  assert str(jaxcfr.load_game('rock_paper_scissors')) == 'rps'


@pytest.mark.parametrize(
  'spec,name',
  [
    ('kuhn', 'kuhn'),
    ('kuhn_poker(players=3)', 'kuhn(players=3)'),
    ('leduc(players=2, suit_isomorphism=false)', 'leduc'),
    ('leduc(suit_isomorphism=true)', 'leduc(suit_isomorphism=True)'),
    ('leduc(players=3)', 'leduc(players=3)'),
    ('liars_dice(dice_sides=6)', 'liars_dice'),
    ('liars_dice(dice_sides=3)', 'liars_dice(dice_sides=3)'),
    ('matrix(payoffs=[[1,-1],[-1,1]])', 'matrix(payoffs=[[1.0,-1.0],[-1.0,1.0]])'),
    ('rps', 'rps'),
  ],
)
def test_name_is_a_spec_for_the_same_game(spec, name):
  game = jaxcfr.load_game(spec)
  assert str(game) == name
  assert str(jaxcfr.load_game(name)) == name


def test_load_game_passes_games_through():
  game = KuhnPoker()
  assert jaxcfr.load_game(game) is game


@pytest.mark.parametrize(
  'spec,words',
  [
    ('poker', ['unknown game', "'poker'", 'kuhn', 'leduc']),
    ('leduc(', ['malformed', "'leduc('"]),
    ('leduc(3)', ['malformed', 'key=value']),
    ('leduc(x=)', ['malformed', "'leduc(x=)'"]),
    ('leduc(players=3, players=4)', ['malformed', 'distinct']),
    ('leduc(players=two)', ['malformed', "'two' is not a value"]),
    ('', ['malformed']),
    ('leduc(foo=1)', ['unknown parameter', 'foo']),
    ('rps(payoffs=[[1]])', ['unknown parameter', 'payoffs']),
    ('leduc(players=0)', ['players', '2 to 10', '0']),
    ('leduc(players=1.5)', ['players', 'integer', '1.5']),
    ('kuhn(players=11)', ['players', '2 to 10', '11']),
    ('kuhn(players=True)', ['players', 'integer']),
    ('leduc(suit_isomorphism=2)', ['suit_isomorphism', 'true or false', '2']),
    ('liars_dice(dice_sides=1)', ['dice_sides', '1']),
    ('liars_dice(players=3)', ['players', '3']),
    ('matrix(payoffs=[[1,2],[3]])', ['payoffs', 'rows']),
    ('matrix(payoffs=[])', ['payoffs', 'non-empty']),
    ('matrix(payoffs=[1,2])', ['payoffs', '2-D']),
    ('matrix(payoffs=[[1,2]], column_payoffs=[[1],[2]])', ['column_payoffs', 'shape']),
  ],
)
def test_bad_specs_raise_game_error(spec, words):
  with pytest.raises(jaxcfr.GameError) as error:
    jaxcfr.load_game(spec)
  for word in words:
    assert word in str(error.value)


def test_game_error_is_a_value_error():
  assert issubclass(jaxcfr.GameError, ValueError)


@pytest.mark.parametrize(
  'spec,message',
  [
    ('leduc(foo=1)', "leduc: unknown parameter 'foo' (parameters: players=2, suit_isomorphism=false)"),
    (
      'leduc(player=3)',
      "leduc: unknown parameter 'player', did you mean 'players'? "
      '(parameters: players=2, suit_isomorphism=false)',
    ),
    ('kuhn(foo=1)', "kuhn: unknown parameter 'foo' (parameters: players=2)"),
    ('kuhn_poker(foo=1)', "kuhn_poker: unknown parameter 'foo' (parameters: players=2)"),
    (
      'liars_dice(num_dice=2)',
      "liars_dice: unknown parameter 'num_dice', did you mean 'numdice'? "
      '(parameters: players=2, numdice=1, dice_sides=6)',
    ),
    (
      'matrix(foo=1)',
      "matrix: unknown parameter 'foo' (parameters: payoffs=[[0,-1,1],[1,0,-1],[-1,1,0]], column_payoffs)",
    ),
    # `name` is MatrixGame's keyword for Python callers (rps, matching_pennies), not a spec parameter.
    (
      "matrix(name='x')",
      "matrix: unknown parameter 'name' (parameters: payoffs=[[0,-1,1],[1,0,-1],[-1,1,0]], column_payoffs)",
    ),
    ('rps(payoffs=[[1]])', "rps: unknown parameter 'payoffs' (rps takes no parameters)"),
    (
      'matching_pennies(x=1)',
      "matching_pennies: unknown parameter 'x' (matching_pennies takes no parameters)",
    ),
  ],
)
def test_unknown_parameters_are_named_with_the_games_parameters(spec, message):
  with pytest.raises(jaxcfr.GameError) as error:
    jaxcfr.load_game(spec)
  assert str(error.value) == message


def test_parameters_lists_what_a_spec_may_set():
  from jaxcfr.games import REGISTRY, parameters

  assert parameters('leduc') == {'players': 2, 'suit_isomorphism': False}
  assert parameters('leduc_poker') == parameters('leduc')
  assert parameters('liars_dice') == {'players': 2, 'numdice': 1, 'dice_sides': 6}
  assert list(parameters('matrix')) == ['payoffs', 'column_payoffs']
  assert parameters('rps') == {}
  for name in ('kuhn', 'leduc', 'liars_dice', 'matrix'):  # the listed defaults are the defaults
    defaults = {k: v for k, v in parameters(name).items() if v is not None}
    assert str(REGISTRY[name].factory(**defaults)) == str(jaxcfr.load_game(name))


def test_the_command_line_reports_an_unknown_parameter(capsys):
  from jaxcfr import cli

  assert cli.main(['solve', 'leduc(foo=1)']) == 2
  error = capsys.readouterr().err
  assert "unknown parameter 'foo'" in error and 'players=2, suit_isomorphism=false' in error


# Known values of exact policies. Jitted: one XLA program per game instead of one per operation.

expected_values = jax.jit(jaxcfr.expected_values)
best_response_values = jax.jit(jaxcfr.best_response_values)
nash_conv = jax.jit(jaxcfr.nash_conv)


def profile(compiled, rows):
  """`[I, A]` policy from {information-state key: action probabilities} (unlisted actions: 0)."""
  policy = np.zeros((compiled.num_infosets, compiled.num_actions), np.float32)
  for key, probs in rows.items():
    policy[compiled.infoset_keys.index(key), : len(probs)] = probs
  assert set(rows) == set(compiled.infoset_keys)
  return policy


def test_rock_paper_scissors_uniform_is_worth_zero():
  compiled = jaxcfr.compile_game('rps')
  uniform = profile(compiled, {'player 0': [1 / 3] * 3, 'player 1': [1 / 3] * 3})
  np.testing.assert_allclose(expected_values(compiled, uniform), [0, 0], atol=1e-6)
  np.testing.assert_allclose(nash_conv(compiled, uniform), 0, atol=1e-6)


def test_rock_paper_scissors_pure_profile():
  compiled = jaxcfr.compile_game('rps')
  paper_vs_rock = profile(compiled, {'player 0': [0, 1, 0], 'player 1': [1, 0, 0]})
  np.testing.assert_allclose(expected_values(compiled, paper_vs_rock), [1, -1], atol=1e-6)
  # Against rock, the row player's best response (paper) gains 1; the column player's (paper) gains 2.
  rock_vs_rock = profile(compiled, {'player 0': [1, 0, 0], 'player 1': [1, 0, 0]})
  np.testing.assert_allclose(best_response_values(compiled, rock_vs_rock), [1, 1], atol=1e-6)
  np.testing.assert_allclose(nash_conv(compiled, rock_vs_rock), 2, atol=1e-6)


def test_general_sum_matrix_game_mixed_profile():
  row_payoffs = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, -1.0]])
  column_payoffs = np.array([[2.0, 0.0, 4.0], [0.0, 3.0, -2.0]])
  compiled = jaxcfr.compile_game(
    f'matrix(payoffs={row_payoffs.tolist()}, column_payoffs={column_payoffs.tolist()})'
  )
  assert (compiled.num_histories, compiled.num_infosets, compiled.num_actions) == (1 + 2 + 6, 2, 3)
  row, column = np.array([0.25, 0.75]), np.array([0.5, 0.125, 0.375])
  policy = profile(compiled, {'player 0': row, 'player 1': column})
  # u_i = row^T U_i column.
  expected = [row @ row_payoffs @ column, row @ column_payoffs @ column]
  np.testing.assert_allclose(expected_values(compiled, policy), expected, atol=1e-6)
  # Best responses: max over pure rows of U_0 column, max over pure columns of row^T U_1.
  best = [(row_payoffs @ column).max(), (row @ column_payoffs).max()]
  np.testing.assert_allclose(best_response_values(compiled, policy), best, atol=1e-6)


def test_battle_of_the_sexes_mixed_equilibrium():
  """Row mixes (3/5, 2/5), column (2/5, 3/5); each then earns 6/5 and gains nothing by deviating."""
  compiled = jaxcfr.compile_game('matrix(payoffs=[[3,0],[0,2]], column_payoffs=[[2,0],[0,3]])')
  policy = profile(compiled, {'player 0': [3 / 5, 2 / 5], 'player 1': [2 / 5, 3 / 5]})
  np.testing.assert_allclose(expected_values(compiled, policy), [6 / 5, 6 / 5], atol=1e-6)
  np.testing.assert_allclose(nash_conv(compiled, policy), 0, atol=1e-6)


def test_kuhn_equilibrium_is_worth_minus_one_eighteenth():
  """Kuhn's equilibrium family at alpha = 0 (cards 0 = J, 1 = Q, 2 = K; p = pass, b = bet)."""
  compiled = jaxcfr.compile_game('kuhn')
  third = 1 / 3
  policy = profile(
    compiled,
    {
      # Player 0 opens: J and Q check, K checks (alpha = 0 means K never bets first either).
      '0': [1, 0],
      '1': [1, 0],
      '2': [1, 0],
      # Player 0 facing a bet after checking: J folds, Q calls 1/3 + alpha, K calls.
      '0pb': [1, 0],
      '1pb': [1 - third, third],
      '2pb': [0, 1],
      # Player 1 facing a check: J bluffs 1/3, Q checks, K bets.
      '0p': [1 - third, third],
      '1p': [1, 0],
      '2p': [0, 1],
      # Player 1 facing a bet: J folds, Q calls 1/3, K calls.
      '0b': [1, 0],
      '1b': [1 - third, third],
      '2b': [0, 1],
    },
  )
  np.testing.assert_allclose(expected_values(compiled, policy), [-1 / 18, 1 / 18], atol=1e-6)
  np.testing.assert_allclose(nash_conv(compiled, policy), 0, atol=1e-6)
