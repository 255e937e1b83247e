// A river spot's whole solve as one native call, built and loaded by jaxcfr/poker/subgame/native.py.
//
// The same algorithm as jaxcfr.poker.subgame.solver's array form on a river tree (no chance node),
// iteration for iteration: alternating updates, OOP's half first; in OOP's half the average's weights
// of every decision take the acting player's reach (discounted by ((t - 1) / t)^power first); the
// regret rule is the chain accumulate -> [clip at 0] -> [discount] of jaxcfr.solvers (CFR, CFR+,
// Linear CFR, DCFR, DCFR+); regret matching is uniform where no regret is positive. Checks every
// `eval_every` iterations (and at the last) compute NashConv of the average strategy with one pass per
// player that carries its values under the average and as a best response together; the solve stops
// at the first check at most `target`. What differs from the array form is the layout: each player
// keeps its own hands (those its range holds), and a pass is a walk down the tree with one reach
// vector per level, so an iteration is a few dozen short loops rather than ~160 XLA kernels.
//
// Terminal values for player p against the opponent's reach r over its hands (c1, c2 a hand's cards):
//   fold      +-amount * (sum r - card[c1] - card[c2] + r(the same hand)), card[c] the sum of r over
//             the opponent's hands that hold c;
//   showdown  amount * (win - lose): one walk up the hands in order of strength for win (the weight
//             of compatible weaker hands), one down for lose; the same hand ties and is in neither.
//
// Everything is in the caller's arrays (numpy, C order) and a scratch arena made here; no globals, so
// calls on several threads at once are safe.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

constexpr int kDecision = 0, kFold = 2, kShowdown = 3;

struct Rule {
  double instant_power;  // r <- t^w r before accumulating (Linear CFR: 1; else 0 and unused)
  bool weighted, clip, discount;
  double alpha, beta, offset, power;
};

template <typename T>
struct Side {  // one player's hands: those of its range, by increasing strength
  int n = 0;
  std::vector<int> index;        // position in the union
  std::vector<int> c1, c2;       // cards
  std::vector<int> strength;
  std::vector<int> same;         // the opponent's position of the same hand, or -1
  std::vector<T> weight;         // range weights
};

template <typename T>
class Solver {
 public:
  Solver(int nodes, const int8_t* kind, const int8_t* player, const int32_t* first, const int32_t* count,
         const double* amount, int hands, const int32_t* cards, const int32_t* strength,
         const double* weights, const Rule& rule)
      : kind_(kind), player_(player), first_(first), count_(count), amount_(amount), rule_(rule) {
    std::vector<int> by_strength(hands);  // each side keeps its hands in order of strength
    for (int h = 0; h < hands; ++h) by_strength[h] = h;
    std::stable_sort(by_strength.begin(), by_strength.end(),
                     [strength](int a, int b) { return strength[a] < strength[b]; });
    for (int p = 0; p < 2; ++p) {
      Side<T>& side = side_[p];
      for (int h : by_strength) {
        if (weights[p * hands + h] > 0) {
          side.index.push_back(h);
          side.c1.push_back(cards[2 * h]);
          side.c2.push_back(cards[2 * h + 1]);
          side.strength.push_back(strength[h]);
          side.weight.push_back(static_cast<T>(weights[p * hands + h]));
        }
      }
      side.n = static_cast<int>(side.index.size());
    }
    for (int p = 0; p < 2; ++p) {
      Side<T>& side = side_[p];
      const Side<T>& other = side_[1 - p];
      std::vector<int> where(hands, -1);
      for (int j = 0; j < other.n; ++j) where[other.index[j]] = j;
      side.same.resize(side.n);
      for (int i = 0; i < side.n; ++i) side.same[i] = where[side.index[i]];
    }
    // State: per decision node and action, over the actor's hands.
    offset_.assign(nodes, 0);
    size_t size = 0;
    int widest = 0;
    for (int v = 0; v < nodes; ++v) {
      if (kind_[v] != kDecision) continue;
      offset_[v] = size;
      size += static_cast<size_t>(count_[v]) * side_[player_[v]].n;
      widest = std::max(widest, static_cast<int>(count_[v]));
    }
    regret_.assign(size, T(0));
    average_.assign(size, T(0));
    int depth = Depth(0), most = std::max(side_[0].n, side_[1].n);
    // Per level of the walk: a strategy [A, n], child values [A, n] (twice for checks) and two reaches.
    arena_.assign(static_cast<size_t>(depth + 1) * (4 * widest + 4) * most + 64, T(0));
    T* mass = Take(side_[0].n);  // the deals' total weight, once: the ranges do not change
    Fold(0, side_[1].weight.data(), T(1), mass);
    normalizer_ = Dot(0, mass);
    top_ = 0;
  }

  int hands(int p) const { return side_[p].n; }

