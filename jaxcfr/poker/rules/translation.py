"""A policy of one game playing hands of another (other blinds, stacks, antes): the translation that
the depth-aware bot (`jaxcfr.poker.eval.depth`), the search bot and the tables' seats share.

Every jaxcfr blueprint plays one game (`rules_of`: 50/100 blinds, 20,000 behind by default).
`at_rules(policy, rules)` lets it play hands of other blinds and stacks the way it plays at a real table
(`tables.seat`): each hand is read into the policy's own game in big blinds (`model_states`, batched),
and its answer is read back into the real hand (`real_actions`):

- amounts are scaled by the ratio of the big blinds; a raise the policy's game cannot make (under its
  minimum, as a real all-in for less is) is clamped into its raise range; a fold where nothing is to
  call is a check; antes the policy's game does not have are left out (its pot is short by them);
- the answer's raise is scaled back and clamped into the real raise range (a raise past the real stack
  is the all-in), a raise where none is allowed is a call, a fold with nothing to call a check;
- where the two games part (the policy's game has ended or waits for another street or player), the
  policy checks or calls.

NumPy and the engine only: an exported bot runs it.

    policy = translation.at_rules(bots.resolve_policy('bp.npz'), NoLimitRules(50, 100, 1000))   # 10 bb
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcfr.poker.rules import nlhe


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
