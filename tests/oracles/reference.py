"""A tiny recursive CFR-family reference over game states, in float64 NumPy.

Written as the textbook recursion (OpenSpiel's `cfr.py` shape) so tests can
check the array solvers against it without OpenSpiel installed.
"""

from __future__ import annotations

import numpy as np

# (alpha, beta, gamma) of the discounted rules.
DEFAULTS = {'dcfr': (1.5, 0.0, 2.0), 'dcfr+': (1.5, None, 4.0), 'pdcfr+': (2.3, None, 5.0)}

# The constant in DCFR+'s discount (t - 1)^alpha / ((t - 1)^alpha + 1.5), as the authors' code has it.
DCFR_PLUS_OFFSET = 1.5


class ReferenceCFR:
  """CFR, CFR+, LCFR, DCFR, PCFR+, DCFR+ and PDCFR+ by recursion over `game`'s states.

  Regrets and averages are dicts keyed by information-state string, arrays of
  length `num_actions` over action ids. DCFR+ and PDCFR+ follow Xu et al.
  (2024) and their code: at iteration t the previous regret is discounted by
  (t - 1)^alpha / ((t - 1)^alpha + c) before r^t is added and the sum clipped
  at 0; PDCFR+ then plays regret matching on R^t t^alpha / (t^alpha + 1) + r^t.
  """

  def __init__(self, game, rule: str, alternating: bool = True, alpha=None, beta=None, gamma=None):
    self.game = game
    self.rule = rule
    self.alternating = alternating
    defaults = DEFAULTS.get(rule, (None, None, None))
    given = (alpha, beta, gamma)
    self.alpha, self.beta, self.gamma = (d if v is None else v for v, d in zip(given, defaults, strict=True))
    self.num_players = game.num_players()
    self.num_actions = game.num_distinct_actions()
    self.regret: dict[str, np.ndarray] = {}
    self.average: dict[str, np.ndarray] = {}
    self.prediction: dict[str, np.ndarray] = {}
    self.updated: dict[str, int] = {}  # the iteration of each infoset's latest update
    self.legal: dict[str, list[int]] = {}
    self.owner: dict[str, int] = {}
    self.iteration = 0
    self._discover(game.new_initial_state())

  def _discover(self, state) -> None:
    if state.is_terminal():
      return
    if state.is_chance_node():
      for action, _ in state.chance_outcomes():
        self._discover(state.child(action))
      return
    player = state.current_player()
    key = state.information_state_string(player)
    if key not in self.regret:
      self.regret[key] = np.zeros(self.num_actions)
      self.average[key] = np.zeros(self.num_actions)
      self.prediction[key] = np.zeros(self.num_actions)
      self.updated[key] = 0
      self.legal[key] = list(state.legal_actions())
      self.owner[key] = player
    for action in state.legal_actions():
      self._discover(state.child(action))

  def _kept(self, t: int, offset: float = 1.0) -> float:
    """The share t^alpha / (t^alpha + offset) of the regret that the iteration after t keeps."""
    return t**self.alpha / (t**self.alpha + offset)

  def policy(self, key: str) -> np.ndarray:
    regret = self.regret[key]
    if self.rule == 'pcfr+':
      regret = regret + self.prediction[key]
    if self.rule == 'pdcfr+':
      regret = regret * self._kept(self.updated[key]) + self.prediction[key]
    legal = self.legal[key]
    positive = np.zeros(self.num_actions)
    positive[legal] = np.maximum(regret[legal], 0)
    if positive.sum() > 0:
      return positive / positive.sum()
    uniform = np.zeros(self.num_actions)
    uniform[legal] = 1 / len(legal)
    return uniform

  def next_regret(self, key: str) -> np.ndarray:
    """The regret the next iteration adds r to: DCFR+'s and PDCFR+'s discounted R^t."""
    if self.rule == 'dcfr+':
      return self.regret[key] * self._kept(self.updated[key], DCFR_PLUS_OFFSET)
    if self.rule == 'pdcfr+':
      return self.regret[key] * self._kept(self.updated[key])
    return self.regret[key]

  def average_policy(self, key: str) -> np.ndarray:
    weights = self.average[key]
    if weights.sum() > 0:
      return weights / weights.sum()
    uniform = np.zeros(self.num_actions)
    uniform[self.legal[key]] = 1 / len(self.legal[key])
    return uniform

  def _walk(self, state, reach: np.ndarray, players, policies, instant, contributions) -> np.ndarray:
    """Returns the utility vector of `state`; accumulates regrets of `players`."""
    if state.is_terminal():
      return np.asarray(state.returns(), np.float64)
    if state.is_chance_node():
      value = np.zeros(self.num_players)
      for action, p in state.chance_outcomes():
        child_reach = reach.copy()
        child_reach[-1] *= p
        value += p * self._walk(state.child(action), child_reach, players, policies, instant, contributions)
      return value
    player = state.current_player()
    key = state.information_state_string(player)
    sigma = policies[key]
    children = {}
    value = np.zeros(self.num_players)
    for action in self.legal[key]:
      child_reach = reach.copy()
      child_reach[player] *= sigma[action]
      children[action] = self._walk(
        state.child(action), child_reach, players, policies, instant, contributions
      )
      value += sigma[action] * children[action]
    if player in players:
      others = np.prod(np.delete(reach, player))
      for action in self.legal[key]:
        instant[key][action] += others * (children[action][player] - value[player])
      contributions[key] += reach[player] * sigma
    return value

  def iterate(self) -> None:
    self.iteration += 1
    t = self.iteration
    groups = [[p] for p in range(self.num_players)] if self.alternating else [list(range(self.num_players))]
    if self.rule in DEFAULTS:
      weight = t**self.gamma
    else:
      weight = {'cfr': 1.0, 'cfr+': t, 'lcfr': t, 'pcfr+': t**2}[self.rule]
    for players in groups:
      policies = {key: self.policy(key) for key in self.regret}
      instant = {key: np.zeros(self.num_actions) for key in self.regret}
      contributions = {key: np.zeros(self.num_actions) for key in self.regret}
      self._walk(
        self.game.new_initial_state(),
        np.ones(self.num_players + 1),
        players,
        policies,
        instant,
        contributions,
      )
      for key in self.regret:
        if self.owner[key] not in players:
          continue
        self.average[key] += weight * contributions[key]
        r = instant[key] * (t if self.rule == 'lcfr' else 1)
        if self.rule == 'dcfr+':
          regret = np.maximum(self.regret[key] * self._kept(t - 1, DCFR_PLUS_OFFSET) + r, 0)
        elif self.rule == 'pdcfr+':
          regret = np.maximum(self.regret[key] * self._kept(t - 1) + r, 0)
        else:
          regret = self.regret[key] + r
        if self.rule in ('cfr+', 'pcfr+'):
          regret = np.maximum(regret, 0)
        if self.rule == 'dcfr':
          regret = (
            np.where(regret > 0, t**self.alpha / (t**self.alpha + 1), t**self.beta / (t**self.beta + 1))
            * regret
          )
        self.regret[key] = regret
        self.prediction[key] = instant[key]
        self.updated[key] = t
