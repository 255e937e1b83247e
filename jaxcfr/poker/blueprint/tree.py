"""The abstract betting tree of heads-up no-limit hold'em over every street, for the blueprint.

Built once on the host with `abstractions.legal_actions` / `apply_action` (the scalar reference of the
rules) from a `BetAbstraction`: a node is a betting state (the public actions so far); cards are not in
the tree, since a traversal deals them all up front. A hand has `num_streets` betting rounds (4 in
hold'em; fewer for the small exact games of the tests): a round that closes on the last street, or
with a player all-in, ends in a showdown on the whole board; a fold ends the hand.

Player 0 is the small blind (the button), first to act preflop and last afterwards. Actions at a
decision node are in `legal_actions`' order: fold (only when facing a bet), check or call, then the
bets or raises by increasing amount (all-in last). Action kinds follow `jaxcfr.poker.rules.nlhe`: 0 fold,
1 check/call, 2 bet/raise to `amount` (the round's total).

Arrays are depth-major: the nodes of each depth are contiguous (`depth_offsets`), decision nodes
first, then terminals, each in the order of their parents. Decision rows (`decisions`) follow the
node order, so each depth's rows are contiguous too. Shapes: N nodes, D decision nodes, A the most
actions at a decision node.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np

from abstractions.betting import (
  STREETS,
  Action,
  BetAbstraction,
  BettingState,
  NoLimitRules,
  apply_action,
  initial_state,
  legal_actions,
  rules_dict,
)

FOLD, CALL, RAISE = 0, 1, 2  # action kinds, as jaxcfr.poker.rules.nlhe numbers them
_KINDS = {'fold': FOLD, 'check': CALL, 'call': CALL, 'bet': RAISE}
NOT_A_DECISION = -1
ACPC = NoLimitRules()  # blinds 50/100, stacks 20,000 (ACPC / Slumbot)

# Pot fractions are of the pot after calling: a 2.5x open (raise to 250 over the big blind of 100,
# pot 200 after the call) is 0.75; a 3x re-raise (to 750 over 250, pot 500 after the call) is 1.0.
_PREFLOP = ((0.75,), (1.0,))
PRESETS: dict[str, BetAbstraction] = {
  # About 3,700 nodes: small enough that an hour's run on a CPU visits every node many times.
  'small': BetAbstraction((_PREFLOP, ((0.75,), (1.0,)), ((0.75,), (1.0,)), ((0.75,), (1.0,))), (3, 2, 2, 2)),
  # About 122,000 nodes: the brief's sizes; for an accelerator.
  'default': BetAbstraction((_PREFLOP, *(((0.33, 0.75, 1.5), (0.75, 1.5)),) * 3), (4, 3, 3, 3)),
  # Short stacks (tens of big blinds): 2x opens (0.5 of the pot after calling) and 3x re-raises, a third
  # of the pot or all-in after the flop, where 2.5x opens and 75% bets commit a third of the stack.
  'short': BetAbstraction((((0.5,), (1.0,)), *(((0.33,), (1.0,)),) * 3), (3, 2, 2, 2)),
}


def preset(name: str) -> BetAbstraction:
  """The bet abstraction registered as `name` (ValueError naming the choices otherwise)."""
  try:
    return PRESETS[name]
  except KeyError:
    raise ValueError(f'unknown bet preset {name!r}; choose from {", ".join(PRESETS)}') from None


def describe_bets(bets: BetAbstraction) -> dict:
  """The abstraction as JSON holds it (and `bets_from_json` reads it back)."""
  return {'fractions': [[list(sizes) for sizes in street] for street in bets.fractions],
          'raise_cap': list(bets.raise_cap) if isinstance(bets.raise_cap, tuple) else bets.raise_cap,
          'all_in': bets.all_in}  # fmt: skip


def bets_from_json(data: dict) -> BetAbstraction:
  cap = data['raise_cap']
  return BetAbstraction(
    tuple(tuple(tuple(float(f) for f in sizes) for sizes in street) for street in data['fractions']),
    tuple(cap) if isinstance(cap, list) else cap,
    bool(data['all_in']),
  )


@dataclasses.dataclass(frozen=True, eq=False)
class BettingTree:
  """The abstract betting tree (host NumPy, built by `build_tree`)."""

  rules: NoLimitRules
  bets: BetAbstraction
  num_streets: int
  depth_offsets: tuple[int, ...]  # [depths + 1]: nodes of depth d are depth_offsets[d]:depth_offsets[d+1]
  depth_decisions: tuple[int, ...]  # [depths]: decision nodes at the start of each depth
  parent: np.ndarray  # int32 [N]: -1 at the root
  parent_slot: np.ndarray  # int8 [N]: the action slot of the parent that leads here
  street: np.ndarray  # int8 [N]
  player: np.ndarray  # int8 [N]: to act; -1 at terminals
  committed: np.ndarray  # int64 [N, 2]: chips each player has put in over the hand
  folded: np.ndarray  # int8 [N]: the player who folded, or -1
  children: np.ndarray  # int32 [N, A]: child node per action slot, -1 where none
  decision: np.ndarray  # int32 [N]: the node's decision row, -1 at terminals
  decisions: np.ndarray  # int32 [D]: the node of each decision row
  legal: np.ndarray  # bool [D, A]
  kind: np.ndarray  # int8 [D, A]: 0 fold, 1 check/call, 2 bet/raise (-1 past the legal actions)
  amount: np.ndarray  # int64 [D, A]: the call's or raise's total for the round, 0 for fold/check
  states: tuple[BettingState, ...]  # [N]: each node's betting state

  @property
  def num_nodes(self) -> int:
    return len(self.parent)

  @property
  def num_decisions(self) -> int:
    return len(self.decisions)

  @property
  def num_actions(self) -> int:
    return self.children.shape[1]

  @property
  def num_depths(self) -> int:
    return len(self.depth_offsets) - 1

  @property
  def terminal(self) -> np.ndarray:
    return self.player < 0  # bool [N]

  def actions(self, row: int) -> list[Action]:
    """The abstract actions of decision row `row`, by slot, as `abstractions.Action`s."""
    node = self.decisions[row]
    state = self.states[node]
    return legal_actions(state, self.bets)

  def fingerprint(self) -> str:
    """SHA-256 (16 hex digits) of the rules, the abstraction, the streets and the tree's arrays."""
    digest = hashlib.sha256(
      json.dumps(
        {
          'rules': rules_dict(self.rules),
          'bets': describe_bets(self.bets),
          'streets': self.num_streets,
        },
        sort_keys=True,
      ).encode()
    )
    for array in (self.parent, self.parent_slot, self.street, self.player, self.committed, self.folded):
      digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(np.ascontiguousarray(self.amount).tobytes())
    return digest.hexdigest()[:16]

  def counts(self) -> dict:
    """Nodes, decision nodes and terminals in all and per street, depths and the most actions."""
    decisions = self.decisions
    return {
      'nodes': self.num_nodes,
      'decision_nodes': self.num_decisions,
      'terminals': int(self.terminal.sum()),
      'fold_terminals': int((self.folded >= 0).sum()),
      'decision_nodes_per_street': {
        STREETS[s]: int((self.street[decisions] == s).sum()) for s in range(self.num_streets)
      },
      'depths': self.num_depths,
      'max_actions': self.num_actions,
    }


