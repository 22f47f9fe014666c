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
#include "cuda/copy_bench.h"
#include "cuda/cuda_check.h"
#include "cuda/device_prefetcher.h"
#include "cuda/kernels.h"
#include "cuda/parity_util.h"
#include "data/record_source.h"

namespace tb {
namespace {

using namespace parity;

std::string size_n(std::int64_t n) { return "n=" + std::to_string(n); }

Json check_elementwise(const std::string& op, Rng& rng) {
  const std::int64_t n = pick(rng, 1, 5000);
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
    // add_relu: the residual add with its ReLU fused in, against the CPU's add then ReLU.
    add_forward(want.data(), x.data(), y.data(), n);
    if (op == "add_relu") relu_forward(want.data(), want.data(), n);
    cuda::add_forward(dout.as<float>(), dx.as<float>(), dy.as<float>(), n, nullptr, op == "add_relu");
  }
  return result(op, size_n(n), max_rel(want, download(dout, n)), 1e-6);
}

Json check_widen_u8(const std::string& op, Rng& rng) {
  const WidenCase c = widen_u8_case(rng);
  const std::int64_t n = static_cast<std::int64_t>(c.x.size());
  DeviceBuffer dx = upload(c.x), dout(0, n * 4);
  cuda::widen_u8(dout.as<float>(), dx.as<std::uint8_t>(), n, c.scale, c.offset, nullptr);
  return result(op, size_n(n), widen_u8_score(c, download(dout, n)));
}

Json check_gemm_f32(const std::string& op, Rng& rng) {
  const GemmCase c = gemm_case(rng, 150, 150, 300);
  DeviceBuffer dA = upload(c.A), dB = upload(c.B), dC = upload(c.C);
  cuda::gemm_f32(c.ta, c.tb, c.M, c.N, c.K, c.alpha, dA.as<float>(), c.lda, dB.as<float>(), c.ldb, c.beta, dC.as<float>(), c.N, nullptr);
  return result(op, c.shapes(), gemm_f32_score(c, download(dC, static_cast<std::int64_t>(c.M) * c.N)));
}

Json check_gemm_bf16_tc(const std::string& op, Rng& rng) {
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

Json check_softmax_ce(const std::string& op, Rng& rng) {
  const int B = pick(rng, 1, 64), K = pick(rng, 2, 1500);
  auto z = random_vec(rng, static_cast<std::int64_t>(B) * K);
  std::vector<std::int32_t> y(static_cast<size_t>(B));
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(K)));
  std::vector<float> want(z.size());
  const double loss = softmax_ce_forward_backward(want.data(), z.data(), y.data(), B, K, 1.0, nullptr);
  DeviceBuffer dz = upload(z), dy = upload(y), dd(0, z.size() * 4), dl(0, static_cast<size_t>(B) * 4);
  cuda::softmax_ce(dl.as<float>(), dd.as<float>(), dz.as<float>(), dy.as<std::int32_t>(), B, K, 1.0f, nullptr);
  double got = 0;
  for (float r : download(dl, B)) got += r;
  const double err = worse(max_rel(want, download(dd, static_cast<std::int64_t>(z.size()))), std::fabs(got / B - loss) / std::max(std::fabs(loss), 1e-3));
  return result(op, "B,K=" + std::to_string(B) + "x" + std::to_string(K), err, 1e-5);
}

Json check_batchnorm_train(const std::string& op, Rng& rng) {
  const BatchNormTrainCase c = batchnorm_train_case(rng);
  const std::int64_t total = static_cast<std::int64_t>(c.x.size());
  DeviceBuffer dx = upload(c.x), dg = upload(c.gamma), db = upload(c.beta), drm = upload(c.running_mean), drv = upload(c.running_var),
               dout(0, total * 4), dm(0, c.C * 4), di(0, c.C * 4);
  cuda::batchnorm_forward_train(dout.as<float>(), dm.as<float>(), di.as<float>(), dx.as<float>(), dg.as<float>(), db.as<float>(), drm.as<float>(),
                                drv.as<float>(), c.N, c.C, c.HW, c.momentum, c.eps, nullptr);
  const BatchNormTrainOut got{download(dout, total), download(dm, c.C), download(di, c.C), download(drm, c.C), download(drv, c.C)};
  return result(op, c.shapes(), batchnorm_train_score(c, got));
}

