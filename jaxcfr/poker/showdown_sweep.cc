// The showdown sweep of jaxcfr.poker.showdown as an XLA:CPU kernel (an XLA FFI handler), built and
// loaded by jaxcfr/poker/native.py.
//
// For each river board and each of M columns (showdown nodes) of the opponent's weights r over the H
// hands: win(h) - lose(h), the weight of the hands that share no card with h and that h beats, minus
// the weight of those that beat it. One walk up the hands in order of strength keeps the running sum
// of the weights and the same sum per card (over the hands that hold it). For a hand (c1, c2):
//   win(h)   = total - card[c1] - card[c2]            before h's group of equal strength is added
//              (h, the one hand that holds both cards, is not in the sums yet),
//   after(h) = total - card[c1] - card[c2]            once the group is added
//              = win(h) + ties(h) - r(h),
//   full(h)  = total - card[c1] - card[c2]            at the end
//              = win(h) + ties(h) + lose(h) - r(h),
// so win(h) - lose(h) = win(h) + after(h) - full(h). This is the method postflop solvers use: O(H M)
// per board, no prefix arrays, no gathers (one walk where two, up and down, took 1.2x longer).
//
// Inputs, per board (leading batch dimensions, if any, are the same for all of them):
//   order         int16 [H]      the hands by increasing strength
//   not_stronger  int16 [H]      per hand, where its group of equal strength ends in `order`
//   card_weaker   int16 [2 H]    per hand and card, card * per_card + a count (ShowdownTables): the
//                                hand's two cards are these divided by `per_card`
//   reach         f32|f64 [M, H] the opponent's weights, a row per showdown (the trees' layout; the hands
//                 the board blocks weigh 0)
// Output: f32|f64 [M, H] win(h) - lose(h).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kCards = 52;
constexpr int64_t kLanes = 8;  // floats per vector: the sweep's rows are padded to a multiple

// The loops over a row's columns. The rows never overlap (a hand's two cards differ; the total and the
// outputs are rows of their own), and `__restrict` says so: no overlap checks at run time, which made
// a narrow board's sweep 1.26x slower.
template <typename T>
inline void Set(T* __restrict o, const T* __restrict t, const T* __restrict a, const T* __restrict b,
                int64_t n) {
  for (int64_t m = 0; m < n; ++m) o[m] = t[m] - a[m] - b[m];
}

template <typename T>
inline void Add(T* __restrict o, const T* __restrict t, const T* __restrict a, const T* __restrict b,
                int64_t n) {
  for (int64_t m = 0; m < n; ++m) o[m] += t[m] - a[m] - b[m];
}

template <typename T>
inline void Subtract(T* __restrict o, const T* __restrict t, const T* __restrict a, const T* __restrict b,
                     int64_t n) {
  for (int64_t m = 0; m < n; ++m) o[m] -= t[m] - a[m] - b[m];
}

template <typename T>
inline void Accumulate(T* __restrict t, T* __restrict a, T* __restrict b, const T* __restrict r, int64_t n) {
  for (int64_t m = 0; m < n; ++m) {
    t[m] += r[m];
    a[m] += r[m];
    b[m] += r[m];
  }
}

// One board, rows of `columns` numbers. `rows` [2 H]: where each hand's two cards' running sums begin
// in `sums` (card * columns).
template <typename T>
void Sweep(const int16_t* order, const int16_t* not_stronger, const int64_t* rows, const T* reach, T* out,
           int64_t hands, int64_t columns, std::vector<T>& sums) {
  sums.assign((kCards + 1) * columns, T(0));
  T* total = sums.data() + kCards * columns;
  T* card = sums.data();
  for (int64_t start = 0, stop; start < hands; start = stop) {
    stop = not_stronger[order[start]];  // the group [start, stop) of equal strength
    for (int64_t j = start; j < stop; ++j) {
      const int64_t h = order[j];
      Set(out + h * columns, total, card + rows[2 * h], card + rows[2 * h + 1], columns);
    }
    for (int64_t j = start; j < stop; ++j) {
      const int64_t h = order[j];
      Accumulate(total, card + rows[2 * h], card + rows[2 * h + 1], reach + h * columns, columns);
    }
    for (int64_t j = start; j < stop; ++j) {
      const int64_t h = order[j];
      Add(out + h * columns, total, card + rows[2 * h], card + rows[2 * h + 1], columns);
    }
  }
  for (int64_t h = 0; h < hands; ++h) {
    Subtract(out + h * columns, total, card + rows[2 * h], card + rows[2 * h + 1], columns);
  }
}