def build_tree(
  bets: BetAbstraction | str = 'default', rules: NoLimitRules = ACPC, num_streets: int = 4
) -> BettingTree:
  """The abstract tree of `bets` (or a preset's name) under `rules` with `num_streets` betting rounds."""
  if isinstance(bets, str):
    bets = preset(bets)
  if not (isinstance(num_streets, int) and 1 <= num_streets <= 4):
    raise ValueError(f'num_streets must be 1 to 4, got {num_streets!r}')
  # Breadth first: each depth's nodes come in the order of their parents (decisions, then terminals).
  levels = [[(initial_state(rules), -1, -1)]]
  while True:
    children = []
    level = levels[-1]
    ordered = [entry for entry in level if not _is_terminal(entry[0], num_streets)]
    ordered += [entry for entry in level if _is_terminal(entry[0], num_streets)]
    levels[-1] = ordered
    for index, (state, _, _) in enumerate(ordered):
      if _is_terminal(state, num_streets):
        continue
      for slot, action in enumerate(legal_actions(state, bets)):
        children.append((apply_action(state, action), index, slot))
    if not children:
      break
    levels.append(children)

  offsets = np.cumsum([0] + [len(level) for level in levels])
  states = [state for level in levels for state, _, _ in level]
  n = len(states)
  parent = np.full(n, -1, np.int32)
  parent_slot = np.full(n, -1, np.int8)
  for d in range(1, len(levels)):
    for i, (_, up, slot) in enumerate(levels[d]):
      parent[offsets[d] + i] = offsets[d - 1] + up
      parent_slot[offsets[d] + i] = slot
  terminal = np.array([_is_terminal(s, num_streets) for s in states])
  decisions = np.flatnonzero(~terminal).astype(np.int32)
  decision = np.full(n, NOT_A_DECISION, np.int32)
  decision[decisions] = np.arange(len(decisions), dtype=np.int32)
  action_lists = [legal_actions(states[i], bets) for i in decisions]
  width = max(len(actions) for actions in action_lists)
  children = np.full((n, width), -1, np.int32)
  children[parent[1:], parent_slot[1:]] = np.arange(1, n, dtype=np.int32)
  kind = np.full((len(decisions), width), -1, np.int8)
  amount = np.zeros((len(decisions), width), np.int64)
  for row, actions in enumerate(action_lists):
    for slot, action in enumerate(actions):
      kind[row, slot] = _KINDS[action.kind]
      amount[row, slot] = action.amount
  tree = BettingTree(
    rules=rules,
    bets=bets,
    num_streets=num_streets,
    depth_offsets=tuple(int(x) for x in offsets),
    depth_decisions=tuple(int((~terminal[offsets[d] : offsets[d + 1]]).sum()) for d in range(len(levels))),
    parent=parent,
    parent_slot=parent_slot,
    street=np.array([min(s.street, num_streets - 1) for s in states], np.int8),
    player=np.where(terminal, -1, [s.to_act for s in states]).astype(np.int8),
    committed=np.array([s.committed for s in states], np.int64),
    folded=np.array([-1 if s.folded is None else s.folded for s in states], np.int8),
    children=children,
    decision=decision,
    decisions=decisions,
    legal=kind >= 0,
    kind=kind,
    amount=amount,
    states=tuple(states),
  )
  _check_showdowns(tree)
  return tree


