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
// per board, no prefix arrays, no gathers (one walk where two, up and down, took longer).
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
#include <memory>
#include <vector>

#include "xla/ffi/api/ffi.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kCards = 52;
constexpr int64_t kLanes = 8;  // floats per vector: the sweep's rows are padded to a multiple

// The loops over a row's columns. The rows never overlap (a hand's two cards differ; the total and the
// outputs are rows of their own), and `__restrict` says so: no overlap checks at run time, which made
// a narrow board's sweep slower.
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

// The turns between the trees' layout [M, H] and the walk's [H, width] take 8 x 8 tiles at a time, in
// registers where the CPU has AVX (with scalar tiles a call on the river spot took longer).
// dst[k * dst_stride + j] = src[j * src_stride + k] for an 8 x 8 tile.
template <typename T>
inline void Tile(const T* src, int64_t src_stride, T* dst, int64_t dst_stride) {
  for (int64_t j = 0; j < 8; ++j)
    for (int64_t k = 0; k < 8; ++k) dst[k * dst_stride + j] = src[j * src_stride + k];
}

#if defined(__AVX__)
template <>
inline void Tile<float>(const float* src, int64_t s, float* dst, int64_t d) {
  __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + s), r2 = _mm256_loadu_ps(src + 2 * s),
         r3 = _mm256_loadu_ps(src + 3 * s), r4 = _mm256_loadu_ps(src + 4 * s), r5 = _mm256_loadu_ps(src + 5 * s),
         r6 = _mm256_loadu_ps(src + 6 * s), r7 = _mm256_loadu_ps(src + 7 * s);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
         t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
         u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
         u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
         u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(dst + d, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(dst + 2 * d, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(dst + 3 * d, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(dst + 4 * d, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(dst + 5 * d, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(dst + 6 * d, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(dst + 7 * d, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

// dst [H, width] <- src [M, H], the columns past M set to 0. Tiles of 8 x 8; the last, partial group
// of rows goes through `stage` [8, H] padded with zeros, the last hands (H mod 8) one by one.
template <typename T>
void ToRows(const T* src, T* dst, T* stage, int64_t columns, int64_t hands, int64_t width) {
  const int64_t whole = hands / 8 * 8, full = columns / 8 * 8;
  if (full < width) {
    std::copy(src + full * hands, src + columns * hands, stage);
    std::fill(stage + (columns - full) * hands, stage + 8 * hands, T(0));
  }
  for (int64_t h = 0; h < whole; h += 8) {
    for (int64_t m = 0; m < full; m += 8) Tile(src + m * hands + h, hands, dst + h * width + m, width);
    if (full < width) Tile(stage + h, hands, dst + h * width + full, width);
  }
  for (int64_t h = whole; h < hands; ++h) {
    for (int64_t m = 0; m < columns; ++m) dst[h * width + m] = src[m * hands + h];
    for (int64_t m = columns; m < width; ++m) dst[h * width + m] = T(0);
  }
}

// dst [M, H] <- src [H, width], the same way round (`stage` [8, H] takes the partial group of rows).
template <typename T>
void FromRows(const T* src, T* dst, T* stage, int64_t columns, int64_t hands, int64_t width) {
  const int64_t whole = hands / 8 * 8, full = columns / 8 * 8;
  for (int64_t h = 0; h < whole; h += 8) {
    for (int64_t m = 0; m < full; m += 8) Tile(src + h * width + m, width, dst + m * hands + h, hands);
    if (full < width) Tile(src + h * width + full, width, stage + h, hands);
  }
  for (int64_t h = whole; h < hands; ++h) {
    for (int64_t m = 0; m < columns; ++m) dst[m * hands + h] = src[h * width + m];
  }
  for (int64_t m = full; m < columns; ++m) {
    std::copy(stage + (m - full) * hands, stage + (m - full) * hands + whole, dst + m * hands);
  }
}

// One board, rows of `columns` numbers. `rows` [2 H]: where each hand's two cards' running sums begin
// in `sums` (card * columns).
template <typename T>
bool Sweep(const int16_t* order, const int16_t* not_stronger, const int64_t* rows, const T* reach, T* out,
           int64_t hands, int64_t columns, std::vector<T>& sums) {
  sums.assign((kCards + 1) * columns, T(0));
  T* total = sums.data() + kCards * columns;
  T* card = sums.data();
  for (int64_t start = 0, stop; start < hands; start = stop) {
    stop = not_stronger[order[start]];  // the group [start, stop) of equal strength
    if (stop <= start) return false;  // it would stand still
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
  return true;
}

// Not inlined into the handler: inlined beside the checks there, the walk compiled to slower code.
template <typename T>
__attribute__((noinline)) bool Boards(const int16_t* order, const int16_t* not_stronger,
                                      const int16_t* card_weaker, const T* reach, T* out, int64_t per_card,
                                      int64_t boards, int64_t hands, int64_t columns) {
  // A board's weights turned to [H, P], the hands leading and the columns padded to whole vectors
  // (P a multiple of kLanes; the padding stays 0), swept there, and turned back.
  const int64_t width = (columns + kLanes - 1) / kLanes * kLanes;
  // Scratch rows, each written before it is read: no zeros to lay down first (which, with the tables'
  // checks by a gather per hand, took a large share of a river call).
  std::vector<T> sums;
  std::unique_ptr<T[]> rows_in(new T[hands * width]), rows_out(new T[hands * width]), stage(new T[8 * hands]);
  std::unique_ptr<int64_t[]> rows(new int64_t[2 * hands]);
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
    ToRows(r, rows_in.get(), stage.get(), columns, hands, width);
    if (!Sweep<T>(order + b * hands, not_stronger + b * hands, rows.get(), rows_in.get(), rows_out.get(),
                  hands, width, sums)) {
      return false;
    }
    FromRows(rows_out.get(), y, stage.get(), columns, hands, width);
  }
  return true;
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
  // The walk trusts the tables: check what would send it out of bounds (branch-free, vectorised; a
  // negative number is a large one as unsigned). The walk itself checks that each group of equal
  // strength ends after its first hand, so that it always moves on.
  if (hands > 32767 || kCards * per_card > 32767) {
    return ffi::Error::InvalidArgument("too many hands for the tables' 16-bit positions");
  }
  const uint16_t hands_u = static_cast<uint16_t>(hands), cards_u = static_cast<uint16_t>(kCards * per_card);
  uint16_t bad = 0;
  for (int64_t i = 0; i < boards * hands; ++i) {
    bad |= (static_cast<uint16_t>(o[i]) >= hands_u) | (static_cast<uint16_t>(n[i] - 1) >= hands_u);
  }
  for (int64_t i = 0; i < 2 * boards * hands; ++i) bad |= static_cast<uint16_t>(c[i]) >= cards_u;
  if (bad) return ffi::Error::InvalidArgument("the tables hold a hand position or a card out of range");
  bool walked;
  if (reach.element_type() == ffi::F32) {
    walked = Boards<float>(o, n, c, reach.typed_data<float>(), out->typed_data<float>(), per_card, boards,
                           hands, columns);
  } else if (reach.element_type() == ffi::F64) {
    walked = Boards<double>(o, n, c, reach.typed_data<double>(), out->typed_data<double>(), per_card, boards,
                            hands, columns);
  } else {
    return ffi::Error::InvalidArgument("reach must be float32 or float64");
  }
  if (!walked) return ffi::Error::InvalidArgument("the tables' groups of equal strength are out of order");
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