  // Sum of w0(h) w1(h') over the pairs of hands with no card in common.
  double normalizer() const { return normalizer_; }

  // Iteration t (1-based): OOP's half, then IP's.
  void Iterate(int t) {
    T keep = t == 1 ? T(0) : static_cast<T>(std::pow((t - 1.0) / t, rule_.power));
    double pos = 1, neg = 1, scale = 1;
    if (rule_.discount) {
      pos = 1 / (1 + rule_.offset * std::pow(static_cast<double>(t), -rule_.alpha));
      neg = 1 / (1 + rule_.offset * std::pow(static_cast<double>(t), -rule_.beta));
    }
    if (rule_.weighted) scale = std::pow(static_cast<double>(t), rule_.instant_power);
    discount_ = {static_cast<T>(pos), static_cast<T>(neg), static_cast<T>(scale)};
    for (int p = 0; p < 2; ++p) {
      top_ = 0;
      T* out = Take(side_[p].n);
      Walk(0, p, side_[p].weight.data(), side_[1 - p].weight.data(), out, p == 0, keep);
    }
  }

  // NashConv of the average strategy; each player's value per deal under it in `values`.
  double NashConv(double* values) {
    double conv = 0;
    for (int p = 0; p < 2; ++p) {
      top_ = 0;
      T* average = Take(side_[p].n);
      T* best = Take(side_[p].n);
      Evaluate(0, p, side_[1 - p].weight.data(), average, best);
      double a = Dot(p, average), b = Dot(p, best);
      values[p] = a / normalizer_;
      conv += (b - a) / normalizer_;
    }
    return conv;
  }

  // Each player's share of the pot if both checked down (ties split), per deal.
  void Equity(double* out) {
    for (int p = 0; p < 2; ++p) {
      top_ = 0;
      int n = side_[p].n;
      T* share = Take(n);  // compatible weight plus win minus lose, halved below: win plus half the ties
      T* difference = Take(n);
      Fold(p, side_[1 - p].weight.data(), T(1), share);
      Showdown(p, side_[1 - p].weight.data(), T(1), difference);
      for (int i = 0; i < n; ++i) share[i] += difference[i];
      out[p] = Dot(p, share) / 2 / normalizer_;
    }
  }

  // The average strategy at decision node v over the union's hands [A, hands] (uniform for hands not in
  // the actor's range, as the array form's average has them).
  void Average(int v, int hands, double* out) const {
    const Side<T>& side = side_[player_[v]];
    int actions = count_[v];
    std::fill(out, out + static_cast<size_t>(actions) * hands, 1.0 / actions);
    const T* weights = average_.data() + offset_[v];
    for (int i = 0; i < side.n; ++i) {
      double sum = 0;
      for (int a = 0; a < actions; ++a) sum += weights[a * side.n + i];
      for (int a = 0; a < actions; ++a)
        out[a * hands + side.index[i]] = sum > 0 ? weights[a * side.n + i] / sum : 1.0 / actions;
    }
  }

 private:
  int Depth(int v) const {
    if (kind_[v] != kDecision) return 0;
    int most = 0;
    for (int a = 0; a < count_[v]; ++a) most = std::max(most, Depth(first_[v] + a));
    return most + 1;
  }

  // Sum over player p's hands of its range weight times x, in double.
  double Dot(int p, const T* x) const {
    double sum = 0;
    for (int i = 0; i < side_[p].n; ++i) sum += static_cast<double>(side_[p].weight[i]) * x[i];
    return sum;
  }

  T* Take(int n) {
    T* at = arena_.data() + top_;
    top_ += n;
    return at;
  }

  // out[i] = scale * the opponent's reach over hands sharing no card with p's hand i.
  void Fold(int p, const T* reach, T scale, T* out) const {
    const Side<T>& own = side_[p];
    const Side<T>& other = side_[1 - p];
    T card[52] = {};
    T total = 0;
    for (int j = 0; j < other.n; ++j) {
      T r = reach[j];
      total += r;
      card[other.c1[j]] += r;
      card[other.c2[j]] += r;
    }
    for (int i = 0; i < own.n; ++i) {
      T same = own.same[i] >= 0 ? reach[own.same[i]] : T(0);
      out[i] = scale * (total - card[own.c1[i]] - card[own.c2[i]] + same);
    }
  }