def _is_terminal(state: BettingState, num_streets: int) -> bool:
  """A finished hand, or a round closed on the last street of a game with fewer than four."""
  return state.finished or state.street >= num_streets


def _check_showdowns(tree: BettingTree) -> None:
  """Both players have put in the same at every showdown (an all-in call for less is refunded)."""
  showdown = tree.terminal & (tree.folded < 0)
  unequal = showdown & (tree.committed[:, 0] != tree.committed[:, 1])
  if unequal.any():
    raise AssertionError(f'showdown with unequal stakes at node {int(np.flatnonzero(unequal)[0])}')


def utility(tree: BettingTree) -> tuple[np.ndarray, np.ndarray]:
  """Player 0's payoff at each terminal, as (fold payoff [N], showdown stake [N]): at a fold, the
  folder loses what it put in; at a showdown player 0 wins `stake * sign(rank0 - rank1)`. Zero at
  decision nodes; player 1's payoff is the negation (zero-sum)."""
  folded = tree.folded
  fold = np.where(folded == 0, -tree.committed[:, 0], np.where(folded == 1, tree.committed[:, 1], 0)).astype(
    np.float64
  )
  stake = np.where(tree.terminal & (folded < 0), tree.committed[:, 0], 0).astype(np.float64)
  return fold, stake


def memory_bytes(tree: BettingTree, buckets: int, itemsize: int = 4) -> int:
  """Bytes of the regret and average-strategy tables, `[D, buckets, A]` each."""
  return 2 * tree.num_decisions * buckets * tree.num_actions * itemsize