Json check_batchnorm_backward(const std::string& op, Rng& rng) {
  const int N = pick(rng, 2, 32), C = pick(rng, 1, 48), HW = pick(rng, 1, 81);
  const std::int64_t total = static_cast<std::int64_t>(N) * C * HW;
  auto x = random_vec(rng, total), g = random_vec(rng, C), b = random_vec(rng, C), dy = random_vec(rng, total);
  std::vector<float> y(static_cast<size_t>(total)), mean(C), inv(C), dx(static_cast<size_t>(total)), dg(C, 0.f), db(C, 0.f);
  batchnorm_forward_train<float>(y.data(), mean.data(), inv.data(), x.data(), g.data(), b.data(), nullptr, nullptr, N, C, HW, 0.1f, 1e-5f, nullptr);
  batchnorm_backward(dx.data(), dg.data(), db.data(), dy.data(), x.data(), g.data(), mean.data(), inv.data(), N, C, HW, nullptr);
  std::vector<float> zeros(C, 0.f);
  DeviceBuffer ddx(0, total * 4), ddg = upload(zeros), ddb = upload(zeros), ddy = upload(dy), dx_in = upload(x), dgam = upload(g), dm = upload(mean), di = upload(inv);
  cuda::batchnorm_backward(ddx.as<float>(), ddg.as<float>(), ddb.as<float>(), ddy.as<float>(), dx_in.as<float>(), dgam.as<float>(), dm.as<float>(), di.as<float>(), N, C, HW, nullptr);
  double err = worst({max_rel(dx, download(ddx, total)), max_rel(dg, download(ddg, C)), max_rel(db, download(ddb, C))});
  // Without an input gradient (batch norm straight after the input) gamma and beta still get theirs.
  DeviceBuffer ddg2 = upload(zeros), ddb2 = upload(zeros);
  cuda::batchnorm_backward(nullptr, ddg2.as<float>(), ddb2.as<float>(), ddy.as<float>(), dx_in.as<float>(), dgam.as<float>(), dm.as<float>(), di.as<float>(), N, C, HW, nullptr);
  err = worst({err, max_rel(dg, download(ddg2, C)), max_rel(db, download(ddb2, C))});
  return result(op, "N,C,HW=" + std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(HW), err, 1e-4);
}

Json check_global_avgpool(const std::string& op, Rng& rng) {
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
                worse(max_rel(y, download(dyo, rows)), max_rel(dx, download(ddx, total))), 1e-5);
}

