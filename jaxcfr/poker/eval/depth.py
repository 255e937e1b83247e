"""Policies at a depth they were not built for, and the depth-aware bot.

Every jaxcfr blueprint plays one game (`rules_of`: 50/100 blinds, 20,000 behind). `at_rules(policy,
rules)` lets it play hands of other blinds and stacks the way it plays at a real table
(`tables.seat`): each hand is read into the policy's own game in big blinds (`model_states`, batched),
and its answer is read back into the real hand (`real_actions`):

- amounts are scaled by the ratio of the big blinds; a raise the policy's game cannot make (under its
  minimum, as a real all-in for less is) is clamped into its raise range; a fold where nothing is to
  call is a check;
- the answer's raise is scaled back and clamped into the real raise range (a raise past the real stack
  is the all-in), a raise where none is allowed is a call, a fold with nothing to call a check;
- where the two games part (the policy's game has ended or waits for another street or player), the
  policy checks or calls.

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
from collections.abc import Callable

import numpy as np

from jaxcfr.poker.rules import nlhe, ranges

PUSH_FOLD_BELOW = 14.0  # big blinds of effective stack under which DepthAware pushes or folds (measured)


def rules_of(policy) -> nlhe.NoLimitRules | None:
  """The game a policy plays only (its blueprint tree's rules), or None for a policy that plays any
  (the baselines, `AtRules`, the search bot, which re-solves at the real stacks)."""
  for owner in (policy, getattr(policy, 'blueprint', None)):
    tree = getattr(owner, 'tree', None)
    if tree is not None and getattr(tree, 'rules', None) is not None:
      return tree.rules
  return None


def built_for(policy) -> nlhe.NoLimitRules | None:
  """The game a policy was built for: its own (`rules_of`), or the game of the policy under `AtRules`
  (itself, or its blueprint's: the search bot); None for a policy of no depth (the baselines)."""
  for owner in (policy, getattr(policy, 'blueprint', None)):
    if isinstance(owner, AtRules):
      return owner.own
  return rules_of(policy)


def any_depth(policy):
  """`policy` able to play hands of any rules: `AtRules` over the game it plays only, else itself."""
  own = rules_of(policy)
  return policy if own is None else AtRules(policy, own)


def model_states(state: nlhe.HandState, rules: nlhe.NoLimitRules) -> tuple[nlhe.HandState, np.ndarray]:
  """(hands of `rules` that stand for the batch `state` [B], whether each is still in step with it:
  not finished, the same street and player to act). The cards are the same; the noise is the real
  one's, repeated to the model's history length; every action is replayed as the module says."""
  scale = rules.big_blind / state.rules.big_blind
  length = nlhe.max_actions(rules)
  noise = state.noise[:, np.arange(length) % state.noise.shape[1]]
  model = nlhe.initial(state.hole, state.board, rules, noise)
  in_step = np.ones(len(state.street), bool)
  for slot in range(int(state.num_actions.max(initial=0))):
    street, kind, total = (state.history[:, slot, i] for i in range(3))
    live = (slot < state.num_actions) & in_step
    in_step &= ~(live & (model.finished | (model.street != street)))
    live &= in_step
    if not live.any():
      break
    options = nlhe.legal(model)
    kind = np.where((kind == nlhe.FOLD) & ~options.can_fold, nlhe.CALL, kind)
    kind = np.where((kind == nlhe.RAISE) & ~options.can_raise, nlhe.CALL, kind)
    amount = np.clip(np.round(total * scale).astype(np.int64), options.min_raise_to, options.max_raise_to)
    model = nlhe.apply(model, kind.astype(np.int8), np.where(kind == nlhe.RAISE, amount, 0), live)
  in_step &= ~model.finished & (model.street == state.street) & (model.to_act == state.to_act)
  return model, in_step


def real_actions(state: nlhe.HandState, actions: nlhe.ActionSet, scale: float) -> nlhe.ActionSet:
  """The model's actions [B, A] (amounts in the model's chips, `scale` = its big blind over the real
  one) as legal actions of the real hands [B] (see the module)."""
  options = nlhe.legal(state)
  kind = actions.kind.astype(np.int8)
  raising = (kind == nlhe.RAISE) & options.can_raise[:, None]
  folding = (kind == nlhe.FOLD) & options.can_fold[:, None]
  to = np.round(actions.amount / scale).astype(np.int64)
  to = np.clip(to, options.min_raise_to[:, None], options.max_raise_to[:, None])
  kind = np.where(raising, nlhe.RAISE, np.where(folding, nlhe.FOLD, nlhe.CALL)).astype(np.int8)
  amount = np.where(raising, to, np.where(folding, 0, options.call_to[:, None]))
  return nlhe.ActionSet(kind, amount, actions.valid.copy())


@dataclasses.dataclass(frozen=True)
class AtRules:
  """`policy` (built for `own`) playing hands of any rules (see the module): it is asked only about the
  hands still in step with its game; the others check or call."""

  policy: object
  own: nlhe.NoLimitRules

  @property
  def name(self) -> str:
    return self.policy.name

  def strategy(self, state, holes):
    if state.rules == self.own:
      return self.policy.strategy(state, holes)
    holes = np.asarray(holes)
    model, in_step = model_states(state, self.own)
    live = np.flatnonzero(in_step)
    if len(live) == len(in_step):
      actions, probs = self.policy.strategy(model, holes)
      return real_actions(state, actions, self.own.big_blind / state.rules.big_blind), probs
    batch, count = holes.shape[:2]
    call_to = nlhe.legal(state).call_to
    actions = nlhe.ActionSet(
      np.full((batch, 1), nlhe.CALL, np.int8), call_to[:, None].copy(), np.ones((batch, 1), bool)
    )
    probs = np.ones((batch, count, 1))
    if len(live):
      sub, sub_probs = self.policy.strategy(nlhe.take(model, live), holes[live])
      sub = real_actions(nlhe.take(state, live), sub, self.own.big_blind / state.rules.big_blind)
      width = sub.kind.shape[1]
      actions = nlhe.ActionSet(*(np.repeat(field, width, axis=1) for field in actions))
      probs = np.full((batch, count, width), 1.0 / width)  # parted: every slot is the check or call
      for field, part in zip(actions, sub, strict=True):
        field[live] = part
      probs[live] = sub_probs
    return actions, probs

  def range_classes(self, state):
    """The policy's range query by buckets (`range_classes`, where it has one) for hands all still in
    step with its game, its actions read back as real ones; None otherwise (the searches then ask
    per pair, which `strategy` answers for parted hands too)."""
    classes = getattr(self.policy, 'range_classes', None)
    if classes is None:
      return None
    if state.rules == self.own:
      return classes(state)
    model, in_step = model_states(state, self.own)
    answer = classes(model) if in_step.all() else None
    if answer is None:
      return None
    actions, probs, bucket = answer
    return real_actions(state, actions, self.own.big_blind / state.rules.big_blind), probs, bucket


def at_rules(policy, rules: nlhe.NoLimitRules):
  """`policy` able to play hands of `rules`: itself where it plays them (or any), else `AtRules`."""
  own = rules_of(policy)
  return policy if own is None or own == rules else AtRules(policy, own)


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
  """Push-or-fold strategies solved on a grid of depths (no ante, one small blind, half a big blind by
  default): `lookup` answers with the grid's nearest depth (the shallowest below the grid's first, the
  deepest above its last), for any small blind and ante (a table of another ratio or with antes
  plays these strategies)."""

  stacks: np.ndarray  # float64 [G], rising, big blinds
  push: np.ndarray  # float32 [G, 169]
  call: np.ndarray  # float32 [G, 169]
  small_blind: float = 0.5

  def lookup(self, stack: float, small_blind: float, ante: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    row = int(np.argmin(np.abs(self.stacks - stack)))
    return self.push[row].astype(np.float64), self.call[row].astype(np.float64)

  def save(self, path: str) -> None:
    np.savez(path, stacks=self.stacks, push=self.push, call=self.call, small_blind=self.small_blind)

  @classmethod
  def load(cls, path: str) -> PushFoldTable:
    with np.load(path) as data:
      return cls(data['stacks'], data['push'], data['call'], float(data['small_blind']))


def solved(stack: float, small_blind: float, ante: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
  """(push, call) [169] of the equilibrium at this depth and ante, in big blinds (an ante over one big
  blind solved as one: the push-or-fold game's range; `jaxcfr.poker.pushfold.solve`, SciPy: not in an
  exported bot, which reads a `PushFoldTable`)."""
  from jaxcfr.poker import pushfold  # noqa: PLC0415

  solution = pushfold.solve(stack, min(ante, 1.0), small_blind)
  return solution.push, solution.call


def solved_table(below: float = PUSH_FOLD_BELOW, step: float = 0.1) -> PushFoldTable:
  """The equilibria (`jaxcfr.poker.pushfold.solve`, SciPy) at 1, 1 + step, ... up to `below` bb."""
  from jaxcfr.poker import pushfold  # noqa: PLC0415

  stacks = np.round(np.arange(1.0, below + step / 2, step), 6)
  solutions = [pushfold.solve(float(stack)) for stack in stacks]
  push = np.array([s.push for s in solutions], np.float32)
  return PushFoldTable(stacks, push, np.array([s.call for s in solutions], np.float32))


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
