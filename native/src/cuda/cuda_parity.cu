#include "cuda/cuda_parity.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/device_info.h"
#include "core/errors.h"
#include "core/rng.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"
#include "cuda/allocator.h"
#include "cuda/cuda_check.h"
#include "cuda/device_prefetcher.h"
#include "data/record_source.h"
#include "cuda/kernels.h"
#include "cuda/parity_util.h"

namespace tb {
namespace {

using namespace parity;


Json check(const std::string& op, Rng& rng) {
  const std::int64_t n = pick(rng, 1, 5000);
  if (op == "relu" || op == "relu_backward" || op == "add") {
    auto x = random_vec(rng, n), y = random_vec(rng, n);
    std::vector<float> want(static_cast<size_t>(n));
    DeviceBuffer dx = upload(x), dy = upload(y), dout(0, n * 4);
    if (op == "relu") {
      relu_forward(want.data(), x.data(), n);
      cuda::relu_forward(dout.as<float>(), dx.as<float>(), n, nullptr);
    } else if (op == "relu_backward") {
      relu_backward(want.data(), x.data(), y.data(), n);
      cuda::relu_backward(dout.as<float>(), dx.as<float>(), dy.as<float>(), n, nullptr);
    } else {
      add_forward(want.data(), x.data(), y.data(), n);
      cuda::add_forward(dout.as<float>(), dx.as<float>(), dy.as<float>(), n, nullptr);
    }
    return result(op, "n=" + std::to_string(n), max_rel(want, download(dout, n)), 1e-6);
  }
  if (op == "widen_u8") {
    std::vector<std::uint8_t> x(static_cast<size_t>(n));
    for (auto& v : x) v = static_cast<std::uint8_t>(1 + rng.below(255));
    std::vector<float> want(static_cast<size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) want[i] = x[i] * 0.0123f - 0.4f;
    DeviceBuffer dx = upload(x), dout(0, n * 4);
    cuda::widen_u8(dout.as<float>(), dx.as<std::uint8_t>(), n, 0.0123f, -0.4f, nullptr);
    return result(op, "n=" + std::to_string(n), max_rel(want, download(dout, n)), 1e-6);
  }
  if (op == "gemm_f32") {
    const bool ta = rng.uniform() < 0.5, tb = rng.uniform() < 0.5;
    const int M = pick(rng, 1, 150), N = pick(rng, 1, 150), K = pick(rng, 1, 300);
    auto A = random_vec(rng, static_cast<std::int64_t>(M) * K), B = random_vec(rng, static_cast<std::int64_t>(K) * N);
    auto C = random_vec(rng, static_cast<std::int64_t>(M) * N);
    const int lda = ta ? M : K, ldb = tb ? K : N;
    std::vector<float> want = C;
    gemm(ta, tb, M, N, K, 0.7f, A.data(), lda, B.data(), ldb, 0.3f, want.data(), N, nullptr);
    DeviceBuffer dA = upload(A), dB = upload(B), dC = upload(C);
    cuda::gemm_f32(ta, tb, M, N, K, 0.7f, dA.as<float>(), lda, dB.as<float>(), ldb, 0.3f, dC.as<float>(), N, nullptr);
    return result(op, std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + (ta ? " A^T" : "") + (tb ? " B^T" : ""),
                  max_rel(want, download(dC, static_cast<std::int64_t>(M) * N)), 1e-5);
  }
  if (op == "gemm_bf16_tc") {
    const int M = 16 * pick(rng, 1, 8), N = 16 * pick(rng, 1, 8), K = 16 * pick(rng, 1, 16);
    auto A = random_vec(rng, static_cast<std::int64_t>(M) * K), B = random_vec(rng, static_cast<std::int64_t>(K) * N);
    // The reference uses the same bf16-rounded inputs, accumulated in fp32.
    std::vector<__nv_bfloat16> Ah(A.size()), Bh(B.size());
    for (size_t i = 0; i < A.size(); ++i) A[i] = __bfloat162float(Ah[i] = __float2bfloat16(A[i]));
    for (size_t i = 0; i < B.size(); ++i) B[i] = __bfloat162float(Bh[i] = __float2bfloat16(B[i]));
    std::vector<float> want(static_cast<size_t>(M) * N);
    gemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, want.data(), N, nullptr);
    DeviceBuffer dA = upload(Ah), dB = upload(Bh), dC(0, static_cast<size_t>(M) * N * 4);
    cuda::gemm_bf16_tc(M, N, K, dA.as<__nv_bfloat16>(), dB.as<__nv_bfloat16>(), dC.as<float>(), nullptr);
    return result(op, std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K), max_rel(want, download(dC, static_cast<std::int64_t>(M) * N)), 1e-2);
  }
  if (op == "softmax_ce") {
    const int B = pick(rng, 1, 64), K = pick(rng, 2, 1500);
    auto z = random_vec(rng, static_cast<std::int64_t>(B) * K);
    std::vector<std::int32_t> y(static_cast<size_t>(B));
    for (auto& v : y) v = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(K)));
    std::vector<float> want(z.size());
    const double loss = softmax_ce_forward_backward(want.data(), z.data(), y.data(), B, K, 1.0, nullptr);
    DeviceBuffer dz = upload(z), dy = upload(y), dd(0, z.size() * 4), dl(0, static_cast<size_t>(B) * 4);
    cuda::softmax_ce(dl.as<float>(), dd.as<float>(), dz.as<float>(), dy.as<std::int32_t>(), B, K, 1.0f, nullptr);
    const auto rows = download(dl, B);
    double got = 0;
    for (float r : rows) got += r;
    const double err = std::max(max_rel(want, download(dd, static_cast<std::int64_t>(z.size()))), std::fabs(got / B - loss) / std::max(std::fabs(loss), 1e-3));
    return result(op, "B,K=" + std::to_string(B) + "x" + std::to_string(K), err, 1e-5);
  }
  if (op == "batchnorm_train") {
    const int N = pick(rng, 2, 32), C = pick(rng, 1, 64), HW = pick(rng, 1, 81);
    const std::int64_t total = static_cast<std::int64_t>(N) * C * HW;
    auto x = random_vec(rng, total), g = random_vec(rng, C), b = random_vec(rng, C);
    std::vector<float> want(static_cast<size_t>(total)), mean(C), inv(C), rm(C, 0.f), rv(C, 1.f);
    batchnorm_forward_train(want.data(), mean.data(), inv.data(), x.data(), g.data(), b.data(), rm.data(), rv.data(), N, C, HW, 0.1f, 1e-5f, nullptr);
    std::vector<float> rm0(C, 0.f), rv0(C, 1.f);
    DeviceBuffer dx = upload(x), dg = upload(g), db = upload(b), drm = upload(rm0), drv = upload(rv0), dout(0, total * 4), dm(0, C * 4), di(0, C * 4);
    cuda::batchnorm_forward_train(dout.as<float>(), dm.as<float>(), di.as<float>(), dx.as<float>(), dg.as<float>(), db.as<float>(), drm.as<float>(),
                                  drv.as<float>(), N, C, HW, 0.1f, 1e-5f, nullptr);
    const double err = std::max({max_rel(want, download(dout, total)), max_rel(rm, download(drm, C)), max_rel(rv, download(drv, C))});
    return result(op, "N,C,HW=" + std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(HW), err, 1e-5);
  }
  if (op == "batchnorm_backward") {
    const int N = pick(rng, 2, 32), C = pick(rng, 1, 48), HW = pick(rng, 1, 81);
    const std::int64_t total = static_cast<std::int64_t>(N) * C * HW;
    auto x = random_vec(rng, total), g = random_vec(rng, C), b = random_vec(rng, C), dy = random_vec(rng, total);
    std::vector<float> y(static_cast<size_t>(total)), mean(C), inv(C), dx(static_cast<size_t>(total)), dg(C, 0.f), db(C, 0.f);
    batchnorm_forward_train<float>(y.data(), mean.data(), inv.data(), x.data(), g.data(), b.data(), nullptr, nullptr, N, C, HW, 0.1f, 1e-5f, nullptr);
    batchnorm_backward(dx.data(), dg.data(), db.data(), dy.data(), x.data(), g.data(), mean.data(), inv.data(), N, C, HW, nullptr);
    std::vector<float> zeros(C, 0.f);
    DeviceBuffer ddx(0, total * 4), ddg = upload(zeros), ddb = upload(zeros), ddy = upload(dy), dx_in = upload(x), dgam = upload(g), dm = upload(mean), di = upload(inv);
    cuda::batchnorm_backward(ddx.as<float>(), ddg.as<float>(), ddb.as<float>(), ddy.as<float>(), dx_in.as<float>(), dgam.as<float>(), dm.as<float>(), di.as<float>(), N, C, HW, nullptr);
    const double err = std::max({max_rel(dx, download(ddx, total)), max_rel(dg, download(ddg, C)), max_rel(db, download(ddb, C))});
    return result(op, "N,C,HW=" + std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(HW), err, 1e-4);
  }
  if (op == "global_avgpool") {
    const int N = pick(rng, 1, 64), C = pick(rng, 1, 600), HW = pick(rng, 1, 81);
    const std::int64_t total = static_cast<std::int64_t>(N) * C * HW, rows = static_cast<std::int64_t>(N) * C;
    auto x = random_vec(rng, total), dy = random_vec(rng, rows);
    std::vector<float> y(static_cast<size_t>(rows)), dx(static_cast<size_t>(total));
    global_avgpool_forward(y.data(), x.data(), N, C, HW);
    global_avgpool_backward(dx.data(), dy.data(), N, C, HW);
    DeviceBuffer dxin = upload(x), ddy = upload(dy), dyo(0, rows * 4), ddx(0, total * 4);
    cuda::global_avgpool_forward(dyo.as<float>(), dxin.as<float>(), N, C, HW, nullptr);
    cuda::global_avgpool_backward(ddx.as<float>(), ddy.as<float>(), N, C, HW, nullptr);
    return result(op, "N,C,HW=" + std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(HW),
                  std::max(max_rel(y, download(dyo, rows)), max_rel(dx, download(ddx, total))), 1e-5);
  }
  if (op == "bias_grad") {
    const int rows = pick(rng, 1, 300), cols = pick(rng, 1, 1500);
    auto dy = random_vec(rng, static_cast<std::int64_t>(rows) * cols);
    std::vector<float> want(static_cast<size_t>(cols), 0.f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) want[c] += dy[static_cast<size_t>(r) * cols + c];
    std::vector<float> zeros(static_cast<size_t>(cols), 0.f);
    DeviceBuffer ddy = upload(dy), ddb = upload(zeros);
    cuda::bias_grad(ddb.as<float>(), ddy.as<float>(), rows, cols, nullptr);
    return result(op, std::to_string(rows) + "x" + std::to_string(cols), max_rel(want, download(ddb, cols)), 1e-5);
  }
  if (op == "softmax_ce_soft" || op == "bce_logits") {
    const int B = pick(rng, 1, 64), K = op == "bce_logits" ? 1 : pick(rng, 2, 1500);
    auto z = random_vec(rng, static_cast<std::int64_t>(B) * K);
    std::vector<float> t(z.size()), mask(static_cast<size_t>(B));
    for (auto& v : t) v = static_cast<float>(rng.uniform(0.0, 1.0));
    double counted = 0;
    for (auto& m : mask) counted += (m = rng.uniform() < 0.8 ? 1.f : 0.f);
    std::vector<float> want(z.size());
    double loss;
    if (op == "bce_logits") loss = bce_logits_forward_backward(want.data(), z.data(), t.data(), B, 1.0);
    else loss = softmax_ce_soft_forward_backward(want.data(), z.data(), t.data(), mask.data(), B, K, 1.0);
    DeviceBuffer dz = upload(z), dt = upload(t), dm = upload(mask), dd(0, z.size() * 4), dl(0, static_cast<size_t>(B) * 4);
    DeviceBuffer dcount(0, 4);
    cuda::mask_count(dcount.as<float>(), dm.as<float>(), B, nullptr);
    if (op == "bce_logits") cuda::bce_logits(dl.as<float>(), dd.as<float>(), dz.as<float>(), dt.as<float>(), B, 1.0f, nullptr);
    else cuda::softmax_ce_soft(dl.as<float>(), dd.as<float>(), dz.as<float>(), dt.as<float>(), dm.as<float>(), B, K, 1.0f, dcount.as<float>(), nullptr);
    const auto rows = download(dl, B);
    double got = 0;
    for (float r : rows) got += r;
    got /= op == "bce_logits" ? B : (counted > 0 ? counted : 1);
    const double err = std::max(max_rel(want, download(dd, static_cast<std::int64_t>(z.size()))), std::fabs(got - loss) / std::max(std::fabs(loss), 1e-3));
    return result(op, "B,K=" + std::to_string(B) + "x" + std::to_string(K), err, 1e-5);
  }
  if (op == "conv2d") {
    // Forward and backward as the GPU path will run them: im2col + GEMM, GEMMs + col2im.
    ConvGeom g{pick(rng, 1, 8), pick(rng, 1, 16), pick(rng, 3, 12), 0, pick(rng, 1, 24), 0, 0, pick(rng, 1, 2), 0};
    g.W = g.H;
    g.KH = g.KW = rng.uniform() < 0.5 ? 1 : 3;
    g.pad = g.KH / 2;
    const int OHW = g.OH() * g.OW(), K = g.C * g.KH * g.KW, cols = g.N * OHW;
    auto x = random_vec(rng, static_cast<std::int64_t>(g.N) * g.C * g.H * g.W), w = random_vec(rng, static_cast<std::int64_t>(g.O) * K);
    auto dy = random_vec(rng, static_cast<std::int64_t>(g.N) * g.O * OHW);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size(), 0.f);
    ConvWorkspace<float> ws;
    conv2d_forward<float>(y.data(), x.data(), w.data(), nullptr, g, ws, nullptr);
    conv2d_backward<float>(dx.data(), dw.data(), nullptr, dy.data(), x.data(), w.data(), g, ws, nullptr);
    // (N, O, OHW) <-> (O, N*OHW), the GEMM layout, permuted on the host for the check.
    auto to_gemm = [&](const std::vector<float>& v) {
      std::vector<float> t(v.size());
      for (int n = 0; n < g.N; ++n)
        for (int o = 0; o < g.O; ++o)
          for (int p = 0; p < OHW; ++p) t[(static_cast<size_t>(o) * g.N + n) * OHW + p] = v[(static_cast<size_t>(n) * g.O + o) * OHW + p];
      return t;
    };
    std::vector<float> zeros(w.size(), 0.f);
    DeviceBuffer dX = upload(x), dW = upload(w), dCol(0, static_cast<size_t>(K) * cols * 4), dOut(0, static_cast<size_t>(g.O) * cols * 4);
    DeviceBuffer dDy = upload(to_gemm(dy)), dDw = upload(zeros), dDx(0, x.size() * 4);
    cuda::im2col(dCol.as<float>(), dX.as<float>(), 0, g.N, g.C, g.H, g.W, g.KH, g.KW, g.stride, g.pad, nullptr);
    cuda::gemm_f32(false, false, g.O, cols, K, 1.f, dW.as<float>(), K, dCol.as<float>(), cols, 0.f, dOut.as<float>(), cols, nullptr);
    const double e_fwd = max_rel(to_gemm(y), download(dOut, static_cast<std::int64_t>(g.O) * cols));
    cuda::gemm_f32(false, true, g.O, K, cols, 1.f, dDy.as<float>(), cols, dCol.as<float>(), cols, 1.f, dDw.as<float>(), K, nullptr);
    cuda::gemm_f32(true, false, K, cols, g.O, 1.f, dW.as<float>(), K, dDy.as<float>(), cols, 0.f, dCol.as<float>(), cols, nullptr);
    cuda::col2im(dDx.as<float>(), dCol.as<float>(), 0, g.N, g.C, g.H, g.W, g.KH, g.KW, g.stride, g.pad, nullptr);
    const double err = std::max({e_fwd, max_rel(dw, download(dDw, static_cast<std::int64_t>(w.size()))), max_rel(dx, download(dDx, static_cast<std::int64_t>(x.size())))});
    return result(op, "N,C,H=" + std::to_string(g.N) + "x" + std::to_string(g.C) + "x" + std::to_string(g.H) + " O=" + std::to_string(g.O) + " k=" +
                          std::to_string(g.KH) + " s=" + std::to_string(g.stride), err, 1e-4);
  }
  if (op == "sgd" || op == "adamw") {
    auto p = random_vec(rng, n), g = random_vec(rng, n);
    std::vector<float> want = p, m(static_cast<size_t>(n), 0.f), v(static_cast<size_t>(n), 0.f), buf(static_cast<size_t>(n), 0.f);
    // The CPU reference: the same update rule written out (optim/optimizer.cpp).
    for (std::int64_t i = 0; i < n; ++i) {
      if (op == "sgd") {
        buf[i] = 0.9f * buf[i] + (g[i] + 1e-4f * want[i]);
        want[i] -= 0.05f * buf[i];
      } else {
        m[i] = 0.1f * g[i];
        v[i] = 0.001f * g[i] * g[i];
        want[i] = want[i] * (1.f - 1e-3f * 1e-2f) - (1e-3f / 0.1f) * m[i] / (std::sqrt(v[i]) / std::sqrt(0.001f) + 1e-8f);
      }
    }
    std::vector<float> zeros(static_cast<size_t>(n), 0.f);
    DeviceBuffer dp = upload(p), dg = upload(g), dm = upload(zeros), dv = upload(zeros);
    cuda::TrainState st;
    st.lr = op == "sgd" ? 0.05f : 1e-3f;
    st.bias_correction1 = 0.1f;
    st.bias_correction2 = 0.001f;
    DeviceBuffer dst(0, sizeof st);
    TB_CUDA_CHECK(cudaMemcpy(dst.get(), &st, sizeof st, cudaMemcpyHostToDevice));
    const auto* state = dst.as<cuda::TrainState>();
    if (op == "sgd") cuda::sgd_update(dp.as<float>(), dg.as<float>(), dm.as<float>(), n, 0.9f, 1e-4f, state, nullptr);
    else cuda::adamw_update(dp.as<float>(), dg.as<float>(), dm.as<float>(), dv.as<float>(), n, 0.9f, 0.999f, 1e-8f, 1e-2f, state, nullptr);
    return result(op, "n=" + std::to_string(n), max_rel(want, download(dp, n)), 1e-5);
  }
  if (op == "count_nonfinite") {
    auto x = random_vec(rng, n);
    const int bad = static_cast<int>(std::min<std::int64_t>(n, 3));
    for (int i = 0; i < bad; ++i) x[static_cast<size_t>(rng.below(static_cast<std::uint64_t>(n)))] = i % 2 ? NAN : INFINITY;
    unsigned int want = 0;
    for (float f : x) want += std::isfinite(f) ? 0u : 1u;
    DeviceBuffer dx = upload(x), dc(0, 4);
    TB_CUDA_CHECK(cudaMemset(dc.get(), 0, 4));
    cuda::count_nonfinite(dc.as<unsigned int>(), dx.as<float>(), n, nullptr);
    unsigned int got = 0;
    TB_CUDA_CHECK(cudaMemcpy(&got, dc.get(), 4, cudaMemcpyDeviceToHost));
    return result(op, "n=" + std::to_string(n), got == want ? 0.0 : 1.0, 0.5);
  }
  if (op == "prefetch") {
    // Every record reaches the device through the copy-stream ring, byte for byte, in loader order.
    const std::int64_t records = pick(rng, 50, 3000);
    const int width = pick(rng, 1, 300);
    auto source = std::make_shared<MemorySource>();
    std::vector<std::uint8_t> bytes(static_cast<size_t>(records * width));
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng.below(256));
    FieldInfo f;
    f.name = "x";
    f.dtype = DType::U8;
    f.shape = {width};
    source->add_field(f, bytes, records);
    LoaderOptions lo;
    lo.batch_size = pick(rng, 1, 64);
    lo.workers = 2;
    lo.seed = 5;
    lo.drop_last = false;
    lo.pinned = true;
    Loader loader(source, lo);
    cudaStream_t compute;
    TB_CUDA_CHECK(cudaStreamCreate(&compute));
    double mismatches = 0;
    {
      DevicePrefetcher prefetch(loader, 0, 3, compute);
      loader.start_epoch(0);
      prefetch.start_epoch();
      const std::vector<std::int64_t> order = Loader::epoch_order(records, 5, 0, true, 1.0);
      std::int64_t at = 0;
      std::vector<std::uint8_t> host;
      while (const DeviceBatch* b = prefetch.next()) {
        host.resize(static_cast<size_t>(b->size * width));
        TB_CUDA_CHECK(cudaMemcpyAsync(host.data(), b->fields[0], host.size(), cudaMemcpyDeviceToHost, compute));
        TB_CUDA_CHECK(cudaStreamSynchronize(compute));
        prefetch.release(b);
        for (int r = 0; r < b->size; ++r, ++at)
          mismatches += std::memcmp(host.data() + r * width, bytes.data() + order[static_cast<size_t>(at)] * width, static_cast<size_t>(width)) != 0;
      }
      if (at != records) mismatches += 1;
    }
    TB_CUDA_CHECK(cudaStreamDestroy(compute));
    Json r = result(op, std::to_string(records) + " records of " + std::to_string(width) + " B, batch " + std::to_string(lo.batch_size), mismatches, 0.5);
    r.set("pinned", loader.pinned());
    return r;
  }
  if (op == "oom") {
    // An impossible allocation is E_OOM with the numbers, and the next one works.
    Json r = result(op, "1 PiB then 1 MiB", 1.0, 0.5);
    try {
      DeviceBuffer huge(0, std::size_t(1) << 50);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::OOM) throw;
      r.set("message", e.what());
      DeviceBuffer small(0, 1 << 20);
      TB_CUDA_CHECK(cudaMemset(small.get(), 0, 1 << 20));
      TB_CUDA_CHECK(cudaDeviceSynchronize());
      r.set("maxRelError", 0.0);
    }
    return r;
  }
  return check_step_op(op, rng);
}

}  // namespace

