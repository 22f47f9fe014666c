// Finite-difference gradient checks of every op, in double precision, on
// random shapes and random non-zero inputs chosen from a seed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct GradcheckResult {
  std::string op;
  std::string shapes;        // the random geometry that was checked, for failure messages
  // |analytic - numeric| / max(|analytic| + |numeric|, 1e-3): relative, and absolute for tiny gradients
  double max_rel_error = 0;
  std::int64_t checked = 0;  // gradient entries compared
};

// Ops: linear, conv2d, batchnorm, batchnorm_eval, relu, add, global_avgpool, flatten,
// dropout, softmax_ce, softmax_ce_soft, bce_logits, mse. Unknown names throw E_BAD_INPUT.
GradcheckResult gradcheck(const std::string& op, std::uint64_t seed);
std::vector<std::string> gradcheck_ops();

}  // namespace tb
