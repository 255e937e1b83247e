"""Ranges: weights over the 1,326 hole-card pairs, `[1326]` float64 in `abstractions.HOLES` order.

`parse_range` reads PioSOLVER / postflop-solver notation; `range_on_board` keeps the hands a board
leaves. `HAND_CLASSES` names the 169 preflop classes (the numbering of `abstractions.preflop_class`),
for summaries of strategies by class.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

import numpy as np

from abstractions.indexing import HOLES  # not `abstractions`: an exported bot's runtime reads this module
from jaxcfr.poker.rules.cards import (
  FULL_DECK,
  RANKS,
  Deck,
  PokerInputError,
  card_text,
  hand_indices,
  parse_card,
)

_HAND_EXAMPLES = 'e.g. AA, AKs, AKo, AK, TT+, A5s-A2s, AsKd, AKs:0.5'
_RANK = f'[{RANKS}]'
_CLASS = re.compile(f'({_RANK})({_RANK})([SO]?)')  # upper-cased; 'S' / 'O' = suited / offsuit
_PLUS = re.compile(f'{_CLASS.pattern}\\+')
_SPAN = re.compile(f'{_CLASS.pattern}-{_CLASS.pattern}')
_COMBO = re.compile(f'{_RANK}[CDHS]{_RANK}[CDHS]')

_RANK_OF, _SUIT_OF = HOLES // 4, HOLES % 4  # [1326, 2]
_HIGH, _LOW = _RANK_OF.max(axis=1), _RANK_OF.min(axis=1)
_SUITED = _SUIT_OF[:, 0] == _SUIT_OF[:, 1]


def _class_mask(high: int, low: int, kind: str) -> np.ndarray:
  """bool `[1326]`: the pairs of a class; kind 'S' suited, 'O' offsuit, '' both (or a pair)."""
  mask = (_HIGH == high) & (_LOW == low)
  if kind == 'S':
    mask &= _SUITED
  elif kind == 'O':
    mask &= ~_SUITED
  return mask


def _item_mask(item: str, error) -> np.ndarray:
  """bool `[1326]`: the pairs a range item (no weight) names; `error(reason)` makes the exception."""
  if _COMBO.fullmatch(item.upper()):
    first, second = parse_card(item[:2]), parse_card(item[2:])
    if first == second:
      raise error(f'{item!r} holds card {card_text(first)} twice')
    return (HOLES[:, 0] == min(first, second)) & (HOLES[:, 1] == max(first, second))
  upper = item.upper()
  if match := _CLASS.fullmatch(upper) or _PLUS.fullmatch(upper):
    classes = [_normalise(*match.groups(), item, error)]
    if upper.endswith('+'):
      high, low, kind = classes[0]
      classes = (
        [(r, r, '') for r in range(high, 13)] if high == low else [(high, k, kind) for k in range(low, high)]
      )
  elif match := _SPAN.fullmatch(upper):
    (high, low, kind), (high2, low2, kind2) = (
      _normalise(*match.groups()[:3], item, error),
      _normalise(*match.groups()[3:], item, error),
    )
    if (high == low) != (high2 == low2):
      raise error(f'{item!r} joins a pair and a non-pair')
    if kind != kind2:
      raise error(f'{item!r} joins hands of different suitedness')
    if high == low:
      classes = [(r, r, '') for r in range(min(low, low2), max(low, low2) + 1)]
    elif high != high2:
      raise error(f'{item!r} joins hands with different high cards (write e.g. A5s-A2s)')
    else:
      classes = [(high, k, kind) for k in range(min(low, low2), max(low, low2) + 1)]
  else:
    raise error(f'{item!r} is not a hand ({_HAND_EXAMPLES})')
  return np.any([_class_mask(*c) for c in classes], axis=0)


def _normalise(first: str, second: str, kind: str, item: str, error) -> tuple[int, int, str]:
  """(high rank, low rank, kind) of a class written with its ranks in either order ('KAs' = 'AKs')."""
  high, low = sorted((RANKS.index(first), RANKS.index(second)), reverse=True)
  if high == low and kind:
    raise error(f'{item!r} is a pair, which cannot be {"suited" if kind == "S" else "offsuit"}')
  return high, low, kind


def _weight(text: str, item: str, error) -> float:
  try:
    weight = float(text)
  except ValueError:
    weight = math.nan
  if math.isnan(weight):
    raise error(f'weight {text!r} of {item!r} is not a number')
  if not 0 <= weight <= 1:
    raise error(f'weight {text} of {item!r} is outside [0, 1]')
  return weight


def parse_range(text: str, deck: Deck = FULL_DECK) -> np.ndarray:
  """Weights float64 `[1326]` in `HOLES` order of a range in PioSOLVER / postflop-solver notation.

  Comma-separated items, whitespace ignored, each a hand set with an optional `:weight` in [0, 1]
  (default 1) given to every combo of the set:

    AA, TT+ (TT..AA), 66-22 or 22-66    pairs
    AKs, AKo, AK (both, 16 combos)       suited / offsuit classes; KAs is read as AKs
    A8s+ (A8s..AKs), KTo+, QT+           kicker up to just below the high card
    A5s-A2s (either order)               same high card, a span of kickers
    AsKd, 7h7c                           one combo

  Later items override earlier ones for the same combo (as postflop-solver), so 'AA,AsAh:0' is five
  combos of aces. Combos with cards outside `deck` get weight 0 without complaint (a short deck has
  no aces: 'AA' adds nothing); whether the result is empty is the caller's business (`check_range`).
  Raises `PokerInputError` naming the bad item.
  """
  if not isinstance(text, str):
    raise PokerInputError(f'range {text!r} is not text')
  return _parsed(text, deck).copy()


@functools.lru_cache(maxsize=256)  # many spots of one study share their ranges' text
def _parsed(text: str, deck: Deck) -> np.ndarray:
  compact = ''.join(text.split())
  if not compact:
    raise PokerInputError(f'range {text!r} is empty ({_HAND_EXAMPLES})')
  in_deck = np.zeros(52, bool)
  in_deck[deck.cards] = True
  playable = in_deck[HOLES[:, 0]] & in_deck[HOLES[:, 1]]

  def error(reason: str) -> PokerInputError:
    return PokerInputError(f'range {text!r}: {reason}')

  weights = np.zeros(len(HOLES))
  for entry in compact.split(','):
    if not entry:
      raise error('an empty item (two commas in a row, or a comma at an end)')
    item, _, weight = entry.partition(':')
    mask = _item_mask(item, error) & playable
    weights[mask] = _weight(weight, entry, error) if ':' in entry else 1.0
  weights.flags.writeable = False  # kept in the cache: `parse_range` hands out copies
  return weights


def range_on_board(weights: np.ndarray, deck: Deck, board: Sequence[int] = ()) -> np.ndarray:
  """float64 `[H]`: `weights` (`[1326]`) at `hand_indices(deck, board)`; combos the board blocks
  are dropped."""
  weights = np.asarray(weights, np.float64)
  if weights.shape != (len(HOLES),):
    raise ValueError(f'weights must have shape ({len(HOLES)},), got {weights.shape}')
  return weights[hand_indices(deck, board)]


def check_range(weights: np.ndarray, name: str) -> np.ndarray:
  """`weights` (a range on a board, `[H]`) unchanged, or `PokerInputError` if its total weight is
  zero; `name` says whose range it is in the message (e.g. 'OOP')."""
  if not np.sum(weights) > 0:
    raise PokerInputError(f"{name} range is empty after the board's cards are removed")
  return weights


# HAND_CLASSES[13 * i + j], ranks i, j (0 = deuce ... 12 = ace): the pair when i == j, suited with
# high rank i and low j when i > j, offsuit with high rank j and low i when i < j. The numbering of
# `abstractions.preflop_class`: a 13 x 13 grid with the deuce in row and column 0.
HAND_CLASSES = tuple(
  RANKS[i] * 2 if i == j else RANKS[i] + RANKS[j] + 's' if i > j else RANKS[j] + RANKS[i] + 'o'
  for i in range(13)
  for j in range(13)
)


def class_of_hands(hands: np.ndarray) -> np.ndarray:
  """Positions int32 `[...]` in `HAND_CLASSES` of hole-card pairs `[..., 2]` (either order, any integer
  dtype: the arithmetic runs in int32, where int8 card ids would overflow)."""
  hands = np.asarray(hands).astype(np.int32)
  ranks, suits = hands // 4, hands % 4
  high, low = ranks.max(axis=-1), ranks.min(axis=-1)
  suited = suits[..., 0] == suits[..., 1]
  return np.where(suited, 13 * high + low, 13 * low + high).astype(np.int32)


def hand_class(pair: Sequence[int]) -> str:
  """The class of two hole cards, e.g. 'AKs', 'AKo', 'TT'."""
  return HAND_CLASSES[int(class_of_hands(np.asarray(pair)))]
