"""The depth-aware bot, and push or fold at short stacks.

A policy plays hands of another depth through `jaxcfr.poker.rules.translation` (`at_rules`, `AtRules`,
re-exported here): each hand read into the policy's own game in big blinds, its answer read back.
`DepthAware` is the bot for every depth: below `push_fold_below` big blinds of effective stack it
plays the push-or-fold equilibrium (`PushFoldPlayer`: solved on demand, `solved`, as the `pushfold`
baseline does, or read from a `PushFoldTable` of solved depths, as an exported bot does), above it
the deep policy at the real depth. This module imports NumPy and the engine only (SciPy where it
solves): an exported bot runs it.

    policy = depth.at_rules(bots.resolve_policy('bp.npz'), NoLimitRules(50, 100, 1000))   # 10 bb
    bot = depth.DepthAware(bots.resolve_policy('bp.npz'))
    bot = depth.DepthAware([bots.resolve_policy(f) for f in ('bp-25bb.npz', 'bp-100bb.npz', 'bp.npz')])
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np

from jaxcfr.poker.rules import nlhe, ranges
from jaxcfr.poker.rules.translation import (  # noqa: F401 (re-exported: the depth-aware bot's callers use them)
  AtRules,
  any_depth,
  at_rules,
  built_for,
  model_states,
  real_actions,
  rules_of,
)

PUSH_FOLD_BELOW = 14.0  # big blinds of effective stack under which DepthAware pushes or folds (measured)


@dataclasses.dataclass(frozen=True)
class PushFoldPlayer:
  """Plays push-or-fold strategies at the table's depth (stack, blinds and ante of `state.rules`):
  `lookup(stack_bb, small_blind_bb, ante_bb)` gives (push, call) float [169] per class
  (`ranges.HAND_CLASSES`).
  As the small blind's first action it goes all-in with its class's push probability, else folds; at
  any other preflop decision it goes all-in (calls an all-in, raises all-in otherwise, a limp included)
  with its class's probability of calling a push, else folds (checks when free); after the flop,
  reached only when it checked a limp, it checks and folds to a bet."""

  lookup: Callable[[float, float, float], tuple[np.ndarray, np.ndarray]]
  name: str = 'pushfold'

  def strategy(self, state, holes):
    holes = np.asarray(holes)
    if holes.ndim != 3 or holes.shape[2] != 2:
      raise ValueError(f'holes must be [B, K, 2], got shape {holes.shape}')
    rules = state.rules
    big = rules.big_blind
    push, call = self.lookup(rules.stack / big, rules.small_blind / big, rules.ante / big)
    actions = nlhe.fold_call_raise(state, nlhe.legal(state).max_raise_to)
    classes = ranges.class_of_hands(holes)  # [B, K]
    opening = (state.street == 0) & (state.num_actions == 0)  # the small blind's first action
    all_in = np.where(opening[:, None], push[classes], call[classes])
    all_in = np.where((state.street == 0)[:, None], all_in, 0.0)  # [B, K]
    one_hot = lambda slot: (np.arange(3) == slot[:, None]).astype(np.float64)[:, None, :]  # [B, 1, 3]
    shove = one_hot(np.where(actions.valid[:, 2], 2, 1))  # raise all-in, else call
    give_up = one_hot(np.where(actions.valid[:, 0], 0, 1))  # fold, else check
    probs = all_in[..., None] * shove + (1 - all_in[..., None]) * give_up
    return actions, probs


@dataclasses.dataclass(frozen=True)
class PushFoldTable:
  """Push-or-fold strategies solved on a grid of depths and antes (one small blind, half a big blind
  by default): `lookup` answers with the grid's nearest ante (in big blinds, one big blind for more)
  and, at it, its nearest depth (the shallowest below the grid's first, the deepest above its last),
  for any small blind (a table of another ratio plays these strategies). A table saved without
  antes (before they were a dimension) is one of ante 0."""

  stacks: np.ndarray  # float64 [G], rising, big blinds
  push: np.ndarray  # float32 [N, G, 169] ([G, 169]: one ante, 0)
  call: np.ndarray  # float32, as `push`
  small_blind: float = 0.5
  antes: np.ndarray | None = None  # float64 [N], rising, big blinds; None: one, 0

  def __post_init__(self):
    if np.ndim(self.push) == 2:
      object.__setattr__(self, 'push', np.asarray(self.push)[None])
      object.__setattr__(self, 'call', np.asarray(self.call)[None])
    antes = np.zeros(1) if self.antes is None else np.asarray(self.antes, np.float64)
    object.__setattr__(self, 'antes', antes)
    if self.push.shape != (len(antes), len(self.stacks), 169) or self.call.shape != self.push.shape:
      raise ValueError(
        f'a push-or-fold table of {len(antes)} antes and {len(self.stacks)} depths holds [antes, depths, '
        f'169] strategies, got push {self.push.shape} and call {self.call.shape}'
      )

  def lookup(self, stack: float, small_blind: float, ante: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    grid = int(np.argmin(np.abs(self.antes - min(ante, 1.0))))
    row = int(np.argmin(np.abs(self.stacks - stack)))
    return self.push[grid, row].astype(np.float64), self.call[grid, row].astype(np.float64)

  def save(self, path: str) -> None:
    np.savez_compressed(
      path, stacks=self.stacks, push=self.push, call=self.call, small_blind=self.small_blind, antes=self.antes
    )

  @classmethod
  def load(cls, path: str) -> PushFoldTable:
    with np.load(path) as data:
      antes = data['antes'] if 'antes' in data.files else None
      return cls(data['stacks'], data['push'], data['call'], float(data['small_blind']), antes)


def solved(stack: float, small_blind: float, ante: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
  """(push, call) [169] of the equilibrium at this depth and ante, in big blinds (an ante over one big
  blind solved as one: the push-or-fold game's range; `jaxcfr.poker.pushfold.solve`, SciPy: not in an
  exported bot, which reads a `PushFoldTable`)."""
  from jaxcfr.poker import pushfold  # noqa: PLC0415

  solution = pushfold.solve(stack, min(ante, 1.0), small_blind)
  return solution.push, solution.call


# The antes an exported bot's push-or-fold table is solved at, in big blinds: none, the common eighth
# and quarter of a big blind, half, and one (what `solved` makes of larger ones).
PUSH_FOLD_ANTES = (0.0, 0.125, 0.25, 0.5, 1.0)


# The depths it is solved at, in big blinds: every tenth from 1 to 5, where the ranges change fastest,
# then every quarter up to `PUSH_FOLD_BELOW`.
_FINE, _COARSE = np.arange(1.0, 5.0, 0.1), np.arange(5.0, PUSH_FOLD_BELOW + 0.125, 0.25)
PUSH_FOLD_STACKS = tuple(float(x) for x in np.round(np.r_[_FINE, _COARSE], 6))


@functools.cache  # a process that exports several bots solves the grid once
def solved_table(
  stacks: tuple[float, ...] = PUSH_FOLD_STACKS, antes: tuple[float, ...] = PUSH_FOLD_ANTES
) -> PushFoldTable:
  """The equilibria (`jaxcfr.poker.pushfold.solve`, SciPy) at each of `stacks` and `antes` (big
  blinds). Its arrays are shared: copy them to change them."""
  from jaxcfr.poker import pushfold  # noqa: PLC0415

  stacks = np.asarray(stacks, np.float64)
  solutions = [[pushfold.solve(float(stack), float(ante)) for stack in stacks] for ante in antes]
  push = np.array([[s.push for s in row] for row in solutions], np.float32)
  call = np.array([[s.call for s in row] for row in solutions], np.float32)
  return PushFoldTable(stacks, push, call, antes=np.asarray(antes, np.float64))


@dataclasses.dataclass(frozen=True)
class DepthAware:
  """The push-or-fold equilibrium below `push_fold_below` big blinds of effective stack (`short`,
  default solved on demand: `PushFoldPlayer(solved)`, the `pushfold` baseline); from there up the deep
  policy (one, or several built for different depths: the one whose depth is nearest the effective
  stack, by ratio) at the real depth (`at_rules`)."""

  deep: object  # a policy or a sequence of them
  push_fold_below: float = PUSH_FOLD_BELOW
  short: object = None

  def __post_init__(self):
    policies = tuple(self.deep) if isinstance(self.deep, list | tuple) else (self.deep,)
    if not policies:
      raise ValueError('DepthAware needs at least one deep policy')
    object.__setattr__(self, 'deep', policies if len(policies) > 1 else policies[0])

  @property
  def policies(self) -> tuple:
    return self.deep if isinstance(self.deep, tuple) else (self.deep,)

  @property
  def name(self) -> str:
    return 'depth:' + ','.join(policy.name for policy in self.policies)

  def nearest(self, rules: nlhe.NoLimitRules):
    """The deep policy built for the depth nearest `rules`' (by ratio; one of any depth is exact)."""

    def distance(policy) -> float:
      own = built_for(policy)
      if own is None:
        return 0.0
      return abs(np.log((own.stack / own.big_blind) / (rules.stack / rules.big_blind)))

    return min(self.policies, key=distance)

  def strategy(self, state, holes):
    rules = state.rules
    if rules.stack / rules.big_blind < self.push_fold_below:
      return (self.short or PushFoldPlayer(solved)).strategy(state, holes)
    return at_rules(self.nearest(rules), rules).strategy(state, holes)