std::vector<std::string> cuda_parity_ops() {
  return {"relu", "relu_backward", "add", "widen_u8", "gemm_f32", "gemm_bf16_tc", "softmax_ce", "softmax_ce_soft", "bce_logits",
          "batchnorm_train", "batchnorm_backward", "global_avgpool", "bias_grad", "conv2d", "sgd", "adamw", "count_nonfinite",
          "prefetch", "oom", "gemm_tc_bf16", "gemm_tc_fp16", "gemm_engine", "widen", "bias_act", "conv_out", "batchnorm_eval",
          "dropout", "mse", "count_correct", "accumulate_loss", "loss_scale"};
}

Json cuda_parity(const std::string& op, std::uint64_t seed) {
  const CudaStatus status = cuda_status();
  if (!status.available) TB_THROW(ErrorCode::Cuda, "no CUDA device: " + status.reason);
  TB_CUDA_CHECK(cudaSetDevice(0));
  std::uint64_t label = 1469598103934665603ull;
  for (unsigned char c : op) label = (label ^ c) * 1099511628211ull;
  Rng rng = Rng::derive(seed, label);
  return check(op, rng);
}

Json cuda_memory_stats() {
  const AllocatorStats s = CudaAllocator::for_device(0).stats();
  Json j = Json::object();
  j.set("allocated", static_cast<double>(s.allocated));
  j.set("reserved", static_cast<double>(s.reserved));
  j.set("peakAllocated", static_cast<double>(s.peak_allocated));
  j.set("allocations", static_cast<double>(s.allocations));
  j.set("ooms", static_cast<double>(s.ooms));
  return j;
}

}  // namespace tb
