// A flop, turn or river spot's whole solve as one native call, built and loaded by
// jaxcfr/poker/subgame/native.py.
//
// The same algorithm as jaxcfr.poker.subgame.solver's array form, iteration for iteration: alternating
// updates, OOP's half first; in OOP's half the average's weights of every decision take the acting
// player's reach (discounted by ((t - 1) / t)^power first); the regret rule is the chain accumulate ->
// [clip at 0] -> [discount] of jaxcfr.solvers (CFR, CFR+, Linear CFR, DCFR, DCFR+); regret matching is
// uniform where no regret is positive. Checks every `eval_every` iterations (and at the last) compute
// NashConv of the average strategy with one pass per player that carries its values under the average
// and as a best response together; the solve stops at the first check at most `target`. What differs
// from the array form is the layout: each player keeps its own hands (those its range holds, and below
// a chance node those the dealt cards leave, in order of strength on that board), and a tree is walked
// level by level (`River`: reaches down, every terminal in vector-wide batches, values and regrets up),
// so an iteration is short loops rather than XLA kernels.
//
// Contexts: context 0 is the spot's own board; each other context is a board with one card more, dealt
// from its parent context (a flop's turn cards, and below each the river cards), where a chance node's
// children lead. For each card, every chance node gathers each player's reach into the card's hands
// and walks its child (the next street's tree, down to its own chance nodes); the children's values
// are added back, times the chance weight (1 / the cards that can come given both hands) (`Deal`).
// Cards whose suits are interchangeable (`rep`, `pull`: jaxcfr.poker.subgame.isomorphism) are solved
// once per class: card k's values for hand h are its class's first card's for the hand pull[k][h]. The
// spot's own deal's cards go to a pool of threads; the sums run in the cards' order, so any count of
// threads gives the same numbers.
//
// Terminal values for player p against the opponent's reach r over its hands (c1, c2 a hand's cards):
//   fold      +-amount * (sum r - card[c1] - card[c2] + r(the same hand)), card[c] the sum of r over
//             the opponent's hands that hold c;
//   showdown  amount * (win - lose): one walk up the hands in order of strength, win (the weight of
//             compatible weaker hands) before each run of equal strength, and win - lose = before +
//             after - full, the same hand tying and in neither.
//
// Everything is in the caller's arrays (numpy, C order) and scratch arenas made here; no globals, so
// calls on several threads at once are safe.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>
#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace {

constexpr int kDecision = 0, kChance = 1, kFold = 2, kShowdown = 3;

struct Rule {
  double instant_power;  // r <- t^w r before accumulating (Linear CFR: 1; else 0 and unused)
  bool weighted, clip, discount;
  double alpha, beta, offset, power;
};

struct Group {  // a run of a side's hands of equal strength: [begin, end), and the opponent's hands
  int begin, end, weaker, not_stronger;  // weaker than it (the first `weaker`) and not stronger
};

template <typename T>
struct Side {  // one player's hands in one context: those of its range, by increasing strength
  int n = 0;
  std::vector<int> index;        // position in the union
  std::vector<int> top;          // position in the side of the context it is dealt from
  std::vector<int> c1, c2;       // cards
  std::vector<int> strength;
  std::vector<int> same;         // the opponent's position of the same hand, or -1
  std::vector<T> weight;         // range weights
  std::vector<Group> groups;     // the runs of equal strength, against the opponent's hands
};

template <typename T>
struct Lanes;  // one 32-byte vector of T (GCC's and Clang's vector extensions): a batch's rows
template <>
struct Lanes<float> {
  typedef float V __attribute__((vector_size(32)));
};
template <>
struct Lanes<double> {
  typedef double V __attribute__((vector_size(32)));
};

template <typename T>
struct Scratch {  // one thread's arena: a stack of vectors taken and given back level by level
  std::vector<T> data;
  std::vector<const T*> pointers;  // a plan's walk: per node, its reaches and values (`Solver::River`)
  size_t top = 0, pointers_top = 0;
  T* Take(size_t n) {
    T* at = data.data() + top;
    top += n;
    return at;
  }
  const T** TakePointers(size_t n) {
    const T** at = pointers.data() + pointers_top;
    pointers_top += n;
    return at;
  }
};

// Helper threads that stay for a solve: Run(work) calls work(part) on each (part 1, 2, ...) and on the
// caller (part 0) and returns once all have returned. A solve runs a few thousand of these a second,
// so each side spins a while for the other before it sleeps on a condition variable.
class Pool {
 public:
  explicit Pool(int helpers) {
    for (int part = 1; part <= helpers; ++part) threads_.emplace_back([this, part] { Serve(part); });
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      round_.fetch_add(1);
    }
    wake_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

  int size() const { return static_cast<int>(threads_.size()) + 1; }

  void Run(const std::function<void(int)>& work) {
    if (threads_.empty()) {
      work(0);
      return;
    }
    work_ = &work;
    busy_.store(static_cast<int>(threads_.size()));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      round_.fetch_add(1);
    }
    wake_.notify_all();
    work(0);
    if (Spin([this] { return busy_.load() == 0; })) return;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_.load() == 0; });
  }

 private:
  template <typename F>
  static bool Spin(F ready) {
    for (int k = 0; k < 20000; ++k) {
      if (ready()) return true;
      std::this_thread::yield();
    }
    return ready();
  }

  void Serve(int part) {
    size_t seen = 0;
    for (;;) {
      if (!Spin([&] { return round_.load() != seen; })) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return round_.load() != seen; });
      }
      seen = round_.load();
      if (stop_) return;
      (*work_)(part);
      if (busy_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* work_ = nullptr;
  std::atomic<size_t> round_{0};
  std::atomic<int> busy_{0};
  bool stop_ = false;
};

struct Spot {  // the caller's arrays
  int nodes;
  const int8_t *kind, *player;
  const int32_t *first, *count, *context;
  const double* amount;  // fold: what the folder loses; showdown: what the loser loses; chance: its weight
  int hands, contexts;
  const int32_t *cards, *strength, *parent, *dealt, *rep, *pull;
  const double *chance, *weights;
};

