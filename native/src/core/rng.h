// Deterministic random numbers, identical on every platform and compiler
// (std:: distributions are implementation-defined, so we do not use them).
#pragma once
#include <cmath>
#include <cstdint>

namespace tb {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed ^ 0x9E3779B97F4A7C15ull) {}

  // splitmix64: tiny, fast, and good enough for init, shuffles and dropout.
  std::uint64_t next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next_u64() % n; }

  // Standard normal by Box-Muller (one value per call, the pair's twin dropped for simplicity).
  double normal() {
    double u1 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  // An independent stream derived from this seed and a label (e.g. a layer index).
  static Rng derive(std::uint64_t seed, std::uint64_t label) {
    Rng r(seed * 0x100000001B3ull + label);
    r.next_u64();
    return r;
  }

 private:
  std::uint64_t state_;
};

}  // namespace tb