// Not inlined into the handler: inlined beside the checks there, the walk compiled 1.15x to 1.2x slower.
template <typename T>
__attribute__((noinline)) void Boards(const int16_t* order, const int16_t* not_stronger,
                                      const int16_t* card_weaker, const T* reach, T* out, int64_t per_card,
                                      int64_t boards, int64_t hands, int64_t columns) {
  // A board's weights turned to [H, P], the hands leading and the columns padded to whole vectors
  // (P a multiple of kLanes; the padding stays 0), swept there, and turned back.
  const int64_t width = (columns + kLanes - 1) / kLanes * kLanes;
  std::vector<T> sums, rows_in(hands * width, T(0)), rows_out(hands * width);
  std::vector<int64_t> rows(2 * hands);
  // card = card_weaker // per_card by a reciprocal (cheaper than a division per entry): what is left
  // over is at most K / (K + 1), far from the next card.
  const double reciprocal = 1.0 / static_cast<double>(per_card);
  for (int64_t b = 0; b < boards; ++b) {
    const int16_t* cards = card_weaker + 2 * b * hands;
    for (int64_t i = 0; i < 2 * hands; ++i) {
      rows[i] = static_cast<int64_t>(static_cast<double>(cards[i]) * reciprocal) * width;
    }
    const T* r = reach + b * columns * hands;
    T* y = out + b * columns * hands;
    for (int64_t h = 0; h < hands; ++h) {  // hands outer: the M rows' lines serve 16 hands in a row
      for (int64_t m = 0; m < columns; ++m) rows_in[h * width + m] = r[m * hands + h];
    }
    Sweep<T>(order + b * hands, not_stronger + b * hands, rows.data(), rows_in.data(), rows_out.data(), hands,
             width, sums);
    for (int64_t h = 0; h < hands; ++h) {
      for (int64_t m = 0; m < columns; ++m) y[m * hands + h] = rows_out[h * width + m];
    }
  }
}

ffi::Error Difference(ffi::Buffer<ffi::S16> order, ffi::Buffer<ffi::S16> not_stronger,
                      ffi::Buffer<ffi::S16> card_weaker, ffi::AnyBuffer reach,
                      ffi::Result<ffi::AnyBuffer> out, int64_t per_card) {
  const auto dims = reach.dimensions();
  if (dims.size() < 2) return ffi::Error::InvalidArgument("reach must be [..., M, H]");
  const int64_t columns = dims[dims.size() - 2], hands = dims[dims.size() - 1];
  int64_t boards = 1;
  for (size_t k = 0; k + 2 < dims.size(); ++k) boards *= dims[k];
  if (static_cast<int64_t>(order.element_count()) != boards * hands ||
      static_cast<int64_t>(not_stronger.element_count()) != boards * hands ||
      static_cast<int64_t>(card_weaker.element_count()) != 2 * boards * hands) {
    return ffi::Error::InvalidArgument("the tables do not match reach's boards and hands");
  }
  if (per_card < 1) return ffi::Error::InvalidArgument("per_card must be positive");
  const int16_t* o = order.typed_data();
  const int16_t* n = not_stronger.typed_data();
  const int16_t* c = card_weaker.typed_data();
  // The walk trusts the tables: check what would send it out of bounds (branch-free, vectorised).
  bool bad = false;
  for (int64_t i = 0; i < boards * hands; ++i) {
    bad |= (o[i] < 0) | (o[i] >= hands) | (n[i] < 1) | (n[i] > hands);
  }
  for (int64_t i = 0; i < 2 * boards * hands; ++i) bad |= (c[i] < 0) | (c[i] >= kCards * per_card);
  if (bad) return ffi::Error::InvalidArgument("the tables hold a hand position or a card out of range");
  for (int64_t b = 0; b < boards; ++b) {  // each group ends after its hands: the walk moves on
    for (int64_t j = 0; j < hands; ++j) bad |= n[b * hands + o[b * hands + j]] <= j;
  }
  if (bad) return ffi::Error::InvalidArgument("the tables' groups of equal strength are out of order");
  if (reach.element_type() == ffi::F32) {
    Boards<float>(o, n, c, reach.typed_data<float>(), out->typed_data<float>(), per_card, boards, hands,
                  columns);
  } else if (reach.element_type() == ffi::F64) {
    Boards<double>(o, n, c, reach.typed_data<double>(), out->typed_data<double>(), per_card, boards, hands,
                   columns);
  } else {
    return ffi::Error::InvalidArgument("reach must be float32 or float64");
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxcfrShowdownDifference, Difference,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::S16>>()  // order
                                  .Arg<ffi::Buffer<ffi::S16>>()  // not_stronger
                                  .Arg<ffi::Buffer<ffi::S16>>()  // card_weaker
                                  .Arg<ffi::AnyBuffer>()         // reach
                                  .Ret<ffi::AnyBuffer>()         // win - lose
                                  .Attr<int64_t>("per_card"));
