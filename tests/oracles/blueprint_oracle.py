"""OpenSpiel's `universal_poker` as the oracle of the blueprint's abstract game (short decks).

A whole hand of heads-up no-limit hold'em from the blinds, with the fcpa betting abstraction (fold,
check/call, pot raise, all-in; no cap but the stacks), is the abstract game of a `BetAbstraction` with
the pot fraction 1.0 at every depth, the all-in, and a raise cap no line reaches: fcpa's pot raise goes
to maxSpent + (to call + pot), ours to the largest bet + 1.0 x (pot after calling), the same chips.

ACPC conventions (see `poker_oracle.py` for what universal_poker does with its parameters): the
blinds are listed by seat, `firstPlayer` is 1-based per round, so `blind='1 2'`, `firstPlayer='1 2'`
makes player 0 the small blind, first preflop and last on the flop, as in jaxcfr.

`universal_poker` deals one card per chance node (ordered); `DealtGame` deals each player's pair and
each round's board cards as sets at one chance node each (uniform over sets, as a deal is), which
leaves the game's distribution and information states unchanged and the tree far smaller.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pyspiel

_INFOSET = re.compile(
  r'\[Round (\d+)\]\[Player: (\d+)\]\[Pot: \d+\]\[Money: [\d ]+\]\[Private: (\w*)\]\[Public: (\w*)\]'
  r'\[Sequences: ([^\]]*)\]'
)
RANKS, SUITS = '23456789TJQKA', 'cdhs'


def parse_cards(text: str) -> tuple[int, ...]:
  return tuple(4 * RANKS.index(text[i]) + SUITS.index(text[i + 1]) for i in range(0, len(text), 2))


def parameters(num_ranks: int, num_suits: int, board_cards, blinds, stack: int) -> dict:
  rounds = len(board_cards)
  return {
    'betting': 'nolimit',
    'numPlayers': 2,
    'numRounds': rounds,
    'blind': f'{blinds[0]} {blinds[1]}',
    'firstPlayer': ' '.join(['1'] + ['2'] * (rounds - 1)),
    'numSuits': num_suits,
    'numRanks': num_ranks,
    'numHoleCards': 2,
    'numBoardCards': ' '.join(str(c) for c in board_cards),
    'stack': f'{stack} {stack}',
    'bettingAbstraction': 'fcpa',
  }


class _Dealt:
  """A universal_poker state whose chance nodes deal a set of cards at once."""

  def __init__(self, game: DealtGame, state, next_round: int):
    self.game, self.state, self.next_round = game, state, next_round  # the round whose cards come next

  def _sets(self) -> list[tuple[int, ...]]:
    """The outcomes of this chance node: card-id tuples, each applied in order."""
    deal = self._deal_actions()
    cards = sorted(deal)
    if self.next_round == 0:  # player 0's pair, then player 1's (and a first-round board, if any)
      outcomes = []
      for first in itertools.combinations(cards, 2):
        rest = [c for c in cards if c not in first]
        for second in itertools.combinations(rest, 2):
          left = [c for c in rest if c not in second]
          for board in itertools.combinations(left, self.game.board_cards[0]):
            outcomes.append(first + second + board)
      return outcomes
    return list(itertools.combinations(cards, self.game.board_cards[self.next_round]))

  def _deal_actions(self) -> dict[int, int]:
    return {
      parse_cards(self.state.action_to_string(a).split('Deal ')[1])[0]: a for a in self.state.legal_actions()
    }

  def current_player(self):
    return self.state.current_player()

  def is_chance_node(self):
    return self.state.is_chance_node()

  def is_terminal(self):
    return self.state.is_terminal()

  def legal_actions(self):
    if self.is_chance_node():
      return list(range(len(self._sets())))
    return self.state.legal_actions()

  def chance_outcomes(self):
    count = len(self._sets())
    return [(i, 1.0 / count) for i in range(count)]

  def child(self, action):
    if not self.is_chance_node():
      return _Dealt(self.game, self.state.child(action), self.next_round)
    state = self.state.clone()
    for card in self._sets()[action]:
      state.apply_action(_Dealt(self.game, state, self.next_round)._deal_actions()[card])
    return _Dealt(self.game, state, self.next_round + 1)

  def returns(self):
    return self.state.returns()

  def information_state_string(self, player):
    return self.state.information_state_string(player)


class DealtGame:
  """universal_poker with set-at-once deals, in jaxcfr's game protocol (`jaxcfr.compile_game`)."""

  def __init__(self, num_ranks: int, num_suits: int, board_cards, blinds, stack: int):
    self.board_cards = tuple(board_cards)
    self.parameters = parameters(num_ranks, num_suits, board_cards, blinds, stack)
    self.game = pyspiel.load_game('universal_poker', self.parameters)

  def num_players(self):
    return 2

  def num_distinct_actions(self):
    return self.game.num_distinct_actions()

  def information_state_tensor_size(self):
    return 0

  def new_initial_state(self):
    return _Dealt(self, self.game.new_initial_state(), 0)

  def __str__(self):
    return f'universal_poker dealt {self.parameters}'


