"""The blueprint as a policy of the real game (`jaxcfr.poker.rules.nlhe.Policy`), in NumPy only (the
runtime: see `jaxcfr.poker.runtime`).

    policy = BlueprintPolicy(load_blueprint('blueprint.npz'), load_tables('tables/'))
    actions, probabilities = policy.strategy(state, holes)    # holes [B, K, 2]

Stateless: for every hand the real history is replayed in the real game and, action by action, in the
abstract tree (`abstract_nodes`):

- a check or call is the abstract check or call; a fold is the abstract fold;
- a bet or raise to the all-in is the abstract all-in where the node has one; any other bet or raise
  is mapped by its size x (the raise over the top bet, as a fraction of the pot after calling, in the
  real state) to the abstract bets' sizes (the same fraction in the abstract state): below the
  smallest or above the largest, the nearest; between neighbours a < x < b, to a with probability
  `abstractions.pseudo_harmonic(x, a, b)` (Ganzfried & Sandholm 2013), drawn from the hand's
  `state.noise` for that action, so that a history always maps the same way; a raise where the
  abstract node has none (its raise cap reached) is taken as a call.

Once the abstract line has lost the real one (the abstract node is a terminal, or another street or
player than the real state's, as after a raise past the abstract cap), the policy checks or calls: it
has no strategy for states its abstraction never reached (`off_tree` counts them).

At the node, the player's bucket on the real street (from the visible board only, by the abstraction
tables' NumPy lookup, `abstractions.lookup.BucketTables`) gives the abstract strategy, which becomes
real actions: fold, check/call, and each abstract bet as the same pot fraction of the real pot after
calling (the all-in as the real all-in), clamped to the legal raise range; a bet where the real state
allows no raise (the opponent all-in) becomes the call, and real actions that coincide are merged
(their probabilities added).
"""

from __future__ import annotations

import collections

import numpy as np

from abstractions.betting import legal_actions
from abstractions.indexing import HOLES, STREETS
from abstractions.lookup import BucketTables
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.runtime import BlueprintError
from jaxcfr.recent import Recent

BOARD_SIZES = (0, 3, 4, 5)  # visible board cards by street (hold'em)
BOARD_BUCKETS = 4096  # boards whose buckets of every hole pair a policy keeps (5 kB each)
WALKS = 2  # the last batches of lines whose walks into the tree a policy keeps, to go on from


def check_fingerprint(blueprint, buckets, path: str) -> None:
  """`BlueprintError` with one line unless `buckets` (tables or a bucket function: its `fingerprint`)
  are the abstraction tables the blueprint read from `path` was trained on."""
  if buckets.fingerprint != blueprint.abstraction_fingerprint:
    raise BlueprintError(
      f'the blueprint {path!r} was trained on abstraction tables {blueprint.abstraction_fingerprint[:16]}; '
      f'these are {str(buckets.fingerprint)[:16]}'
    )