  // One walk up the hands in order of strength (showdown_sweep.cc's method): per own group of equal
  // strength, win before the opponent's hands of that strength are added, after once they are, and
  // full at the end; win - lose = win + after - full.
  void Showdown(int p, const T* reach, T amount, T* out) const {
    const Side<T>& own = side_[p];
    const Side<T>& other = side_[1 - p];
    T card[52] = {};
    T total = 0;
    int j = 0;
    auto add = [&](int h) {
      T r = reach[h];
      total += r;
      card[other.c1[h]] += r;
      card[other.c2[h]] += r;
    };
    for (int i = 0; i < own.n;) {
      int group = own.strength[i], end = i;
      while (end < own.n && own.strength[end] == group) ++end;
      while (j < other.n && other.strength[j] < group) add(j++);
      for (int k = i; k < end; ++k) out[k] = total - card[own.c1[k]] - card[own.c2[k]];
      while (j < other.n && other.strength[j] == group) add(j++);
      for (int k = i; k < end; ++k) out[k] += total - card[own.c1[k]] - card[own.c2[k]];
      i = end;
    }
    while (j < other.n) add(j++);
    for (int i = 0; i < own.n; ++i) out[i] = amount * (out[i] - (total - card[own.c1[i]] - card[own.c2[i]]));
  }

  // Regret matching at v into strategy [A, n].
  void Match(int v, int n, T* strategy) {
    const T* regret = regret_.data() + offset_[v];
    for (int k = 0; k < count_[v] * n; ++k) strategy[k] = std::max(regret[k], T(0));
    Normalize(count_[v], n, strategy);
  }

  // weights [A, n] normalised over the actions, uniform where they sum to 0 (loops over the hands,
  // which the compiler vectorises).
  void Normalize(int actions, int n, T* weights) {
    int mark = top_;
    T* total = Take(n);
    std::copy(weights, weights + n, total);
    for (int a = 1; a < actions; ++a)
      for (int i = 0; i < n; ++i) total[i] += weights[a * n + i];
    T uniform = T(1) / actions;
    T* safe = Take(n);  // divisions without a branch, then the uniform rows by a select
    for (int i = 0; i < n; ++i) safe[i] = total[i] > 0 ? total[i] : T(1);
    for (int a = 0; a < actions; ++a) {
      T* row = weights + a * n;
      for (int i = 0; i < n; ++i) row[i] = row[i] / safe[i];
      for (int i = 0; i < n; ++i) row[i] = total[i] > 0 ? row[i] : uniform;
    }
    top_ = mark;
  }

  // Player p's counterfactual values at v into out [n_p]; `own` p's reach (read only where the
  // average's weights are added, `first`), `other` the opponent's.
  void Walk(int v, int p, const T* own, const T* other, T* out, bool first, T keep) {
    int kind = kind_[v];
    if (kind == kFold) {
      T amount = static_cast<T>(amount_[v]);
      Fold(p, other, player_[v] == p ? -amount : amount, out);
      return;
    }
    if (kind == kShowdown) {
      Showdown(p, other, static_cast<T>(amount_[v]), out);
      return;
    }
    int actor = player_[v], actions = count_[v], n = side_[actor].n, np = side_[p].n;
    int mark = top_;
    T* strategy = Take(actions * n);
    Match(v, n, strategy);
    const T* reach = actor == p ? own : other;
    if (first) {
      T* average = average_.data() + offset_[v];
      for (int a = 0; a < actions; ++a) {
        T* row = average + a * n;
        const T* s = strategy + a * n;
        for (int i = 0; i < n; ++i) row[i] = row[i] * keep + reach[i] * s[i];
      }
    }
    T* next = Take(n);
    std::fill(out, out + np, T(0));
    if (actor == p) {
      T* values = Take(actions * np);
      for (int a = 0; a < actions; ++a) {
        const T* s = strategy + a * n;
        if (first)
          for (int i = 0; i < n; ++i) next[i] = own[i] * s[i];
        Walk(first_[v] + a, p, next, other, values + a * np, first, keep);
        for (int i = 0; i < np; ++i) out[i] += s[i] * values[a * np + i];
      }
      T* regret = regret_.data() + offset_[v];
      auto [pos, neg, scale] = discount_;
      for (int a = 0; a < actions; ++a) {
        for (int i = 0; i < np; ++i) {
          T instant = values[a * np + i] - out[i];
          if (rule_.weighted) instant *= scale;
          T r = regret[a * np + i] + instant;
          if (rule_.clip) r = std::max(r, T(0));
          if (rule_.discount) r *= r > 0 ? pos : neg;
          regret[a * np + i] = r;
        }
      }
    } else {
      T* value = Take(np);
      for (int a = 0; a < actions; ++a) {
        const T* s = strategy + a * n;
        for (int i = 0; i < n; ++i) next[i] = other[i] * s[i];
        Walk(first_[v] + a, p, own, next, value, first, keep);
        for (int i = 0; i < np; ++i) out[i] += value[i];
      }
    }
    top_ = mark;
  }