def parse_information_state(text: str) -> tuple[int, int, tuple[int, ...], tuple[int, ...], list[str]]:
  """(round, player, private cards, public cards, per-round action lists like ['r6', 'c']) of an
  information-state string."""
  match = _INFOSET.fullmatch(text.strip())
  if match is None:
    raise ValueError(f'not a universal_poker information state: {text!r}')
  round_, player, private, public, sequences = match.groups()
  rounds = [re.findall(r'r\d+|c|f', part) for part in sequences.split('|')]
  return int(round_), int(player), parse_cards(private), parse_cards(public), rounds


def node_of(tree, rounds: list[list[str]]) -> int:
  """The abstract tree's node after universal_poker's betting (per round: 'c', 'f', 'rN' with N the
  raiser's chips in the pot over the hand); a ValueError if the tree has no such action."""
  node = 0
  for actions in rounds:
    for token in actions:
      row = tree.decision[node]
      if row < 0:
        raise ValueError(f'betting {rounds} goes past a terminal of the tree')
      state = tree.states[node]
      player = state.to_act
      if token == 'f':
        slots = [a for a in range(tree.num_actions) if tree.kind[row, a] == 0]
      elif token == 'c':
        slots = [a for a in range(tree.num_actions) if tree.kind[row, a] == 1]
      else:
        total = int(token[1:]) - (state.committed[player] - state.round_bet[player])  # the round's total
        slots = [
          a for a in range(tree.num_actions) if tree.kind[row, a] == 2 and tree.amount[row, a] == total
        ]
      if len(slots) != 1:
        raise ValueError(f'no tree action for {token!r} after {rounds}')
      node = int(tree.children[node, slots[0]])
  return node


def policy_on(compiled, tree, buckets, deck_cards, policy):
  """A `[D, K, A]` blueprint policy as the compiled universal_poker game's `[I, A]` policy.

  `buckets` is the blueprint's bucket function (`buckets_of(hole, board) -> [..., S]`, the board
  padded with unseen cards of `deck_cards` past what the infoset shows). The tree's slots (fold,
  check/call, raises by amount) and fcpa's action ids (0 fold, 1 call, 2 pot, 3 all-in) are both
  ordered by amount, so the k-th legal slot is the k-th legal action id; the counts must agree."""
  parsed = [parse_information_state(key) for key in compiled.infoset_keys]
  size = max(len(public) for _, _, _, public, _ in parsed)
  holes, boards = [], []
  for _, _, private, public, _ in parsed:
    unseen = [c for c in deck_cards if c not in private and c not in public]
    holes.append(private)
    boards.append(tuple(public) + tuple(unseen[: size - len(public)]))
  by_street = np.asarray(buckets.buckets_of(np.array(holes), np.array(boards)))  # [I, S]
  out = np.zeros(compiled.legal_mask.shape)
  legal = np.asarray(compiled.legal_mask)
  for i, (round_, player, _, _, rounds) in enumerate(parsed):
    node = node_of(tree, rounds)
    if tree.player[node] != player or tree.street[node] != round_:
      raise ValueError(f'{compiled.infoset_keys[i]}: the tree has player {tree.player[node]} on street '
                       f'{tree.street[node]} there')  # fmt: skip
    row = tree.decision[node]
    slots = np.flatnonzero(tree.legal[row])
    ids = np.flatnonzero(legal[i])
    if len(slots) != len(ids):
      raise ValueError(
        f'{compiled.infoset_keys[i]}: the tree has {len(slots)} actions, universal_poker {len(ids)}'
      )
    out[i, ids] = policy[row, by_street[i, round_], slots]
  return out
