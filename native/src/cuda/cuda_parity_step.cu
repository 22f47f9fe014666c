// Parity checks of the kernels the CUDA training step adds: mixed-precision
// GEMMs, the GEMM engine's per-shape choice, device widening, fused
// epilogues, dropout, MSE, the device-side loss and accuracy sums, and the
// fp16 loss-scale update against its host definition.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

#include "core/errors.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"
#include "cuda/gemm_engine.h"
#include "cuda/kernels.h"
#include "cuda/parity_util.h"

namespace tb {
namespace {

using namespace parity;

cuda::TrainState read_state(const DeviceBuffer& d) {
  cuda::TrainState s;
  TB_CUDA_CHECK(cudaDeviceSynchronize());
  TB_CUDA_CHECK(cudaMemcpy(&s, d.get(), sizeof s, cudaMemcpyDeviceToHost));
  return s;
}

DeviceBuffer upload_state(const cuda::TrainState& s) {
  DeviceBuffer d(0, sizeof s);
  TB_CUDA_CHECK(cudaMemcpy(d.get(), &s, sizeof s, cudaMemcpyHostToDevice));
  return d;
}

std::string dims(int M, int N, int K, bool ta, bool tb) {
  return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + (ta ? " A^T" : "") + (tb ? " B^T" : "");
}

float round_bf16(float v) { return __bfloat162float(__float2bfloat16(v)); }
float round_f16(float v) { return __half2float(__float2half_rn(v)); }

}  // namespace

Json check_step_op(const std::string& op, Rng& rng) {
  const std::int64_t n = pick(rng, 1, 5000);
  if (op == "gemm_tc_bf16" || op == "gemm_tc_fp16" || op == "gemm_engine") {
    // Odd shapes and every transpose: the tiles' edges are where such kernels go wrong.
    const bool ta = rng.uniform() < 0.5, tb = rng.uniform() < 0.5, half = op == "gemm_tc_fp16";
    const int M = pick(rng, 1, 200), N = pick(rng, 1, 200), K = pick(rng, 1, 400);
    auto A = random_vec(rng, static_cast<std::int64_t>(M) * K), B = random_vec(rng, static_cast<std::int64_t>(K) * N);
    auto C = random_vec(rng, static_cast<std::int64_t>(M) * N);
    const int lda = ta ? M : K, ldb = tb ? K : N;
    const bool reduced = op != "gemm_engine";
    // The reference rounds the inputs the same way and accumulates in fp32.
    std::vector<float> Ar = A, Br = B, want = C;
    if (reduced) {
      for (auto& v : Ar) v = half ? round_f16(v) : round_bf16(v);
      for (auto& v : Br) v = half ? round_f16(v) : round_bf16(v);
    }
    gemm(ta, tb, M, N, K, 0.7f, Ar.data(), lda, Br.data(), ldb, 0.3f, want.data(), N, nullptr);
    DeviceBuffer dA = upload(A), dB = upload(B), dC = upload(C);
    if (op == "gemm_engine") {
      // fp32 through whichever path the engine picks for this shape (own kernel or cuBLASLt).
      cuda::GemmEngine engine(0, cuda::Precision::Fp32, nullptr);
      engine.run(ta, tb, M, N, K, 0.7f, dA.as<float>(), lda, dB.as<float>(), ldb, 0.3f, dC.as<float>(), N);
      Json r = result(op, dims(M, N, K, ta, tb), max_rel(want, download(dC, static_cast<std::int64_t>(M) * N)), 1e-5);
      r.set("choice", engine.log());
      return r;
    }
    cuda::gemm_tc(half, ta, tb, M, N, K, 0.7f, dA.as<float>(), lda, dB.as<float>(), ldb, 0.3f, dC.as<float>(), N, nullptr);
    return result(op, dims(M, N, K, ta, tb), norm_rel(download(dC, static_cast<std::int64_t>(M) * N), want), 1e-3);
  }
  if (op == "widen") {
    // int8 inputs with scale and offset, int64 labels.
    std::vector<std::int8_t> x(static_cast<size_t>(n));
    std::vector<std::int64_t> y(static_cast<size_t>(n));
    for (auto& v : x) v = static_cast<std::int8_t>(static_cast<int>(rng.below(256)) - 128);
    for (auto& v : y) v = static_cast<std::int64_t>(rng.below(1000));
    std::vector<float> want(static_cast<size_t>(n));
    widen_to_float(DType::I8, reinterpret_cast<const std::uint8_t*>(x.data()), n, want.data(), 0.5f, -3.f);
    DeviceBuffer dx = upload(x), dy = upload(y), dout(0, static_cast<size_t>(n) * 4), dl(0, static_cast<size_t>(n) * 4);
    cuda::widen(dout.as<float>(), dx.get(), DType::I8, n, 0.5f, -3.f, nullptr);
    cuda::widen_labels(dl.as<std::int32_t>(), dy.get(), DType::I64, n, nullptr);
    std::vector<std::int32_t> labels(static_cast<size_t>(n));
    TB_CUDA_CHECK(cudaDeviceSynchronize());
    TB_CUDA_CHECK(cudaMemcpy(labels.data(), dl.get(), labels.size() * 4, cudaMemcpyDeviceToHost));
    double err = max_rel(want, download(dout, n));
    for (size_t i = 0; i < y.size(); ++i) err = std::max(err, labels[i] == y[i] ? 0.0 : 1.0);
    return result(op, "n=" + std::to_string(n), err, 1e-6);
  }
  if (op == "bias_act" || op == "conv_out") {
    const int N = pick(rng, 1, 6), C = pick(rng, 1, 20), HW = pick(rng, 1, 50);
    const bool relu = rng.uniform() < 0.5;
    auto x = random_vec(rng, static_cast<std::int64_t>(N) * C * HW), bias = random_vec(rng, C);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float v = x[i] + bias[i / static_cast<size_t>(HW) % static_cast<size_t>(C)];
      want[i] = relu && v < 0 ? 0.f : v;
    }
    DeviceBuffer dx = upload(x), db = upload(bias), dout(0, x.size() * 4);
    if (op == "bias_act") {
      cuda::bias_act(dx.as<float>(), db.as<float>(), static_cast<std::int64_t>(x.size()), C, HW, relu, nullptr);
      return result(op, "N,C,HW=" + std::to_string(N) + "," + std::to_string(C) + "," + std::to_string(HW), max_rel(want, download(dx, static_cast<std::int64_t>(x.size()))), 1e-6);
    }
    // x in the GEMM layout (C, N*HW) -> (N, C, HW) plus bias and ReLU.
    std::vector<float> g(x.size());
    for (int b = 0; b < N; ++b)
      for (int c = 0; c < C; ++c)
        for (int p = 0; p < HW; ++p) g[(static_cast<size_t>(c) * N + b) * HW + p] = x[(static_cast<size_t>(b) * C + c) * HW + p];
    DeviceBuffer dg = upload(g);
    cuda::conv_out_from_gemm(dout.as<float>(), dg.as<float>(), db.as<float>(), 0, N, C, HW, relu, nullptr);
    double err = max_rel(want, download(dout, static_cast<std::int64_t>(x.size())));
    // And back: dout (N, C, HW) -> GEMM layout.
    DeviceBuffer dback(0, x.size() * 4), dsrc = upload(x);
    cuda::conv_grad_to_gemm(dback.as<float>(), dsrc.as<float>(), 0, N, C, HW, nullptr);
    err = std::max(err, max_rel(g, download(dback, static_cast<std::int64_t>(x.size()))));
    return result(op, "N,C,HW=" + std::to_string(N) + "," + std::to_string(C) + "," + std::to_string(HW), err, 1e-6);
  }
  if (op == "batchnorm_eval") {
    const int N = pick(rng, 1, 8), C = pick(rng, 1, 16), HW = pick(rng, 1, 40);
    auto x = random_vec(rng, static_cast<std::int64_t>(N) * C * HW), g = random_vec(rng, C), b = random_vec(rng, C), m = random_vec(rng, C);
    std::vector<float> v(static_cast<size_t>(C));
    for (auto& e : v) e = static_cast<float>(rng.uniform(0.2, 2.0));
    std::vector<float> want(x.size());
    batchnorm_forward_eval<float>(want.data(), x.data(), g.data(), b.data(), m.data(), v.data(), N, C, HW, 1e-5f, nullptr);
    DeviceBuffer dx = upload(x), dg = upload(g), dbeta = upload(b), dm = upload(m), dv = upload(v), dout(0, x.size() * 4);
    cuda::batchnorm_forward_eval(dout.as<float>(), dx.as<float>(), dg.as<float>(), dbeta.as<float>(), dm.as<float>(), dv.as<float>(), N, C,
                                 HW, 1e-5f, false, nullptr);
    return result(op, "N,C,HW=" + std::to_string(N) + "," + std::to_string(C) + "," + std::to_string(HW), max_rel(want, download(dout, static_cast<std::int64_t>(x.size()))), 1e-5);
  }
  if (op == "dropout") {
    // Not the CPU's random stream: check the rule instead (mask in {0, 1/(1-p)}, out = in * mask, keep rate ~ 1-p).
    const std::int64_t big = 100000;
    const float p = static_cast<float>(rng.uniform(0.1, 0.6));
    auto x = random_vec(rng, big);
    cuda::TrainState st;
    st.dropout_seed = rng.next_u64();
    DeviceBuffer dst = upload_state(st), dx = upload(x), dout(0, x.size() * 4), dmask(0, x.size() * 4);
    cuda::dropout_forward(dout.as<float>(), dmask.as<float>(), dx.as<float>(), big, p, 1, dst.as<cuda::TrainState>(), nullptr);
    const auto out = download(dout, big), mask = download(dmask, big);
    double err = 0, kept = 0;
    for (std::int64_t i = 0; i < big; ++i) {
      const bool keep = mask[static_cast<size_t>(i)] != 0.f;
      kept += keep;
      if (keep) err = std::max(err, std::fabs(mask[static_cast<size_t>(i)] * (1.0 - p) - 1.0));
      err = std::max(err, static_cast<double>(std::fabs(out[static_cast<size_t>(i)] - x[static_cast<size_t>(i)] * mask[static_cast<size_t>(i)])));
    }
    // 100,000 draws: the keep rate is within 1 % of 1-p unless the hash is biased.
    err = std::max(err, std::fabs(kept / big - (1.0 - p)) > 0.01 ? 1.0 : 0.0);
    return result(op, "n=100000 p=" + std::to_string(p), err, 1e-5);
  }
  if (op == "mse") {
    const int B = pick(rng, 1, 64), D = pick(rng, 1, 40);
    auto pr = random_vec(rng, static_cast<std::int64_t>(B) * D), t = random_vec(rng, static_cast<std::int64_t>(B) * D);
    std::vector<float> want(pr.size());
    const double loss = mse_forward_backward(want.data(), pr.data(), t.data(), static_cast<std::int64_t>(pr.size()), 0.5);
    DeviceBuffer dp = upload(pr), dt = upload(t), dd(0, pr.size() * 4), dl(0, static_cast<size_t>(B) * 4);
    cuda::mse(dl.as<float>(), dd.as<float>(), dp.as<float>(), dt.as<float>(), B, D, 0.5f, nullptr);
    double got = 0;
    for (float r : download(dl, B)) got += r;
    got /= B;
    const double err = std::max(max_rel(want, download(dd, static_cast<std::int64_t>(pr.size()))), std::fabs(got - loss) / std::max(loss, 1e-3));
    return result(op, "B,D=" + std::to_string(B) + "," + std::to_string(D), err, 1e-5);
  }
  if (op == "count_correct" || op == "accumulate_loss") {
    const int B = pick(rng, 1, 300), K = pick(rng, 2, 1500);
    auto z = random_vec(rng, static_cast<std::int64_t>(B) * K), t = random_vec(rng, static_cast<std::int64_t>(B) * K), rows = random_vec(rng, B);
    std::vector<std::int32_t> y(static_cast<size_t>(B));
    std::vector<float> mask(static_cast<size_t>(B));
    for (auto& v : y) v = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(K)));
    for (auto& v : mask) v = rng.uniform() < 0.7 ? 1.f : 0.f;
    // Make about half the rows right.
    for (int b = 0; b < B; b += 2) z[static_cast<size_t>(b) * K + static_cast<size_t>(y[static_cast<size_t>(b)])] = 5.f;
    std::int64_t hard = 0, soft = 0;
    double counted = 0, row_sum = 0;
    for (int b = 0; b < B; ++b) {
      const float* o = z.data() + static_cast<std::int64_t>(b) * K;
      const float* tt = t.data() + static_cast<std::int64_t>(b) * K;
      const auto am = std::max_element(o, o + K) - o;
      hard += am == y[static_cast<size_t>(b)];
      if (mask[static_cast<size_t>(b)] != 0.f) soft += am == std::max_element(tt, tt + K) - tt, counted += 1;
      row_sum += rows[static_cast<size_t>(b)];
    }
    DeviceBuffer dst = upload_state(cuda::TrainState{}), dz = upload(z), dy = upload(y), dt = upload(t), dm = upload(mask), dr = upload(rows);
    DeviceBuffer dc(0, 4);
    auto* st = dst.as<cuda::TrainState>();
    if (op == "count_correct") {
      cuda::count_correct(st, dz.as<float>(), dy.as<std::int32_t>(), nullptr, nullptr, B, K, nullptr);
      const auto first = read_state(dst).correct;
      cuda::count_correct(st, dz.as<float>(), nullptr, dt.as<float>(), dm.as<float>(), B, K, nullptr);
      const auto both = read_state(dst).correct;
      const double err = first == static_cast<unsigned long long>(hard) && both - first == static_cast<unsigned long long>(soft) ? 0.0 : 1.0;
      return result(op, "B,K=" + std::to_string(B) + "," + std::to_string(K), err, 0.5);
    }
    cuda::mask_count(dc.as<float>(), dm.as<float>(), B, nullptr);
    cuda::accumulate_loss(st, 1, dr.as<float>(), B, dc.as<float>(), 0.25f, true, nullptr);
    const cuda::TrainState s = read_state(dst);
    const double mean = counted > 0 ? row_sum / counted : 0.0;
    const double err = std::max({std::fabs(s.head_sums[1] - mean * B) / std::max(std::fabs(mean * B), 1e-3),
                                 std::fabs(s.loss_sum - 0.25 * mean) / std::max(std::fabs(0.25 * mean), 1e-3), s.micro_batches == 1 ? 0.0 : 1.0});
    return result(op, "B=" + std::to_string(B), err, 1e-5);
  }
  if (op == "loss_scale") {
    // The device's update after a clean step and after an inf: the host rule's answer, and the update is skipped.
    auto g = random_vec(rng, n);
    cuda::TrainState st;
    st.scale = LossScale{};
    st.lr = 0.1f;
    DeviceBuffer dst = upload_state(st), dg = upload(g), dp = upload(g), dm(0, g.size() * 4);
    TB_CUDA_CHECK(cudaMemset(dm.get(), 0, g.size() * 4));
    auto* s = dst.as<cuda::TrainState>();
    LossScale host;
    LossScalePolicy policy;
    double norm = 0;
    for (float v : g) norm += static_cast<double>(v) * v;
    norm = std::sqrt(norm) / host.scale;
    cuda::gradient_stats(s, dg.as<float>(), n, nullptr);
    cuda::finish_gradients(s, 0.f, true, 0.9f, 0.999f, nullptr);
    update_loss_scale(host, false, policy);
    cuda::TrainState a = read_state(dst);
    double err = std::fabs(a.grad_norm - norm) / norm + (a.apply == 1 ? 0 : 1) + std::fabs(a.scale.scale - host.scale);
    cuda::poison_gradient(dg.as<float>(), nullptr);
    cuda::gradient_stats(s, dg.as<float>(), n, nullptr);
    cuda::finish_gradients(s, 0.f, true, 0.9f, 0.999f, nullptr);
    cuda::sgd_update(dp.as<float>(), dg.as<float>(), dm.as<float>(), n, 0.9f, 0.f, s, nullptr);
    update_loss_scale(host, true, policy);
    const cuda::TrainState b = read_state(dst);
    err += (b.apply == 0 ? 0 : 1) + (b.skipped == 1 ? 0 : 1) + std::fabs(b.scale.scale - host.scale);
    err += max_rel(g, download(dp, n));  // the skipped update left the parameters alone
    return result(op, "n=" + std::to_string(n), err, 1e-5);
  }
  TB_THROW(ErrorCode::BadInput, "cudaParity: unknown op '" + op + "'");
}

}  // namespace tb