class BlueprintPolicy:
  """A blueprint and its bucket tables as an `nlhe.Policy` (see the module docstring).

  blueprint: a `jaxcfr.poker.blueprint.files.Blueprint` (its tree, probabilities [D, K, A], metadata).
  buckets: `abstractions.lookup.BucketTables` (a subclass may take other bucket functions: see
    `_tables_of`, `_street_buckets`); their bucket counts must be the blueprint's.
  """

  def __init__(self, blueprint, buckets, name: str = 'blueprint'):
    self.blueprint = blueprint
    self.tree = tree = blueprint.tree
    self.buckets = buckets
    self.tables = self._tables_of(buckets)  # the NumPy tables that `_street_buckets` reads
    self.name = name
    if tree.num_streets != 4 or blueprint.board_cards != (0, 3, 1, 1):
      raise BlueprintError("a real-game policy needs a blueprint of all four hold'em streets")
    if tuple(int(k) for k in buckets.buckets[:4]) != blueprint.num_buckets:
      raise BlueprintError(
        f'the bucket function has {tuple(buckets.buckets)} buckets; the blueprint {blueprint.num_buckets}'
      )
    self._sizes = _slot_sizes(tree)
    self._board_buckets = Recent(BOARD_BUCKETS)  # (street, board) -> buckets [1,326] of `HOLES`
    self.off_tree = 0  # queries answered by the check/call fallback
    # The last walks (`abstract_nodes`): ({line: row}, node [n], lost [n], the real states [n]).
    self._walks = collections.deque(maxlen=WALKS)

  def forget_boards(self) -> None:
    """Drops the boards' buckets kept for range queries (what a fresh policy would look up again)."""
    self._board_buckets = Recent(BOARD_BUCKETS)

  # The abstract node of each hand.

  def abstract_nodes(self, state: nlhe.HandState) -> tuple[np.ndarray, np.ndarray]:
    """(node int [B], on tree bool [B]): each hand's abstract node after its history, and whether it is
    a decision of the real state's player to act on the real street.

    The walk depends on the line alone (the actions and their noise, not the cards), so each distinct
    line is walked once (a search's leaves on many runouts share their lines), and the policy keeps
    the last `WALKS` batches' walks: a hand whose line less its last action was walked there (a
    search asks a tree's states depth by depth) goes on from there with one step."""
    if state.rules != self.tree.rules:
      raise ValueError(f'the blueprint plays {self.tree.rules}; these hands are of {state.rules}')
    lines, inverse = _distinct_lines(state)
    node, lost = self._walk(state if lines is None else nlhe.take(state, lines))
    if lines is not None:
      node, lost = node[inverse], lost[inverse]
    tree = self.tree
    on_tree = ~lost & (tree.decision[node] >= 0)
    on_tree &= (tree.player[node] == state.to_act) & (tree.street[node] == state.street) & ~state.finished
    return node, on_tree

  def _walk(self, state: nlhe.HandState) -> tuple[np.ndarray, np.ndarray]:
    """(node [B], lost [B]): `abstract_nodes`' walk of each hand's line, from the kept walks."""
    tree = self.tree
    batch = state.street.shape[0]
    steps = state.num_actions.astype(np.int64)
    start = np.zeros(batch, np.int64)
    node = np.zeros(batch, np.int64)
    lost = np.zeros(batch, bool)
    # Where each hand's walk begins: in `sources` (the fresh deals, then each kept walk's states).
    sources = [nlhe.initial(state.hole, state.board, state.rules, state.noise)]
    source = np.arange(batch)
    parents = [_line(state, b, steps[b] - 1) if steps[b] else None for b in range(batch)]
    offset = batch
    for found, walked_node, walked_lost, walked_real in self._walks:
      rows = np.array([b for b in range(batch) if not start[b] and parents[b] in found], np.int64)
      if len(rows):
        at = np.array([found[parents[b]] for b in rows])
        start[rows], node[rows], lost[rows] = steps[rows] - 1, walked_node[at], walked_lost[at]
        source[rows] = offset + at
      sources.append(walked_real)
      offset += len(walked_node)
    real = nlhe.take(nlhe.concatenate(sources), source) if start.any() else sources[0]
    for t in range(int(start.min()) if batch else 0, int(state.num_actions.max(initial=0))):
      acting = (t >= start) & (t < state.num_actions)
      street, kind, amount = (state.history[:, t, i] for i in range(3))
      row = tree.decision[node]
      lost |= acting & (
        (row < 0) | (tree.player[node] != real.to_act) | (tree.street[node] != street) | real.finished
      )
      follow = acting & ~lost
      slot = self._abstract_slot(real, node, kind, amount, state.noise[:, t])
      node = np.where(follow, tree.children[node, np.maximum(slot, 0)], node)
      lost |= follow & (slot < 0)
      real = nlhe.apply(real, kind, amount, acting)
    self._walks.append(({_line(state, b, steps[b]): b for b in range(batch)}, node, lost, real))
    return node, lost

  def _abstract_slot(self, real: nlhe.HandState, node, kind, amount, noise) -> np.ndarray:
    """The abstract slot [B] the real action maps to at each hand's node (-1: none)."""
    tree = self.tree
    row = np.maximum(tree.decision[node], 0)
    kinds = tree.kind[row]  # [B, A]
    slot_of = lambda mask: np.where(mask.any(1), np.argmax(mask, 1), -1)  # noqa: E731
    fold, call, bets = (
      slot_of(kinds == nlhe.FOLD),
      slot_of(kinds == nlhe.CALL),
      kinds == nlhe.RAISE,
    )
    options = nlhe.legal(real)
    all_in = (kind == nlhe.RAISE) & (amount == options.max_raise_to) & options.can_raise
    all_in_slot = slot_of(self._sizes.all_in[row])
    # The real raise's size: (raise-to - top bet) / (pot after calling), in the real state.
    top, after_call = nlhe.raise_basis(real)
    x = (amount - top) / np.maximum(after_call, 1)
    fractions = np.where(bets, self._sizes.realised[row], np.nan)  # [B, A]
    chosen = translate_fraction(x, fractions, noise)
    raise_slot = np.where(all_in & (all_in_slot >= 0), all_in_slot, chosen)
    raise_slot = np.where(bets.any(1), raise_slot, call)  # no abstract raise left: a call
    return np.select(
      [kind == nlhe.FOLD, kind == nlhe.CALL], [np.where(fold >= 0, fold, call), call], raise_slot
    )

  # The strategy.

  def strategy(self, state: nlhe.HandState, holes: np.ndarray) -> tuple[nlhe.ActionSet, np.ndarray]:
    """Real actions [B, A] and probabilities [B, K, A] for the player to act (see the module docstring)."""
    holes = np.asarray(holes)
    batch = state.street.shape[0]
    if holes.ndim != 3 or holes.shape[0] != batch or holes.shape[2] != 2:
      raise ValueError(f'holes must be [B, K, 2] for B = {batch}, got {holes.shape}')
    return self._answer(state, lambda row: self._probabilities(state, holes, row))

  def range_classes(self, state: nlhe.HandState) -> tuple[nlhe.ActionSet, np.ndarray, np.ndarray] | None:
    """A range query by buckets, for hands all on one street: (real actions [B, A], probabilities
    float64 [B, K, A] per bucket, each hole pair's bucket int [B, 1,326] on the hand's board): what
    `strategy` answers each pair is its bucket's row (where the board leaves the pair). A search
    that carries reach per bucket instead of per pair asks this; None for hands on several streets."""
    streets = np.unique(state.street)
    if len(streets) != 1:
      return None
    count = self.blueprint.num_buckets[int(streets[0])]
    actions, probabilities = self._answer(state, lambda row: self.blueprint.probabilities[row, :count])
    return actions, probabilities, self._range_buckets(state)

  def _answer(self, state: nlhe.HandState, probabilities) -> tuple[nlhe.ActionSet, np.ndarray]:
    """`strategy`'s real actions and probabilities [B, K, A], from `probabilities(row)` [B, K, A] at
    each hand's decision row."""
    tree = self.tree
    node, on_tree = self.abstract_nodes(state)
    self.off_tree += int((~on_tree & ~state.finished).sum())
    row = np.where(on_tree, tree.decision[node], 0)
    probabilities = probabilities(row)  # [B, K, A]
    actions = self._real_actions(state, row)
    # Where the abstract line is lost: check or call.
    fallback = ~on_tree
    if fallback.any():
      call = np.zeros(tree.num_actions)
      call[0] = 1.0
      actions = _where(fallback, _call_only(state, tree.num_actions), actions)
      probabilities = np.where(fallback[:, None, None], call, probabilities)
    return _merged(actions, probabilities)

  def _probabilities(self, state: nlhe.HandState, holes: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The abstract strategy [B, K, A] at each hand's decision row for each candidate hole pair."""
    return self.blueprint.probabilities[row[:, None], self._bucket(state, holes)]

  def _bucket(self, state: nlhe.HandState, holes: np.ndarray) -> np.ndarray:
    """The bucket int [B, K] of each candidate hole pair on the hand's street, from the visible board.
    A range query (every hand asks with all 1,326 pairs, `hands.query`) looks each board up once and
    keeps it (`BOARD_BUCKETS` boards): searches ask the same boards at many states."""
    if holes.shape[1] == len(HOLES) and holes.strides[0] == 0 and (holes[0] == HOLES).all():
      return self._range_buckets(state)
    return self._lookup_buckets(state, holes)

  def _range_buckets(self, state: nlhe.HandState) -> np.ndarray:
    """`_bucket` of `HOLES` for every hand [B, 1,326], through the boards kept (each distinct visible
    board asked once: a search's states share a few)."""
    shown = np.arange(5) < nlhe.BOARD_SIZES[state.street][:, None]
    visible = np.concatenate([state.street[:, None], np.where(shown, state.board, -1)], 1).astype(np.int8)
    _, distinct, inverse = np.unique(visible, axis=0, return_index=True, return_inverse=True)
    streets = state.street[distinct]
    pairs = zip(distinct, streets, strict=True)
    keys = [(int(s), state.board[b, : BOARD_SIZES[s]].tobytes()) for b, s in pairs]
    row = dict(zip(keys, distinct, strict=True))

    def build(missing: list) -> np.ndarray:
      holes = np.broadcast_to(HOLES.astype(np.int8), (len(missing), len(HOLES), 2))
      sub = nlhe.take(state, np.array([row[key] for key in missing]))
      return self._lookup_buckets(sub, holes).astype(np.int32)

    return np.stack(self._board_buckets.get_many(keys, build)).astype(np.int64)[inverse.reshape(-1)]

  def _lookup_buckets(self, state: nlhe.HandState, holes: np.ndarray) -> np.ndarray:
    """`_bucket` by the bucket tables, for any hole pairs."""
    batch, count = holes.shape[:2]
    out = np.zeros((batch, count), np.int64)
    for street in range(4):
      index = np.flatnonzero(state.street == street)
      if len(index):
        board = state.board[index, : BOARD_SIZES[street]]
        out[index] = self._street_buckets(street, holes[index], board)
    return out

  def _tables_of(self, buckets) -> BucketTables | None:
    """The NumPy tables of the bucket function `buckets`: itself where it is `BucketTables`."""
    return buckets if isinstance(buckets, BucketTables) else None

  def _street_buckets(self, street: int, hole: np.ndarray, board: np.ndarray) -> np.ndarray:
    """int [n, K] buckets on `street` of holes [n, K, 2] with the visible boards [n, BOARD_SIZES[street]]."""
    if self.tables is None:
      raise TypeError(f'the runtime looks buckets up in abstraction tables, not in {type(self.buckets)}')
    shown = np.broadcast_to(board[:, None, :], (*hole.shape[:2], board.shape[-1]))
    return self.tables.bucket(STREETS[street], hole, shown)

  def _real_actions(self, state: nlhe.HandState, row: np.ndarray) -> nlhe.ActionSet:
    """The abstract actions of each hand's row as real actions (slots as the tree's) [B, A]."""
    tree = self.tree
    options = nlhe.legal(state)
    kinds = tree.kind[row].astype(np.int64)  # [B, A]
    top, after_call = nlhe.raise_basis(state)
    wanted = top[:, None] + np.round(self._sizes.spec[row] * after_call[:, None])  # [B, A]
    wanted = np.where(self._sizes.all_in[row], options.max_raise_to[:, None], np.nan_to_num(wanted))
    amount = np.clip(wanted, options.min_raise_to[:, None], options.max_raise_to[:, None]).astype(np.int64)
    is_raise = kinds == nlhe.RAISE
    can_raise = options.can_raise[:, None]
    kind = np.where(is_raise & ~can_raise, nlhe.CALL, kinds)  # no raise possible: the bet is a call
    amount = np.where(kind == nlhe.RAISE, amount, np.where(kind == nlhe.CALL, options.call_to[:, None], 0))
    valid = tree.legal[row] & ((kind != nlhe.FOLD) | options.can_fold[:, None])
    return nlhe.ActionSet(np.maximum(kind, 0).astype(np.int8), amount, valid)


class _Sizes:
  """Per decision row and slot: the abstract bet's size as specified (a pot fraction; NaN for the
  all-in and non-bets), as realised in the abstract state (the fraction the amount makes there), and
  whether it is the all-in. float [D, A], float [D, A], bool [D, A]."""

  def __init__(self, spec, realised, all_in):
    self.spec, self.realised, self.all_in = spec, realised, all_in


def _slot_sizes(tree) -> _Sizes:
  shape = tree.kind.shape
  spec, realised, all_in = np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape, bool)
  for row, node in enumerate(tree.decisions):
    state = tree.states[node]
    player = state.to_act
    top, to_call = max(state.round_bet), state.to_call
    all_in_to = state.round_bet[player] + state.stack_left(player)
    after_call = state.pot + to_call
    lowest = min(top + max(state.last_increment, tree.rules.big_blind), all_in_to)
    made = {}  # amount -> the first size that makes it
    for fraction in tree.bets.sizes(state.street, state.raises):
      made.setdefault(min(max(top + int(round(fraction * after_call)), lowest), all_in_to), fraction)
    for slot, action in enumerate(legal_actions(state, tree.bets)):
      if action.kind != 'bet':
        continue
      realised[row, slot] = (action.amount - top) / after_call
      if action.amount == all_in_to and (tree.bets.all_in or action.amount not in made):
        all_in[row, slot] = True
      else:
        spec[row, slot] = made[action.amount]
  return _Sizes(spec, realised, all_in)