template <typename T>
class Solver {
 public:
  // `allocate` false: only what `held` counts is worked out (nothing the solve keeps is made).
  Solver(const Spot& spot, const Rule& rule, int threads, bool allocate = true)
      : spot_(spot), rule_(rule), threads_(std::max(threads, 1)) {
    int contexts = spot.contexts;
    // The contexts a walk enters: the spot's board, and below a live context each card solved (the
    // first of its class); the others are only mapped (`back_`).
    live_.assign(contexts, false);
    children_.resize(contexts);
    solved_.resize(contexts);
    mates_.resize(contexts);
    side_.resize(contexts);
    live_[0] = true;
    std::vector<int> where(spot.hands);
    for (int k = 0; k < contexts; ++k) {
      int up = spot.parent[k];
      if (k > 0 && (up < 0 || !live_[up])) continue;
      if (k > 0) {
        children_[up].push_back(k);
        if (spot.rep[k] != k) continue;
        solved_[up].push_back(k);
        live_[k] = true;
      }
      for (int p = 0; p < 2; ++p) MakeSide(k, p);
      for (int p = 0; p < 2; ++p) {
        Side<T>& side = side_[k][p];
        Locate(side_[k][1 - p], &where);
        side.same.resize(side.n);
        for (int i = 0; i < side.n; ++i) side.same[i] = where[side.index[i]];
      }
    }
    // Per card of a live context's deal and player: for each hand of the context, its value's position
    // in the solved card's side (that side's size where the card blocks the hand: `Deal` keeps a 0
    // there).
    back_.resize(contexts);
    for (int up = 0; up < contexts; ++up) {
      for (int k : children_[up]) {
        int r = spot.rep[k];
        mates_[r].push_back(k);
        const int32_t* pull = spot.pull + static_cast<size_t>(k) * spot.hands;
        for (int p = 0; p < 2; ++p) {
          Locate(side_[r][p], &where);
          const Side<T>& above = side_[up][p];
          std::vector<int>& back = back_[k][p];
          back.assign(above.n, side_[r][p].n);
          for (int i = 0; i < above.n; ++i) {
            int h = above.index[i];
            if (above.c1[i] != spot.dealt[k] && above.c2[i] != spot.dealt[k]) back[i] = where[pull[h]];
          }
        }
      }
    }
    // State: per decision node and action, over the actor's hands in the node's context; the nodes
    // under a card solved through its class's first card have none.
    offset_.assign(spot.nodes, 0);
    size_ = 0;
    Allocate(0);
    widest_ = 0;
    most_ = 0;
    for (int v = 0; v < spot.nodes; ++v) widest_ = std::max(widest_, static_cast<int>(spot.count[v]));
    for (int k = 0; k < contexts; ++k)
      if (live_[k]) most_ = std::max({most_, side_[k][0].n, side_[k][1].n});
    // Plans: the spot's own tree down to its chance nodes (a river spot's whole tree), and for each card
    // solved the next street's trees below all of them, one forest down to its own chance nodes, and so
    // on; each walks level by level (`River`).
    AddPlan({0});
    arena_size_ = Need(0, true) + 4 * (static_cast<size_t>(most_) + 1) * 4 + 64;  // and `Equity`'s
    dealt_size_ = plans_[0].chances.size() * solved_[0].size() * 2 * static_cast<size_t>(most_ + 1);
    if (!allocate) return;
    regret_.assign(size_, T(0));
    average_.assign(size_, T(0));
    dealt_.assign(dealt_size_, T(0));
    pool_ = std::make_unique<Pool>(threads_ - 1);
    scratch_.resize(threads_);
    for (Scratch<T>& scratch : scratch_) {
      scratch.data.assign(arena_size_, T(0));
      scratch.pointers.assign(PointerNeed(0), nullptr);
    }
    Scratch<T>& s = scratch_[0];
    T* mass = s.Take(side_[0][0].n);  // the deals' total weight, once: the ranges do not change
    Sums(s, 0, 0, side_[0][1].weight.data(), mass, nullptr);
    normalizer_ = Dot(0, mass);
    s.top = 0;
  }

