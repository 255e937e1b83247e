"""A tiny recursive CFR-family reference over game states, in float64 NumPy.

Written as the textbook recursion (OpenSpiel's `cfr.py` shape) so tests can
check the array solvers against it without OpenSpiel installed.
"""

from __future__ import annotations

import numpy as np


class ReferenceCFR:
  """CFR, CFR+, LCFR, DCFR and PCFR+ by recursion over `game`'s states.

  Regrets and averages are dicts keyed by information-state string, arrays of
  length `num_actions` over action ids.
  """

  def __init__(self, game, rule: str, alternating: bool = True, alpha=1.5, beta=0.0, gamma=2.0):
    self.game = game
    self.rule = rule
    self.alternating = alternating
    self.alpha, self.beta, self.gamma = alpha, beta, gamma
    self.num_players = game.num_players()
    self.num_actions = game.num_distinct_actions()
    self.regret: dict[str, np.ndarray] = {}
    self.average: dict[str, np.ndarray] = {}
    self.prediction: dict[str, np.ndarray] = {}
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
      self.legal[key] = list(state.legal_actions())
      self.owner[key] = player
    for action in state.legal_actions():
      self._discover(state.child(action))

  def policy(self, key: str) -> np.ndarray:
    regret = self.regret[key] + (self.prediction[key] if self.rule == 'pcfr+' else 0)
    legal = self.legal[key]
    positive = np.zeros(self.num_actions)
    positive[legal] = np.maximum(regret[legal], 0)
    if positive.sum() > 0:
      return positive / positive.sum()
    uniform = np.zeros(self.num_actions)
    uniform[legal] = 1 / len(legal)
    return uniform

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
    weight = {'cfr': 1.0, 'cfr+': t, 'lcfr': t, 'dcfr': t**self.gamma, 'pcfr+': t**2}[self.rule]
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