def translation(x: np.ndarray, fractions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Pseudo-harmonic translation's odds, vectorised: for each row, the slots [B] of the neighbours
  below and above x [B] among `fractions` [B, A] (NaN where no bet; -1 where there is none on that
  side) and the probability [B] of the one below (1 where x is one of the fractions or has one
  neighbour only)."""
  valid = ~np.isnan(fractions)
  below = np.where(valid & (fractions <= x[:, None]), fractions, -np.inf)
  above = np.where(valid & (fractions >= x[:, None]), fractions, np.inf)
  low, high = below.max(1), above.min(1)
  low_slot = np.where(np.isfinite(low), np.argmax(below == low[:, None], 1), -1)
  high_slot = np.where(np.isfinite(high), np.argmax(above == high[:, None], 1), -1)
  both = (low_slot >= 0) & (high_slot >= 0) & (high > low)
  with np.errstate(divide='ignore', invalid='ignore'):
    p = np.where(both, ((high - x) * (1 + low)) / ((high - low) * (1 + x)), 1.0)
  return low_slot, high_slot, np.where(low_slot >= 0, p, 0.0)


def translate_fraction(x: np.ndarray, fractions: np.ndarray, noise: np.ndarray) -> np.ndarray:
  """Pseudo-harmonic translation, vectorised: for each row, the slot [B] of `fractions` [B, A] (NaN
  where no bet) that x [B] maps to, drawing with `noise` [B] between neighbours (`translation`); -1
  without bets."""
  low_slot, high_slot, p = translation(x, fractions)
  return np.where(noise < p, low_slot, high_slot)


def _distinct_lines(state: nlhe.HandState) -> tuple[np.ndarray | None, np.ndarray | None]:
  """(the first hand of each distinct line [U], each hand's line [B]), a line being the actions and
  their noise (`_line`); (None, None) where every hand's line is its own."""
  batch, length = state.noise.shape
  if batch < 2:
    return None, None
  played = np.arange(length) < state.num_actions[:, None]  # [B, L]
  key = np.concatenate(
    [
      state.num_actions.astype(np.int64)[:, None],
      np.where(played[..., None], state.history, 0).reshape(batch, -1),
      np.where(played, state.noise, 0.0).view(np.int64),
    ],
    axis=1,
  )
  rows = np.ascontiguousarray(key).view(np.dtype((np.void, key.shape[1] * key.itemsize)))[:, 0]
  _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
  if len(first) == batch:
    return None, None
  return first, inverse.reshape(-1)


def _line(state: nlhe.HandState, b: int, steps: int) -> tuple:
  """Hand b's first `steps` actions and their noise, as a key (all an abstract walk reads)."""
  return (state.rules, int(steps), state.history[b, :steps].tobytes(), state.noise[b, :steps].tobytes())


def _call_only(state: nlhe.HandState, width: int) -> nlhe.ActionSet:
  """Check/call in slot 0, nothing else: [B, width]."""
  batch = state.street.shape[0]
  kind = np.zeros((batch, width), np.int8)
  kind[:, 0] = nlhe.CALL
  amount = np.zeros((batch, width), np.int64)
  amount[:, 0] = nlhe.legal(state).call_to
  valid = np.zeros((batch, width), bool)
  valid[:, 0] = True
  return nlhe.ActionSet(kind, amount, valid)


def _where(mask: np.ndarray, a: nlhe.ActionSet, b: nlhe.ActionSet) -> nlhe.ActionSet:
  return nlhe.ActionSet(*(np.where(mask[:, None], x, y) for x, y in zip(a, b, strict=True)))


def _merged(actions: nlhe.ActionSet, probabilities: np.ndarray) -> tuple[nlhe.ActionSet, np.ndarray]:
  """Real actions that coincide (kind and amount) become one slot, the first, with their probabilities
  added; invalid slots get probability 0; each row renormalised (uniform over valid slots if empty)."""
  kind, amount, valid = actions
  same = (kind[:, :, None] == kind[:, None, :]) & (amount[:, :, None] == amount[:, None, :])
  same &= valid[:, :, None] & valid[:, None, :]  # [B, A, A]
  width = kind.shape[1]
  first = np.argmax(same, axis=2)  # [B, A]: the first valid slot equal to each slot
  owner = np.where(valid, first, np.arange(width))
  merged = np.where(valid[:, None, :], probabilities, 0.0)
  # Each slot that coincides with an earlier one (rare: sizes clipped to the same amount) adds its
  # column onto that slot's, in place; a product with a one-hot [B, A, A] map costs far more.
  for b, slot in zip(*np.nonzero(valid & (owner != np.arange(width))), strict=True):
    merged[b, :, owner[b, slot]] += merged[b, :, slot]
    merged[b, :, slot] = 0.0
  valid = valid & (owner == np.arange(width))
  total = merged.sum(-1, keepdims=True)
  if (total > 0).all():  # the usual case: no uniform rows to make (the same values as below)
    return nlhe.ActionSet(kind, amount, valid), (merged / total).astype(np.float64)
  uniform = valid[:, None, :] / np.maximum(valid.sum(-1), 1)[:, None, None]
  merged = np.where(total > 0, merged / np.where(total > 0, total, 1), uniform)
  return nlhe.ActionSet(kind, amount, valid), merged