Json check_bias_grad(const std::string& op, Rng& rng) {
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

Json check_soft_losses(const std::string& op, Rng& rng) {
  const SoftLossCase c = soft_loss_case(rng, op == "bce_logits");
  DeviceBuffer dz = upload(c.z), dt = upload(c.t), dm = upload(c.mask), dd(0, c.z.size() * 4), dl(0, static_cast<size_t>(c.B) * 4);
  DeviceBuffer dcount(0, 4);
  cuda::mask_count(dcount.as<float>(), dm.as<float>(), c.B, nullptr);
  if (c.bce) cuda::bce_logits(dl.as<float>(), dd.as<float>(), dz.as<float>(), dt.as<float>(), c.B, 1.0f, nullptr);
  else cuda::softmax_ce_soft(dl.as<float>(), dd.as<float>(), dz.as<float>(), dt.as<float>(), dm.as<float>(), c.B, c.K, 1.0f, dcount.as<float>(), nullptr);
  double got = 0, weights = 0;
  for (float r : download(dl, c.B)) got += r;
  for (float m : c.mask) weights += m;
  got /= c.bce ? c.B : (weights > 0 ? weights : 1);
  return result(op, c.shapes(), soft_loss_score(c, download(dd, static_cast<std::int64_t>(c.z.size())), got));
}

// As the GPU path runs it: im2col + GEMM forward, GEMMs + col2im backward, against double references.
Json check_conv2d(const std::string& op, Rng& rng) {
  const ConvCase c = conv_case(rng);
  const ConvGeom& g = c.g;
  const int OHW = g.OH() * g.OW(), K = g.C * g.KH * g.KW, cols = g.N * OHW;
  // (N, O, OHW) <-> (O, N*OHW), the GEMM layout, permuted on the host.
  auto to_gemm = [&](const std::vector<float>& v) {
    std::vector<float> t(v.size());
    for (int n = 0; n < g.N; ++n)
      for (int o = 0; o < g.O; ++o)
        for (int p = 0; p < OHW; ++p) t[(static_cast<size_t>(o) * g.N + n) * OHW + p] = v[(static_cast<size_t>(n) * g.O + o) * OHW + p];
    return t;
  };
  auto from_gemm = [&](const std::vector<float>& t) {
    std::vector<float> v(t.size());
    for (int n = 0; n < g.N; ++n)
      for (int o = 0; o < g.O; ++o)
        for (int p = 0; p < OHW; ++p) v[(static_cast<size_t>(n) * g.O + o) * OHW + p] = t[(static_cast<size_t>(o) * g.N + n) * OHW + p];
    return v;
  };
  std::vector<float> zeros(c.w.size(), 0.f);
  DeviceBuffer dX = upload(c.x), dW = upload(c.w), dCol(0, static_cast<size_t>(K) * cols * 4), dOut(0, static_cast<size_t>(g.O) * cols * 4);
  DeviceBuffer dDy = upload(to_gemm(c.dy)), dDw = upload(zeros), dDx(0, c.x.size() * 4);
  cuda::im2col(dCol.as<float>(), dX.as<float>(), 0, g.N, g.C, g.H, g.W, g.KH, g.KW, g.stride, g.pad, nullptr);
  cuda::gemm_f32(false, false, g.O, cols, K, 1.f, dW.as<float>(), K, dCol.as<float>(), cols, 0.f, dOut.as<float>(), cols, nullptr);
  const std::vector<float> y = from_gemm(download(dOut, static_cast<std::int64_t>(g.O) * cols));
  cuda::gemm_f32(false, true, g.O, K, cols, 1.f, dDy.as<float>(), cols, dCol.as<float>(), cols, 1.f, dDw.as<float>(), K, nullptr);
  cuda::gemm_f32(true, false, K, cols, g.O, 1.f, dW.as<float>(), K, dDy.as<float>(), cols, 0.f, dCol.as<float>(), cols, nullptr);
  cuda::col2im(dDx.as<float>(), dCol.as<float>(), 0, g.N, g.C, g.H, g.W, g.KH, g.KW, g.stride, g.pad, nullptr);
  return result(op, c.shapes(), conv_score(c, y, download(dDw, static_cast<std::int64_t>(c.w.size())), download(dDx, static_cast<std::int64_t>(c.x.size()))));
}

Json check_optimizer(const std::string& op, Rng& rng) {
  const std::int64_t n = pick(rng, 1, 5000);
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
  return result(op, size_n(n), max_rel(want, download(dp, n)), 1e-5);
}

Json check_count_nonfinite(const std::string& op, Rng& rng) {
  const std::int64_t n = pick(rng, 1, 5000);
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
  return result(op, size_n(n), got == want ? 0.0 : 1.0, 0.5);
}

// Every record reaches the device through the copy-stream ring, byte for byte, in loader order, the
// partial last batch included.
// The ring in the two ways it is used: read back batch by batch (the host waits for each), and
// consumed the way a training loop does, on the compute stream with no host wait until the epoch
// ends, so the ring refills slots while earlier copies and reads are still queued.
Json check_prefetch(const std::string& op, Rng& rng) {
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
  const std::vector<std::int64_t> order = Loader::epoch_order(records, 5, 0, true, 1.0);
  double mismatches = 0;
  {
    DevicePrefetcher prefetch(loader, 0, 3, compute);
    // Epoch 0: each batch read back before the next.
    loader.start_epoch(0);
    prefetch.start_epoch();
    std::int64_t at = 0;
    std::vector<std::uint8_t> host;
    while (const std::optional<DeviceBatch> b = prefetch.next()) {
      host.resize(static_cast<size_t>(b->size * width));
      TB_CUDA_CHECK(cudaMemcpyAsync(host.data(), b->fields[0], host.size(), cudaMemcpyDeviceToHost, compute));
      TB_CUDA_CHECK(cudaStreamSynchronize(compute));
      prefetch.release(*b);
      for (int r = 0; r < b->size && at < records; ++r, ++at)
        mismatches += std::memcmp(host.data() + r * width, bytes.data() + order[static_cast<size_t>(at)] * width, static_cast<size_t>(width)) != 0;
    }
    if (at != records) mismatches += 1;
    // Epoch 1: every batch gathered on the device, one host wait at the end.
    const std::vector<std::int64_t> order1 = Loader::epoch_order(records, 5, 1, true, 1.0);
    DeviceBuffer gathered(0, static_cast<std::size_t>(records * width), compute);
    loader.start_epoch(1);
    prefetch.start_epoch();
    std::int64_t filled = 0;
    while (const std::optional<DeviceBatch> b = prefetch.next()) {
      const std::int64_t n = std::min<std::int64_t>(b->size, records - filled);
      TB_CUDA_CHECK(cudaMemcpyAsync(static_cast<std::uint8_t*>(gathered.get()) + filled * width, b->fields[0], static_cast<size_t>(n * width),
                                    cudaMemcpyDeviceToDevice, compute));
      filled += n;
      prefetch.release(*b);
    }
    std::vector<std::uint8_t> all(static_cast<size_t>(records * width));
    TB_CUDA_CHECK(cudaMemcpyAsync(all.data(), gathered.get(), all.size(), cudaMemcpyDeviceToHost, compute));
    TB_CUDA_CHECK(cudaStreamSynchronize(compute));
    for (std::int64_t r = 0; r < filled; ++r)
      mismatches += std::memcmp(all.data() + r * width, bytes.data() + order1[static_cast<size_t>(r)] * width, static_cast<size_t>(width)) != 0;
    if (filled != records) mismatches += 1;
  }
  TB_CUDA_CHECK(cudaStreamDestroy(compute));
  Json r = result(op, std::to_string(records) + " records of " + std::to_string(width) + " B, batch " + std::to_string(lo.batch_size) + ", two epochs",
                  mismatches, 0.5);
  r.set("pinned", loader.pinned());
  return r;
}

// The copy floor's probe: its pinned copies arrive byte for byte (it reads them back and throws
// otherwise), at an odd size too, and it reports a positive rate.
Json check_h2d_copy(const std::string& op, Rng& rng) {
  const std::int64_t bytes = pick(rng, 1, 3 << 20);
  const Json got = bench_h2d_copy(0, bytes, 3);
  const Json* best = got.find("bestMBps");
  const double rate = best && best->is_number() ? best->number() : 0.0;
  Json r = result(op, std::to_string(bytes) + " B pinned, 3 copies", rate > 0 && std::isfinite(rate) ? 0.0 : 1.0, 0.5);
  r.set("bestMBps", rate);
  return r;
}

// An impossible allocation is E_OOM with the numbers, and the next one works.
Json check_oom(const std::string& op, Rng&) {
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

const std::vector<Check>& kernel_checks() {
  static const std::vector<Check> checks = {
      {"relu", check_elementwise},           {"relu_backward", check_elementwise},   {"add", check_elementwise},          {"add_relu", check_elementwise},
      {"widen_u8", check_widen_u8},          {"gemm_f32", check_gemm_f32},           {"gemm_bf16_tc", check_gemm_bf16_tc},
      {"softmax_ce", check_softmax_ce},      {"softmax_ce_soft", check_soft_losses}, {"bce_logits", check_soft_losses},
      {"batchnorm_train", check_batchnorm_train}, {"batchnorm_backward", check_batchnorm_backward}, {"global_avgpool", check_global_avgpool},
      {"bias_grad", check_bias_grad},        {"conv2d", check_conv2d},               {"sgd", check_optimizer},
      {"adamw", check_optimizer},            {"count_nonfinite", check_count_nonfinite}, {"prefetch", check_prefetch}, {"h2d_copy", check_h2d_copy},
      {"oom", check_oom},
  };
  return checks;
}

// The one list of checks: this file's kernels, then the training step's (cuda_parity_step.cu).
const std::vector<Check>& all_checks() {
  static const std::vector<Check> all = [] {
    std::vector<Check> v = kernel_checks();
    v.insert(v.end(), step_checks().begin(), step_checks().end());
    return v;
  }();
  return all;
}

}  // namespace

std::vector<std::string> cuda_parity_ops() {
  std::vector<std::string> names;
  for (const Check& c : all_checks()) names.emplace_back(c.op);
  return names;
}

Json cuda_parity(const std::string& op, std::uint64_t seed) {
  const Check* check = nullptr;
  for (const Check& c : all_checks())
    if (op == c.op) check = &c;
  if (!check) {
    std::string known;
    for (const Check& c : all_checks()) known += (known.empty() ? "" : ", ") + std::string(c.op);
    TB_THROW(ErrorCode::BadInput, "cudaParity: unknown op '" + op + "' (known: " + known + ")");
  }
  const CudaStatus status = cuda_status();
  if (!status.available) TB_THROW(ErrorCode::Cuda, "no CUDA device: " + status.reason);
  TB_CUDA_CHECK(cudaSetDevice(0));
  Rng rng = case_rng(op, seed);
  return check->run(op, rng);
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