  // Player p's values at v under the average strategy (average) and as a best response (best).
  void Evaluate(int v, int p, const T* other, T* average, T* best) {
    int kind = kind_[v];
    int np = side_[p].n;
    if (kind == kFold || kind == kShowdown) {
      if (kind == kFold) {
        T amount = static_cast<T>(amount_[v]);
        Fold(p, other, player_[v] == p ? -amount : amount, average);
      } else {
        Showdown(p, other, static_cast<T>(amount_[v]), average);
      }
      std::copy(average, average + np, best);
      return;
    }
    int actor = player_[v], actions = count_[v], n = side_[actor].n;
    int mark = top_;
    T* strategy = Take(actions * n);
    const T* weights = average_.data() + offset_[v];
    std::copy(weights, weights + actions * n, strategy);
    Normalize(actions, n, strategy);
    T* child_average = Take(np);
    T* child_best = Take(np);
    std::fill(average, average + np, T(0));
    if (actor == p) {
      std::fill(best, best + np, -INFINITY);
      for (int a = 0; a < actions; ++a) {
        Evaluate(first_[v] + a, p, other, child_average, child_best);
        const T* s = strategy + a * n;
        for (int i = 0; i < np; ++i) {
          average[i] += s[i] * child_average[i];
          best[i] = std::max(best[i], child_best[i]);
        }
      }
    } else {
      std::fill(best, best + np, T(0));
      T* next = Take(n);
      for (int a = 0; a < actions; ++a) {
        const T* s = strategy + a * n;
        for (int i = 0; i < n; ++i) next[i] = other[i] * s[i];
        Evaluate(first_[v] + a, p, next, child_average, child_best);
        for (int i = 0; i < np; ++i) {
          average[i] += child_average[i];
          best[i] += child_best[i];
        }
      }
    }
    top_ = mark;
  }

  const int8_t* kind_;
  const int8_t* player_;
  const int32_t* first_;
  const int32_t* count_;
  const double* amount_;
  Rule rule_;
  Side<T> side_[2];
  std::vector<size_t> offset_;
  std::vector<T> regret_, average_, arena_;
  size_t top_ = 0;
  double normalizer_ = 0;
  struct {
    T pos, neg, scale;
  } discount_{1, 1, 1};
};

template <typename T>
int Solve(int nodes, const int8_t* kind, const int8_t* player, const int32_t* first, const int32_t* count,
          const double* amount, int hands, const int32_t* cards, const int32_t* strength, const double* weights,
          const double* rule, int max_iterations, int eval_every, double target, double* curve,
          int32_t* checks, double* values, double* nash_conv, int32_t* iterations, double* check_seconds,
          double* equity, double* root) {
  Rule r{rule[0], rule[0] != 0, rule[1] != 0, rule[2] != 0, rule[3], rule[4], rule[5], rule[6]};
  Solver<T> solver(nodes, kind, player, first, count, amount, hands, cards, strength, weights, r);
  if (solver.hands(0) == 0 || solver.hands(1) == 0 || !(solver.normalizer() > 0)) return 1;
  solver.Equity(equity);
  int done = 0, made = 0;
  double spent = 0, conv = 0;
  while (done < max_iterations) {
    int steps = std::min(eval_every, max_iterations - done);
    for (int k = 0; k < steps; ++k) solver.Iterate(++done);
    auto start = std::chrono::steady_clock::now();
    conv = solver.NashConv(values);
    spent += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    curve[2 * made] = done;
    curve[2 * made + 1] = conv / 2;
    ++made;
    if (conv / 2 <= target) break;
  }
  *checks = made;
  *nash_conv = conv;
  *iterations = done;
  *check_seconds = spent;
  if (root != nullptr) solver.Average(0, hands, root);
  return 0;
}

}  // namespace

extern "C" {

// Returns 0, or 1 where no pair of the two ranges' hands is without a card in common.
// curve: [ceil(max_iterations / eval_every), 2] (iteration, exploitability) per check; equity: [2] the
// check-down shares; root: [A, hands] the root's average strategy, or null.
// rule: (instant power or 0, clip, discount, alpha, beta, offset, averaging power).
#define JAXCFR_RIVER_SOLVE(name, T)                                                                            \
  int name(int nodes, const int8_t* kind, const int8_t* player, const int32_t* first, const int32_t* count,    \
           const double* amount, int hands, const int32_t* cards, const int32_t* strength,                     \
           const double* weights, const double* rule, int max_iterations, int eval_every, double target,       \
           double* curve, int32_t* checks, double* values, double* nash_conv, int32_t* iterations,             \
           double* check_seconds, double* equity, double* root) {                                              \
    return Solve<T>(nodes, kind, player, first, count, amount, hands, cards, strength, weights, rule,          \
                    max_iterations, eval_every, target, curve, checks, values, nash_conv, iterations,          \
                    check_seconds, equity, root);                                                              \
  }

JAXCFR_RIVER_SOLVE(jaxcfr_river_solve_f32, float)
JAXCFR_RIVER_SOLVE(jaxcfr_river_solve_f64, double)
}
