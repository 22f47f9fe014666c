// Every GPU parity check of native/src/cuda on the emulated device, without Node:
// what the ThreadSanitizer and AddressSanitizer builds of the emulated backend run
// (npm run test:gpu-emu). One line per op: its worst error over the seeds and its
// bound; exit 1 when a check fails or throws.
//   tb_emu_parity [seeds] [op...]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/errors.h"
#include "cuda/cuda_parity.h"

int main(int argc, char** argv) {
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 8;
  std::vector<std::string> ops;
  for (int i = 2; i < argc; ++i) ops.emplace_back(argv[i]);
  if (ops.empty()) ops = tb::cuda_parity_ops();
  int failed = 0;
  for (const std::string& op : ops) {
    if (op.rfind("gemm_lt_", 0) == 0) {
      std::printf("skip %-22s cuBLASLt runs only on a GPU\n", op.c_str());
      continue;
    }
    double worst = 0, tolerance = 0;
    std::string problem;
    for (int seed = 1; seed <= seeds && problem.empty(); ++seed) {
      try {
        const tb::Json r = tb::cuda_parity(op, static_cast<std::uint64_t>(seed));
        const double e = r.find("maxRelError")->number(), t = r.find("tolerance")->number();
        tolerance = t;
        if (!(e <= t)) problem = "seed " + std::to_string(seed) + ": error " + std::to_string(e) + " over " + std::to_string(t) + " (" + r.dump() + ")";
        if (!(e <= worst)) worst = e;
      } catch (const std::exception& err) {
        problem = "seed " + std::to_string(seed) + " threw: " + err.what();
      }
    }
    if (problem.empty()) {
      std::printf("ok   %-22s worst error %.3e, bound %.3e\n", op.c_str(), worst, tolerance);
    } else {
      ++failed;
      std::printf("FAIL %-22s %s\n", op.c_str(), problem.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("%s: %d of %zu checks failed (emulated device, %d seeds)\n", failed ? "FAILED" : "passed", failed, ops.size(), seeds);
  return failed ? 1 : 0;
}