  int hands(int p) const { return side_[0][p].n; }
  int widest() const { return widest_; }
  // The bytes the solve holds: regrets and averages, the chance nodes' values per card, the threads'
  // arenas, each context's hands and the plans.
  size_t held() const {
    size_t bytes = (2 * size_ + dealt_size_ + threads_ * arena_size_) * sizeof(T);
    for (const std::array<Side<T>, 2>& sides : side_)  // each context's hands
      for (const Side<T>& side : sides)
        bytes += side.n * (6 * sizeof(int) + sizeof(T)) + side.groups.size() * sizeof(Group);
    for (const Plan& plan : plans_)  // the walks' node lists
      bytes += (plan.node.size() + plan.first.size() + plan.chances.size() + plan.sub.size()) * sizeof(int);
    for (int k = 0; k < spot_.contexts; ++k)  // the cards' hand maps
      bytes += (back_[k][0].size() + back_[k][1].size()) * sizeof(int);
    return bytes;
  }

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
      Scratch<T>& s = scratch_[0];
      s.top = 0;
      T* out = s.Take(side_[0][p].n);
      const T* own = side_[0][p].weight.data();
      const T* other = side_[0][1 - p].weight.data();
      River(s, plans_[0], p, &own, &other, &out, p == 0, keep);
    }
  }

  // NashConv of the average strategy; each player's value per deal under it in `values`.
  double NashConv(double* values) {
    double conv = 0;
    for (int p = 0; p < 2; ++p) {
      Scratch<T>& s = scratch_[0];
      s.top = 0;
      T* average = s.Take(side_[0][p].n);
      T* best = s.Take(side_[0][p].n);
      const T* own = nullptr;
      const T* other = side_[0][1 - p].weight.data();
      River(s, plans_[0], p, &own, &other, &average, false, T(0), &best);
      double a = Dot(p, average), b = Dot(p, best);
      values[p] = a / normalizer_;
      conv += (b - a) / normalizer_;
    }
    return conv;
  }

  // Each player's share of the pot if both checked down (ties split), per deal: on the spot's board (a
  // river spot), else averaged over the cards to come.
  void Equity(double* out) {
    Scratch<T>& s = scratch_[0];
    for (int p = 0; p < 2; ++p) {
      s.top = 0;
      T* total = s.Take(side_[0][p].n);
      Share(s, 0, p, total);
      out[p] = Dot(p, total) / 2 / normalizer_;
    }
  }

  // Player p's share in context k over its hands there, doubled (win twice plus ties), averaged over
  // the cards to come: on a river board, the weight of the compatible hands plus win minus lose.
  void Share(Scratch<T>& s, int k, int p, T* out) {
    int n = side_[k][p].n;
    size_t mark = s.top;
    if (children_[k].empty()) {
      T* difference = s.Take(n);
      Sums(s, k, p, side_[k][1 - p].weight.data(), out, difference);
      for (int i = 0; i < n; ++i) out[i] += difference[i];
      s.top = mark;
      return;
    }
    std::fill(out, out + n, T(0));
    for (int r : solved_[k]) {
      int nr = side_[r][p].n;
      T* below = s.Take(nr + 1);
      Share(s, r, p, below);
      below[nr] = T(0);
      T weight = static_cast<T>(spot_.chance[r]);
      for (int mate : mates_[r]) {
        const int* back = back_[mate][p].data();
        for (int i = 0; i < n; ++i) out[i] += weight * below[back[i]];
      }
      s.top = mark;
    }
  }

  // The average strategy at decision node v over the union's hands [A, hands] (uniform for hands not in
  // the actor's range, as the array form's average has them).
  void Average(int v, double* out) const {
    const Side<T>& side = side_[spot_.context[v]][spot_.player[v]];
    int actions = spot_.count[v], hands = spot_.hands;
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
  // where[h] = h's position in `side`, -1 where it has none.
  static void Locate(const Side<T>& side, std::vector<int>* where) {
    std::fill(where->begin(), where->end(), -1);
    for (int i = 0; i < side.n; ++i) (*where)[side.index[i]] = i;
  }

  // Player p's side in context k: the range's hands (context 0), or those of the context it is dealt
  // from that its card leaves; by strength on k's board, the order before kept among equals. Then,
  // once both sides are made, their runs of equal strength (`Group`).
  void MakeSide(int k, int p) {
    Side<T>& side = side_[k][p];
    const int32_t* strength = spot_.strength + static_cast<size_t>(k) * spot_.hands;
    std::vector<int> from;
    if (k == 0) {
      for (int h = 0; h < spot_.hands; ++h)
        if (spot_.weights[p * spot_.hands + h] > 0) from.push_back(h);
    } else {
      const Side<T>& above = side_[spot_.parent[k]][p];
      for (int i = 0; i < above.n; ++i)
        if (above.c1[i] != spot_.dealt[k] && above.c2[i] != spot_.dealt[k]) from.push_back(above.index[i]);
    }
    std::stable_sort(from.begin(), from.end(), [strength](int a, int b) { return strength[a] < strength[b]; });
    for (int h : from) {
      side.index.push_back(h);
      side.c1.push_back(spot_.cards[2 * h]);
      side.c2.push_back(spot_.cards[2 * h + 1]);
      side.strength.push_back(strength[h]);
      side.weight.push_back(static_cast<T>(spot_.weights[p * spot_.hands + h]));
    }
    side.n = static_cast<int>(side.index.size());
    if (k > 0) {
      std::vector<int> where(spot_.hands);
      Locate(side_[spot_.parent[k]][p], &where);
      side.top.resize(side.n);
      for (int i = 0; i < side.n; ++i) side.top[i] = where[side.index[i]];
    }
    if (p == 0) return;
    for (int q = 0; q < 2; ++q) {
      Side<T>& own = side_[k][q];
      const Side<T>& other = side_[k][1 - q];
      int weaker = 0, not_stronger = 0;
      for (int i = 0; i < own.n;) {
        int end = i;
        while (end < own.n && own.strength[end] == own.strength[i]) ++end;
        while (weaker < other.n && other.strength[weaker] < own.strength[i]) ++weaker;
        not_stronger = std::max(not_stronger, weaker);
        while (not_stronger < other.n && other.strength[not_stronger] <= own.strength[i]) ++not_stronger;
        own.groups.push_back({i, end, weaker, not_stronger});
        i = end;
      }
    }
  }

  void Allocate(int v) {
    int kind = spot_.kind[v];
    if (kind == kDecision) {
      offset_[v] = size_;
      size_ += static_cast<size_t>(spot_.count[v]) * side_[spot_.context[v]][spot_.player[v]].n;
    }
    if (kind != kDecision && kind != kChance) return;
    for (int a = 0; a < spot_.count[v]; ++a) {
      int child = spot_.first[v] + a;
      int k = spot_.context[child];
      if (kind == kChance && spot_.rep[k] != k) continue;
      Allocate(child);
    }
  }

  // Sum over player p's hands (context 0) of its range weight times x, in double.
  double Dot(int p, const T* x) const {
    const Side<T>& side = side_[0][p];
    double sum = 0;
    for (int i = 0; i < side.n; ++i) sum += static_cast<double>(side.weight[i]) * x[i];
    return sum;
  }

  // Player p's values in context k against the opponent's reach at a fold worth 1 (`fold`: the
  // opponent's weight apart from each hand) and a showdown worth 1 (`showdown`: win - lose), either
  // left out where null: one lane of a `Batch`.
  void Sums(Scratch<T>& s, int k, int p, const T* reach, T* fold, T* showdown) {
    Lane lane{reach};
    lane.into[0] = fold;
    lane.into[1] = showdown;
    lane.amount[0] = lane.amount[1] = T(1);
    Batch(s, k, p, 1, &lane);
  }

  // Regret matching at v into strategy [A, n].
  void Match(Scratch<T>& s, int v, int n, T* strategy) {
    Normalize<true>(s, spot_.count[v], n, regret_.data() + offset_[v], strategy);
  }

  // into [A, n]: x [A, n] (its positive parts, with `positive`) normalised over the actions, uniform
  // where they sum to 0; two passes over x (loops over the hands, which the compiler vectorises).
  template <bool positive>
  static void Normalize(Scratch<T>& s, int actions, int n, const T* x, T* into) {
    auto part = [](T value) { return positive ? std::max(value, T(0)) : value; };
    size_t mark = s.top;
    T* total = s.Take(n);
    for (int i = 0; i < n; ++i) total[i] = part(x[i]);
    for (int a = 1; a < actions; ++a)
      for (int i = 0; i < n; ++i) total[i] += part(x[a * n + i]);
    using V = typename Lanes<T>::V;
    constexpr int W = sizeof(V) / sizeof(T);
    T uniform = T(1) / actions;
    V zero = {}, one = zero + T(1), even = zero + uniform;
    for (int a = 0; a < actions; ++a) {
      const T* row = x + a * n;
      T* out = into + a * n;
      int i = 0;
      for (; i + W <= n; i += W) {  // in vectors: a division the compiler would not move out of its branch
        V t, r;
        std::memcpy(&t, total + i, sizeof(V));
        std::memcpy(&r, row + i, sizeof(V));
        if (positive) r = r > zero ? r : zero;
        V q = t > zero ? r / (t > zero ? t : one) : even;
        std::memcpy(out + i, &q, sizeof(V));
      }
      for (; i < n; ++i) out[i] = total[i] > 0 ? part(row[i]) / total[i] : uniform;
    }
    s.top = mark;
  }

  // Whether any of the reaches x [n] (all at least 0) is above 0.
  static bool Reached(const T* x, int n) {
    int any = 0;  // an OR over the hands, which the compiler vectorises (a max over floats it does not)
    for (int i = 0; i < n; ++i) any |= x[i] > 0;
    return any != 0;
  }

  // Gathers player q's vector x over the hands of the context card k is dealt from into k's hands.
  void Gather(int k, int q, const T* x, T* out) const {
    const Side<T>& side = side_[k][q];
    for (int i = 0; i < side.n; ++i) out[i] = x[side.top[i]];
  }

  // A forest's nodes in breadth-first order from its roots (children consecutive), down to its folds,
  // showdowns and chance nodes: what a walk level by level needs. The spot's own plan has one root, the
  // spot's; below a plan's chance nodes, for each card solved, a plan has a root for each of them: its
  // child in the card's context (the next street's tree, an all-in's next deal or its showdown), so
  // that one walk takes them all and their terminals share batches.
  struct Plan {
    std::vector<int> node;   // the tree's node of each
    std::vector<int> first;  // a decision's first child, in this order
    int decisions = 0, context = 0, roots = 1;
    std::vector<int> chances;  // the positions of its chance nodes
    std::vector<int> sub;      // per card solved of their deal (`solved_[context]`): the plan below
  };

  Plan MakePlan(const std::vector<int>& roots) const {
    Plan plan;
    plan.context = spot_.context[roots[0]];
    plan.node = roots;
    plan.roots = static_cast<int>(roots.size());
    for (size_t u = 0; u < plan.node.size(); ++u) {
      int v = plan.node[u];
      plan.first.push_back(static_cast<int>(plan.node.size()));
      if (spot_.kind[v] == kChance) plan.chances.push_back(static_cast<int>(u));
      if (spot_.kind[v] != kDecision) continue;
      ++plan.decisions;
      for (int a = 0; a < spot_.count[v]; ++a) plan.node.push_back(spot_.first[v] + a);
    }
    return plan;
  }

  // Adds the plan from `roots` and those below its chance nodes; returns its index in `plans_`.
  int AddPlan(const std::vector<int>& roots) {
    int at = static_cast<int>(plans_.size());
    plans_.push_back(MakePlan(roots));
    const std::vector<int> chances = plans_[at].chances, nodes = plans_[at].node;
    if (chances.empty()) return at;
    const std::vector<int>& solved = solved_[plans_[at].context];
    std::vector<std::vector<int>> below(solved.size(), std::vector<int>(chances.size(), -1));
    for (size_t c = 0; c < chances.size(); ++c) {
      int v = nodes[chances[c]];
      for (int a = 0; a < spot_.count[v]; ++a) {
        int n = spot_.first[v] + a, k = spot_.context[n];
        if (live_[k]) below[Solved(k)][c] = n;
      }
    }
    std::vector<int> sub;
    for (const std::vector<int>& next : below) sub.push_back(AddPlan(next));
    plans_[at].sub = std::move(sub);
    return at;
  }

  // Card k's position among its deal's cards solved.
  int Solved(int k) const {
    const std::vector<int>& solved = solved_[spot_.parent[k]];
    return static_cast<int>(std::lower_bound(solved.begin(), solved.end(), k) - solved.begin());
  }

  // The arena a walk of plan `at` takes at most, the plans below it included (the spot's own plan's
  // cards' values are kept apart, in `dealt_`).
  size_t Need(int at, bool top) const {
    const Plan& plan = plans_[at];
    auto batch = [](size_t hands) { return 4 * (hands + 1) * kBatch + 53 * kBatch + hands + 64; };
    size_t hands = std::max(side_[plan.context][0].n, side_[plan.context][1].n);
    size_t walk = plan.node.size() * 4 * hands + plan.decisions * widest_ * hands + hands + batch(hands);
    if (plan.chances.empty()) return walk;
    size_t chances = plan.chances.size(), stride = static_cast<size_t>(most_) + 1;
    size_t deal = (top ? 0 : chances * 2 * stride) + chances * 2 * stride;
    size_t below = 0;
    for (int sub : plan.sub) below = std::max(below, Need(sub, false));
    return walk + deal + below;
  }

  // The pointers a walk of plan `at` takes at most (`River`'s), the plans below it included.
  size_t PointerNeed(int at) const {
    size_t below = 0;
    for (int sub : plans_[at].sub) below = std::max(below, PointerNeed(sub));
    return 5 * plans_[at].node.size() + 4 * plans_[at].chances.size() + below;
  }

  // One half's work on a plan (the spot's own tree down to its chance nodes, or one card's forest of
  // the next street's trees), level by level from the reaches of its roots (`own`, `other`: per root):
  // the reaches top down (strategies, the average's weights), the folds' and showdowns' values in
  // batches (`Batch`) and the chance nodes' (`Deal`), then the values and regrets bottom up, each
  // root's into `out` (per root). The same numbers as a walk node by node: each node's strategy comes
  // from its regrets before this half's update, which touches no other node's. With `best` (an
  // evaluation, `NashConv`'s): the average strategy's values into `out` and the best response's into
  // `best`, nothing updated.
  void River(Scratch<T>& s, const Plan& plan, int p, const T* const* own, const T* const* other, T* const* out,
             bool first, T keep, T* const* best = nullptr) {
    int k = plan.context, nodes = static_cast<int>(plan.node.size()), roots = plan.roots;
    int np = side_[k][p].n, no = side_[k][1 - p].n;
    size_t mark = s.top;
    bool evaluate = best != nullptr;
    size_t pointers_mark = s.pointers_top;
    const T** reach_own = s.TakePointers(nodes);  // p's reach (kept only where the average needs it)
    const T** reach_other = s.TakePointers(nodes);
    T** values = const_cast<T**>(s.TakePointers(nodes));
    T** bests = const_cast<T**>(s.TakePointers(nodes));
    T** strategy = const_cast<T**>(s.TakePointers(nodes));
    for (int u = 0; u < roots; ++u) {
      reach_own[u] = own[u];
      reach_other[u] = other[u];
    }
    for (int u = 0; u < nodes; ++u) {
      int v = plan.node[u];
      values[u] = u < roots ? out[u] : s.Take(np);
      if (evaluate) bests[u] = u < roots ? best[u] : s.Take(np);
      if (spot_.kind[v] != kDecision) continue;
      int actor = spot_.player[v], actions = spot_.count[v], n = side_[k][actor].n;
      T* st = strategy[u] = s.Take(actions * n);
      if (evaluate) {
        Normalize<false>(s, actions, n, average_.data() + offset_[v], st);
      } else {
        Match(s, v, n, st);
      }
      const T* reach = actor == p ? reach_own[u] : reach_other[u];
      if (first) {
        T* average = average_.data() + offset_[v];
        for (int a = 0; a < actions; ++a) {
          T* row = average + a * n;
          const T* sa = st + a * n;
          for (int i = 0; i < n; ++i) row[i] = row[i] * keep + reach[i] * sa[i];
        }
      }
      for (int a = 0; a < actions; ++a) {
        int c = plan.first[u] + a;
        const T* sa = st + a * n;
        reach_own[c] = reach_own[u];
        reach_other[c] = reach_other[u];
        if (actor != p) {
          T* next = s.Take(n);
          for (int i = 0; i < n; ++i) next[i] = reach_other[u][i] * sa[i];
          reach_other[c] = next;
        } else if (first) {
          T* next = s.Take(n);
          for (int i = 0; i < n; ++i) next[i] = reach_own[u][i] * sa[i];
          reach_own[c] = next;
        }
      }
    }
    // The terminals whose deals some reach gets (the others are zero), a batch's lane per reach: a
    // fold and a showdown below one of p's decisions see the same reach, and share a lane.
    Lane lanes[kBatch];
    int live = 0;
    for (int u = 0; u < nodes; ++u) {
      int v = plan.node[u], kind = spot_.kind[v];
      if (kind != kFold && kind != kShowdown) continue;
      if (!Reached(reach_other[u], no)) {
        std::fill(values[u], values[u] + np, T(0));
        continue;
      }
      int m = 0;
      while (m < live && (lanes[m].reach != reach_other[u] || lanes[m].into[kind == kShowdown] != nullptr)) ++m;
      if (m == live) {
        if (live == kBatch) {
          Batch(s, k, p, live, lanes);
          live = m = 0;
        }
        lanes[m] = Lane{reach_other[u]};
        ++live;
      }
      T amount = static_cast<T>(spot_.amount[v]);
      lanes[m].into[kind == kShowdown] = values[u];
      lanes[m].amount[kind == kShowdown] = kind == kFold && spot_.player[v] == p ? -amount : amount;
    }
    if (live > 0) Batch(s, k, p, live, lanes);
    if (evaluate) {
      for (int u = 0; u < nodes; ++u) {
        int kind = spot_.kind[plan.node[u]];
        if (kind == kFold || kind == kShowdown) std::copy(values[u], values[u] + np, bests[u]);
      }
    }
    if (!plan.chances.empty()) Deal(s, plan, p, reach_own, reach_other, values, evaluate ? bests : nullptr, first, keep);
    auto [pos, neg, scale] = discount_;
    for (int u = nodes - 1; u >= 0; --u) {
      int v = plan.node[u];
      if (spot_.kind[v] != kDecision) continue;
      int actor = spot_.player[v], actions = spot_.count[v], n = side_[k][actor].n;
      T* result = values[u];
      const T* child = values[plan.first[u]];
      if (actor != p) {
        std::copy(child, child + np, result);
        for (int a = 1; a < actions; ++a) {
          child = values[plan.first[u] + a];
          for (int i = 0; i < np; ++i) result[i] += child[i];
        }
        if (evaluate) {
          T* most = bests[u];
          std::copy(bests[plan.first[u]], bests[plan.first[u]] + np, most);
          for (int a = 1; a < actions; ++a) {
            child = bests[plan.first[u] + a];
            for (int i = 0; i < np; ++i) most[i] += child[i];
          }
        }
        continue;
      }
      const T* st = strategy[u];
      std::fill(result, result + np, T(0));
      for (int a = 0; a < actions; ++a) {
        const T* sa = st + a * n;
        child = values[plan.first[u] + a];
        for (int i = 0; i < np; ++i) result[i] += sa[i] * child[i];
      }
      if (evaluate) {
        T* most = bests[u];
        std::copy(bests[plan.first[u]], bests[plan.first[u]] + np, most);
        for (int a = 1; a < actions; ++a) {
          child = bests[plan.first[u] + a];
          for (int i = 0; i < np; ++i) most[i] = std::max(most[i], child[i]);
        }
        continue;
      }
      T* regret = regret_.data() + offset_[v];
      for (int a = 0; a < actions; ++a) {
        child = values[plan.first[u] + a];
        T* ra = regret + a * np;
        for (int i = 0; i < np; ++i) {
          T instant = child[i] - result[i];
          if (rule_.weighted) instant *= scale;
          T r = ra[i] + instant;
          if (rule_.clip) r = std::max(r, T(0));
          if (rule_.discount) r *= r > 0 ? pos : neg;
          ra[i] = r;
        }
      }
    }
    s.top = mark;
    s.pointers_top = pointers_mark;
  }

  // The chance nodes of `plan` (`Plan::chances`), whose reaches and values are at their plan positions:
  // for every card solved, the chance nodes' children in the card's context, walked together (`River`
  // on the plan below: the next street's trees, whose own chance nodes deal on, an all-in's next deal
  // or its showdown); their values summed over the cards (every card of a class, the chance weight) in
  // the cards' order. The spot's own plan spreads its cards over the pool's threads as they come free,
  // keeps each card's values and splits the sums by hands (the same numbers whatever the threads); a
  // plan below it deals on the thread that walks it, adding each card's values as they come. With
  // `bests`, an evaluation's (`River`'s).
  void Deal(Scratch<T>& s, const Plan& plan, int p, const T* const* reach_own, const T* const* reach_other,
            T* const* values, T* const* bests, bool first, T keep) {
    bool evaluate = bests != nullptr, top = &plan == &plans_[0];
    int up = plan.context;
    const std::vector<int>& solved = solved_[up];
    size_t chances = plan.chances.size(), stride = static_cast<size_t>(most_) + 1, mark = s.top;
    size_t kept = top ? solved.size() : 1;  // the cards whose values are kept at once
    T* store = top ? dealt_.data() : s.Take(chances * 2 * stride);
    auto dealt = [&](size_t c, size_t m, int x) { return store + ((c * kept + m % kept) * 2 + x) * stride; };
    auto card = [&](Scratch<T>& s, size_t m) {  // card m of `solved`: its children's values
      size_t mark = s.top, pointers_mark = s.pointers_top;
      int k = solved[m], nk = side_[k][p].n, ok = side_[k][1 - p].n;
      const T** own = s.TakePointers(chances);
      const T** other = s.TakePointers(chances);
      T** into = const_cast<T**>(s.TakePointers(chances));
      T** most = const_cast<T**>(s.TakePointers(chances));
      for (size_t c = 0; c < chances; ++c) {
        int u = plan.chances[c];
        T* gathered = s.Take(ok);
        Gather(k, 1 - p, reach_other[u], gathered);
        other[c] = gathered;
        own[c] = nullptr;
        if (first) {
          gathered = s.Take(nk);
          Gather(k, p, reach_own[u], gathered);
          own[c] = gathered;
        }
        into[c] = dealt(c, m, 0);
        most[c] = dealt(c, m, 1);
      }
      River(s, plans_[plan.sub[m]], p, own, other, into, first, keep, evaluate ? most : nullptr);
      for (size_t c = 0; c < chances; ++c)
        dealt(c, m, 0)[nk] = dealt(c, m, 1)[nk] = T(0);  // what a hand the card blocks adds (`back_`)
      s.top = mark;
      s.pointers_top = pointers_mark;
    };
    // The chance nodes' values (and with `bests` their best responses') over hands [from, to):
    // cleared, each card's added (every card of its class, through `back_`), times the chance weight.
    auto each = [&](auto&& work) {  // work(values, chance node c, x: 0 values, 1 bests, its weight)
      for (size_t c = 0; c < chances; ++c) {
        int u = plan.chances[c];
        T weight = static_cast<T>(spot_.amount[plan.node[u]]);
        for (int x = 0; x < 1 + evaluate; ++x) work(x == 0 ? values[u] : bests[u], c, x, weight);
      }
    };
    auto clear = [&](int from, int to) {
      each([&](T* out, size_t, int, T) { std::fill(out + from, out + to, T(0)); });
    };
    auto add = [&](size_t m, int from, int to) {
      each([&](T* out, size_t c, int x, T) {
        const T* kept = dealt(c, m, x);
        for (int mate : mates_[solved[m]]) {
          const int* back = back_[mate][p].data();
          for (int i = from; i < to; ++i) out[i] += kept[back[i]];
        }
      });
    };
    auto scale = [&](int from, int to) {
      each([&](T* out, size_t, int, T weight) {
        for (int i = from; i < to; ++i) out[i] *= weight;
      });
    };
    int np = side_[up][p].n;
    if (!top) {  // each card's values added as they come: the cards' order all the same
      clear(0, np);
      for (size_t m = 0; m < solved.size(); ++m) {
        card(s, m);
        add(m, 0, np);
      }
      scale(0, np);
      s.top = mark;
      return;
    }
    std::atomic<size_t> next{0};
    pool_->Run([&](int part) {
      for (size_t m; (m = next.fetch_add(1)) < solved.size();) card(scratch_[part], m);
    });
    int parts = pool_->size();
    pool_->Run([&](int part) {
      int from = static_cast<int>(static_cast<int64_t>(np) * part / parts);
      int to = static_cast<int>(static_cast<int64_t>(np) * (part + 1) / parts);
      clear(from, to);
      for (size_t m = 0; m < solved.size(); ++m) add(m, from, to);
      scale(from, to);
    });
  }

  // One lane of a batch: the opponent's reach, and what it gives (into[0] a fold's values, into[1] a
  // showdown's; null where there is none).
  struct Lane {
    const T* reach = nullptr;
    T* into[2] = {nullptr, nullptr};
    T amount[2] = {0, 0};
  };

  // Player p's values at the folds and showdowns of up to kBatch lanes of context k at once: into =
  // amount * (the fold's or the showdown's sum of the file's header) against the lane's reach. The
  // reaches are laid out hand by hand, the lanes side by side in one vector (GCC's vector
  // extensions), so that one walk up the opponent's hands by strength keeps every lane's running
  // sums in vector operations: a fold takes the sums at the end (and the same hand's reach back), a
  // showdown before + after - full for each run of equal strength.
  void Batch(Scratch<T>& s, int k, int p, int count, const Lane* lanes) {
    using V = typename Lanes<T>::V;
    constexpr int B = kBatch;
    const Side<T>& own = side_[k][p];
    const Side<T>& other = side_[k][1 - p];
    auto load = [](const T* at) {
      V x;
      std::memcpy(&x, at, sizeof(V));
      return x;
    };
    auto store = [](T* at, V x) { std::memcpy(at, &x, sizeof(V)); };
    size_t mark = s.top;
    T* laid = s.Take(static_cast<size_t>(other.n) * B);  // [other.n, B]
    T* result = s.Take(static_cast<size_t>(own.n) * B);  // [own.n, B]
    T* card = s.Take(52 * B);
    T* zero = s.Take(std::max(other.n, own.n));  // the rows past `count` read and write here
    std::fill(card, card + 52 * B, T(0));
    std::fill(zero, zero + std::max(other.n, own.n), T(0));
    const T* from[B];
    for (int m = 0; m < B; ++m) from[m] = m < count ? lanes[m].reach : zero;
    Lay(from, other.n, laid);
    V total = {};
    auto add = [&](int j) {
      V r = load(laid + j * B);
      total += r;
      T* a = card + other.c1[j] * B;
      T* b = card + other.c2[j] * B;
      store(a, load(a) + r);
      store(b, load(b) + r);
    };
    auto left = [&](int i) {  // the opponent's weight added so far that is apart from hand i
      return total - load(card + own.c1[i] * B) - load(card + own.c2[i] * B);
    };
    int j = 0;
    for (const Group& group : own.groups) {
      for (; j < group.weaker; ++j) add(j);
      for (int m = group.begin; m < group.end; ++m) store(result + m * B, left(m));
      for (; j < group.not_stronger; ++j) add(j);
      for (int m = group.begin; m < group.end; ++m) store(result + m * B, load(result + m * B) + left(m));
    }
    for (; j < other.n; ++j) add(j);
    // Per lane: showdown  amount * (before + after - full);  fold  amount * (full + the same hand's).
    bool folds = false, showdowns = false;
    V fold = {}, down = {};
    for (int m = 0; m < count; ++m) {
      fold[m] = lanes[m].amount[0];
      down[m] = lanes[m].amount[1];
      folds |= lanes[m].into[0] != nullptr;
      showdowns |= lanes[m].into[1] != nullptr;
    }
    T* folded = folds ? s.Take(static_cast<size_t>(own.n) * B) : nullptr;  // [own.n, B]
    for (int i = 0; i < own.n; ++i) {
      V full = left(i);
      if (folds) {
        V same = own.same[i] >= 0 ? load(laid + own.same[i] * B) : V{};
        store(folded + i * B, fold * (full + same));
      }
      if (showdowns) store(result + i * B, down * (load(result + i * B) - full));
    }
    for (int kind = 0; kind < 2; ++kind) {
      if (!(kind == 1 ? showdowns : folds)) continue;
      T* to[B];
      for (int m = 0; m < B; ++m) to[m] = m < count ? lanes[m].into[kind] : nullptr;
      Unlay(kind == 1 ? result : folded, own.n, to);
    }
    s.top = mark;
  }

  // laid [n, kBatch] = the rows rows[0..kBatch) [n] side by side, and back (`Unlay`: rows that are
  // null are left out).
  static void Lay(const T* const* rows, int n, T* laid) {
    int j = 0;
    if constexpr (kTurned) {
      for (; j + kBatch <= n; j += kBatch) {
        const T* from[kBatch];
        T* to[kBatch];
        for (int m = 0; m < kBatch; ++m) {
          from[m] = rows[m] + j;
          to[m] = laid + (j + m) * kBatch;
        }
        Turn(from, to);
      }
    }
    for (; j < n; ++j)
      for (int m = 0; m < kBatch; ++m) laid[j * kBatch + m] = rows[m][j];
  }

  static void Unlay(const T* laid, int n, T* const* rows) {
    int i = 0;
    if constexpr (kTurned) {
      for (; i + kBatch <= n; i += kBatch) {
        const T* from[kBatch];
        T* to[kBatch];
        for (int m = 0; m < kBatch; ++m) {
          from[m] = laid + (i + m) * kBatch;
          to[m] = rows[m] == nullptr ? nullptr : rows[m] + i;
        }
        Turn(from, to);
      }
    }
    for (int m = 0; m < kBatch; ++m)
      if (rows[m] != nullptr)
        for (int j = i; j < n; ++j) rows[m][j] = laid[j * kBatch + m];
  }

  // to[c][r] = from[r][c] for an 8 x 8 block of floats by AVX's shuffles (a null `to` row is left out).
  static void Turn(const T* const* from, T* const* to) {
#if defined(__AVX__)
    if constexpr (kTurned) {
      __m256 r[8], t[8], u[8];
      for (int m = 0; m < 8; ++m) r[m] = _mm256_loadu_ps(reinterpret_cast<const float*>(from[m]));
      for (int m = 0; m < 8; m += 2) {
        t[m] = _mm256_unpacklo_ps(r[m], r[m + 1]);
        t[m + 1] = _mm256_unpackhi_ps(r[m], r[m + 1]);
      }
      for (int m = 0; m < 8; m += 4) {
        u[m] = _mm256_shuffle_ps(t[m], t[m + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[m + 1] = _mm256_shuffle_ps(t[m], t[m + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[m + 2] = _mm256_shuffle_ps(t[m + 1], t[m + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[m + 3] = _mm256_shuffle_ps(t[m + 1], t[m + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      for (int m = 0; m < 4; ++m) {
        if (to[m] != nullptr)
          _mm256_storeu_ps(reinterpret_cast<float*>(to[m]), _mm256_permute2f128_ps(u[m], u[m + 4], 0x20));
        if (to[m + 4] != nullptr)
          _mm256_storeu_ps(reinterpret_cast<float*>(to[m + 4]), _mm256_permute2f128_ps(u[m], u[m + 4], 0x31));
      }
    }
#endif
    (void)from;
    (void)to;
  }

  const Spot spot_;
  Rule rule_;
  int threads_;
  std::vector<std::array<Side<T>, 2>> side_;
  std::vector<std::vector<int>> mates_;            // per solved card: the cards of its class (itself too)
  std::vector<std::array<std::vector<int>, 2>> back_;  // per card and player: see the constructor
  static constexpr int kBatch = 32 / sizeof(T);  // rows of a batch: one 256-bit vector
#if defined(__AVX__)
  static constexpr bool kTurned = std::is_same_v<T, float> && kBatch == 8;  // `Turn` has AVX's shuffles
#else
  static constexpr bool kTurned = false;
#endif
  std::vector<size_t> offset_;
  size_t size_ = 0, arena_size_ = 0, dealt_size_ = 0;
  std::vector<Plan> plans_;
  std::vector<T> regret_, average_;
  std::vector<Scratch<T>> scratch_;  // one per thread of the pool
  std::unique_ptr<Pool> pool_;
  std::vector<bool> live_;                   // per context: whether a walk enters it (`Solver`)
  std::vector<std::vector<int>> children_;   // per live context: the contexts its deal leads to
  std::vector<std::vector<int>> solved_;     // per live context: those of its children solved
  std::vector<T> dealt_;                     // per chance node and card: values (`Dealt`)
  int most_ = 0;                             // the most hands a side has
  int widest_ = 0;                           // the most children a node has
  double normalizer_ = 0;
  struct {
    T pos, neg, scale;
  } discount_{1, 1, 1};
};

template <typename T>
int Solve(const Spot& spot, const double* rule, int threads, int max_iterations, int eval_every,
          double target, double* curve, int32_t* checks, double* values, double* nash_conv,
          int32_t* iterations, double* check_seconds, double* equity, int kept, const int32_t* kept_nodes,
          double* averages, int64_t* held) {
  Rule r{rule[0], rule[0] != 0, rule[1] != 0, rule[2] != 0, rule[3], rule[4], rule[5], rule[6]};
  Solver<T> solver(spot, r, threads);
  if (solver.hands(0) == 0 || solver.hands(1) == 0 || !(solver.normalizer() > 0)) return 1;
  *held = static_cast<int64_t>(solver.held());
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
  for (int i = 0; i < kept; ++i)
    solver.Average(kept_nodes[i], averages + static_cast<size_t>(i) * solver.widest() * spot.hands);
  return 0;
}

}  // namespace

extern "C" {

// Returns 0, or 1 where no pair of the two ranges' hands is without a card in common.
// Tree [nodes]: kind, player (actor or folder), first child, children, context, amount. Hands [hands]:
// cards [hands, 2]. Per context [contexts]: strength [contexts, hands] on its board (river boards; any
// constant elsewhere); parent, the context it is dealt from (-1 for context 0 and contexts no node
// has); dealt, the card it deals (-1 for context 0); rep, the context solved for it (itself where it
// is solved; a context of the same parent); pull [contexts, hands], the hand whose values a hand takes
// from its solved context; chance, its deal's probability. weights [2, hands]. rule: (instant power
// or 0, clip, discount, alpha, beta, offset, averaging power). curve: [ceil(max_iterations /
// eval_every), 2] (iteration, exploitability) per check; equity: [2] the check-down shares; averages:
// [kept, the most children a node has, hands] the average strategy at each of the decision nodes
// kept_nodes (nodes that keep state: of context 0, or below cards solved), rows past a node's
// actions left as they were; held: the bytes the solve held (its state, its working arrays and the
// hands and plans they are walked by).
#define JAXCFR_SPOT_SOLVE(name, T)                                                                              \
  int name(int nodes, const int8_t* kind, const int8_t* player, const int32_t* first, const int32_t* count,     \
           const int32_t* context, const double* amount, int hands, int contexts, const int32_t* cards,         \
           const int32_t* strength, const int32_t* parent, const int32_t* dealt, const int32_t* rep,            \
           const int32_t* pull, const double* chance, const double* weights, const double* rule, int threads,   \
           int max_iterations, int eval_every, double target, double* curve, int32_t* checks, double* values,   \
           double* nash_conv, int32_t* iterations, double* check_seconds, double* equity, int kept,             \
           const int32_t* kept_nodes, double* averages, int64_t* held) {                                        \
    Spot spot{nodes, kind,     player, first, count, context, amount,  hands,                                   \
              contexts, cards, strength, parent, dealt, rep, pull, chance, weights};                            \
    return Solve<T>(spot, rule, threads, max_iterations, eval_every, target, curve, checks, values, nash_conv,  \
                    iterations, check_seconds, equity, kept, kept_nodes, averages, held);                       \
  }

// The bytes the solve of the same arguments would hold (its `held`), nothing solved or kept.
#define JAXCFR_SPOT_BYTES(name, T)                                                                              \
  int64_t name(int nodes, const int8_t* kind, const int8_t* player, const int32_t* first, const int32_t* count, \
               const int32_t* context, const double* amount, int hands, int contexts, const int32_t* cards,     \
               const int32_t* strength, const int32_t* parent, const int32_t* dealt, const int32_t* rep,        \
               const int32_t* pull, const double* chance, const double* weights, int threads) {                 \
    Spot spot{nodes, kind,     player, first, count, context, amount,  hands,                                   \
              contexts, cards, strength, parent, dealt, rep, pull, chance, weights};                            \
    return static_cast<int64_t>(Solver<T>(spot, Rule{}, threads, false).held());                                \
  }

JAXCFR_SPOT_SOLVE(jaxcfr_spot_solve_f32, float)
JAXCFR_SPOT_SOLVE(jaxcfr_spot_solve_f64, double)
JAXCFR_SPOT_BYTES(jaxcfr_spot_bytes_f32, float)
JAXCFR_SPOT_BYTES(jaxcfr_spot_bytes_f64, double)
}
