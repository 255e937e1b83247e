"""Ranges over the 1,326 hole pairs in a real hand: which pairs the cards a player sees block, a
policy's strategy for every pair at once, and Bayes' rule after an observed action.

Weights are float64 `[B, H]` over `abstractions.HOLES` (B hands of the batched engine, H = 1,326
pairs). Local best response (`eval.lbr`) tracks the bot's range with them, and the search bot
(`search.bot`) forms the ranges at the root of a re-solve.
"""

from __future__ import annotations

import numpy as np

from abstractions import HOLES
from jaxcfr.poker.rules import nlhe

NUM_PAIRS = len(HOLES)  # H
PAIR_INDEX = np.full(
  (52, 52), -1, np.int64
)  # [52, 52] the pair of two cards (either order), -1 on the diagonal
PAIR_INDEX[HOLES[:, 0], HOLES[:, 1]] = PAIR_INDEX[HOLES[:, 1], HOLES[:, 0]] = np.arange(NUM_PAIRS)


def blocked(cards) -> np.ndarray:
  """Which hole pairs hold one of `cards` (int [B, n], -1 for none), bool [B, H]."""
  cards = np.asarray(cards, np.int64)
  used = np.zeros((len(cards), 53), bool)
  used[np.arange(len(cards))[:, None], np.where(cards < 0, 52, cards)] = True
  return used[:, HOLES[:, 0]] | used[:, HOLES[:, 1]]


def _known(state: nlhe.HandState, seat) -> np.ndarray:
  """The cards LBR in `seat` (int [B]) sees: its hole cards and the visible board, int [B, 7]."""
  rows = np.arange(len(state.street))
  return np.concatenate([state.hole[rows, np.asarray(seat, np.int64)], nlhe.visible_board(state)], axis=1)


def _normalise(weights: np.ndarray) -> np.ndarray:
  total = weights.sum(axis=1, keepdims=True)
  return np.where(total > 0, weights / np.where(total > 0, total, 1.0), weights)


def initial_range(state: nlhe.HandState, seat) -> np.ndarray:
  """The bot's range as LBR in `seat` (int [B]) sees it before any action: uniform over the pairs its
  hole cards and the visible board leave, float64 [B, H] summing to 1."""
  return _normalise((~blocked(_known(state, seat))).astype(np.float64))


def remove_blocked(weights: np.ndarray, state: nlhe.HandState, seat) -> np.ndarray:
  """`weights` [B, H] without the pairs that LBR's hole cards or the visible board block, renormalised."""
  return _normalise(np.where(blocked(_known(state, seat)), 0.0, weights))


def action_likelihood(actions: nlhe.ActionSet, probs: np.ndarray, choice: np.ndarray) -> np.ndarray:
  """P(the action in slot `choice` [B] | pair), float64 [B, H], from the bot's probabilities [B, H, A]:
  the sum over the valid slots that hold the same real action (kind, and amount for a raise)."""
  kind, amount, valid = (np.asarray(x) for x in actions)
  rows = np.arange(len(choice))
  chosen_kind, chosen_amount = kind[rows, choice], amount[rows, choice]
  same = valid & (kind == chosen_kind[:, None]) & ((kind != nlhe.RAISE) | (amount == chosen_amount[:, None]))
  return (np.asarray(probs, np.float64) * same[:, None, :]).sum(axis=2)


def observe(
  weights: np.ndarray, actions: nlhe.ActionSet, probs: np.ndarray, choice: np.ndarray
) -> np.ndarray:
  """Bayes' rule: the range [B, H] after the bot took the action in slot `choice` [B] of `actions`
  with probabilities `probs` [B, H, A], renormalised (a hand whose posterior has no mass keeps none)."""
  return _normalise(weights * action_likelihood(actions, probs, choice))


def query(policy, state: nlhe.HandState) -> tuple[nlhe.ActionSet, np.ndarray]:
  """The bot's strategy for every pair at every hand of `state` (the bot to act): its ActionSet
  [B, A] and probabilities float64 [B, H, A], checked on the pairs the visible board leaves and 0 on
  the others (whatever a policy answers for impossible hole cards is never used)."""
  batch = len(state.street)
  holes = np.broadcast_to(HOLES.astype(np.int8), (batch, NUM_PAIRS, 2))
  actions, probs = policy.strategy(state, holes)
  actions = nlhe.ActionSet(*(np.asarray(x) for x in actions))
  probs = np.asarray(probs, np.float64)
  name = getattr(policy, 'name', repr(policy))
  width = actions.kind.shape[-1] if actions.kind.ndim == 2 else -1
  shapes = (actions.kind.shape, actions.amount.shape, actions.valid.shape)
  if not (shapes == ((batch, width),) * 3 and probs.shape == (batch, NUM_PAIRS, width)):
    raise ValueError(
      f'policy {name}: strategy gave actions {shapes} and probabilities {probs.shape} for {batch} hands '
      f'and {NUM_PAIRS} pairs (need [n, A] and [n, {NUM_PAIRS}, A])'
    )
  possible = ~blocked(nlhe.visible_board(state))  # [B, H]
  probs = np.where(possible[..., None], probs, 0.0)
  states, slots = np.nonzero(~actions.valid)
  # min >= 0 is False for NaN; max < inf catches infinities: two passes and no temporaries.
  finite = probs.min(initial=0.0) >= 0 and probs.max(initial=0.0) < np.inf
  if not finite or np.any(probs[states, :, slots] > 0):
    raise ValueError(f'policy {name}: probabilities must be finite, non-negative, and 0 on invalid actions')
  if np.any(np.abs(probs.sum(axis=2) - 1)[possible] > 1e-6):
    raise ValueError(f'policy {name}: probabilities must sum to 1 over the actions')
  return actions, probs
