// Parity checks of what the CUDA training step adds: mixed-precision GEMMs,
// every path of the GEMM engine (its timed choice, and its own kernel or
// cuBLASLt forced), device widening, fused epilogues, dropout, MSE, the
// device-side loss and accuracy sums and their reset, the fp16 loss-scale
// update against its host definition, the chunked convolution of the device
// model, the graph-capture guard and the allocator's stream order.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/errors.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"
#include "cuda/device_model.h"
#include "cuda/gemm_engine.h"
#include "cuda/kernels.h"
#include "cuda/parity_util.h"
#include "cuda/stream_capture.h"
#include "nn/model.h"
#include "nn/spec.h"

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

float round_bf16(float v) { return __bfloat162float(__float2bfloat16(v)); }
float round_f16(float v) { return __half2float(__float2half_rn(v)); }

std::string nchw(int N, int C, int HW) { return "N,C,HW=" + std::to_string(N) + "," + std::to_string(C) + "," + std::to_string(HW); }

// The own tensor-core kernel, any shape and transpose; the reference rounds the inputs the same way.
Json check_gemm_tc(const std::string& op, Rng& rng) {
  const bool half = op == "gemm_tc_fp16";
  GemmCase c = gemm_case(rng, 200, 200, 400);
  DeviceBuffer dA = upload(c.A), dB = upload(c.B), dC = upload(c.C);
  cuda::gemm_tc(half, c.ta, c.tb, c.M, c.N, c.K, c.alpha, dA.as<float>(), c.lda, dB.as<float>(), c.ldb, c.beta, dC.as<float>(), c.N, nullptr);
  for (auto* v : {&c.A, &c.B})
    for (float& e : *v) e = half ? round_f16(e) : round_bf16(e);
  const Reference want = gemm_reference(c.ta, c.tb, c.M, c.N, c.K, c.alpha, c.A, c.lda, c.B, c.ldb, c.beta, c.C);
  return result(op, c.shapes(), norm_rel(download(dC, static_cast<std::int64_t>(c.M) * c.N), std::vector<float>(want.value.begin(), want.value.end())), 1e-3);
}

// Split-K: K cut into 2-9 slices whose fp32 partials are summed in slice order, on the shapes it is for
// (few tiles, long K). Against the exact product of the rounded operands, and the same bits when run again.
Json check_gemm_tc_split(const std::string& op, Rng& rng) {
  const bool half = rng.uniform() < 0.5;
  GemmCase c = gemm_case(rng, 100, 100, 1);
  c.K = pick(rng, 600, 2048);
  c.A = random_vec(rng, static_cast<std::int64_t>(c.M) * c.K);
  c.B = random_vec(rng, static_cast<std::int64_t>(c.K) * c.N);
  c.lda = c.ta ? c.M : c.K;
  c.ldb = c.tb ? c.K : c.N;
  const int slices = pick(rng, 2, 9);
  const std::int64_t mn = static_cast<std::int64_t>(c.M) * c.N;
  DeviceBuffer dA = upload(c.A), dB = upload(c.B), dC = upload(c.C), dC2 = upload(c.C), ws(0, static_cast<std::size_t>(slices) * mn * 4);
  for (DeviceBuffer* out : {&dC, &dC2})
    cuda::gemm_tc(half, c.ta, c.tb, c.M, c.N, c.K, c.alpha, dA.as<float>(), c.lda, dB.as<float>(), c.ldb, c.beta, out->as<float>(), c.N, nullptr,
                  slices, ws.as<float>());
  const std::vector<float> got = download(dC, mn), again = download(dC2, mn);
  for (auto* v : {&c.A, &c.B})
    for (float& e : *v) e = half ? round_f16(e) : round_bf16(e);
  const Reference want = gemm_reference(c.ta, c.tb, c.M, c.N, c.K, c.alpha, c.A, c.lda, c.B, c.ldb, c.beta, c.C);
  const bool same = std::memcmp(got.data(), again.data(), got.size() * sizeof(float)) == 0;
  Json r = result(op, c.shapes() + (half ? " fp16" : " bf16") + ", " + std::to_string(slices) + " slices",
                  same ? norm_rel(got, std::vector<float>(want.value.begin(), want.value.end())) : 1.0, 1e-3);
  r.set("sameBits", same);
  // What the engine would pick for the board network's weight gradients on an H100 (132 SMs): the count is pure arithmetic.
  r.set("boardSlices", cuda::gemm_tc_split_slices(96, 864, 60750, 132));
  return r;
}

// Through the engine: "gemm_engine" takes whichever path the timing picks for odd shapes; gemm_lt_* force
// cuBLASLt in each precision on aligned shapes (E_CUDA with the reason when it cannot run them).
Json check_gemm_engine(const std::string& op, Rng& rng) {
  const cuda::Precision precision = op == "gemm_lt_bf16" ? cuda::Precision::Bf16 : op == "gemm_lt_fp16" ? cuda::Precision::Fp16 : cuda::Precision::Fp32;
  const bool forced = op != "gemm_engine";
  GemmCase c = gemm_case(rng, 200, 200, 400, forced ? 8 : 1);
  DeviceBuffer dA = upload(c.A), dB = upload(c.B), dC = upload(c.C);
  cuda::GemmEngine engine(0, precision, nullptr);
  if (forced) engine.force_path(cuda::GemmPath::CublasLt);
  engine.run(c.ta, c.tb, c.M, c.N, c.K, c.alpha, dA.as<float>(), c.lda, dB.as<float>(), c.ldb, c.beta, dC.as<float>(), c.N);
  const std::vector<float> got = download(dC, static_cast<std::int64_t>(c.M) * c.N);
  Json r = Json::object();
  if (precision == cuda::Precision::Fp32) {
    r = result(op, c.shapes(), gemm_f32_score(c, got));
  } else {
    const bool half = precision == cuda::Precision::Fp16;
    for (auto* v : {&c.A, &c.B})
      for (float& e : *v) e = half ? round_f16(e) : round_bf16(e);
    const Reference want = gemm_reference(c.ta, c.tb, c.M, c.N, c.K, c.alpha, c.A, c.lda, c.B, c.ldb, c.beta, c.C);
    r = result(op, c.shapes(), norm_rel(got, std::vector<float>(want.value.begin(), want.value.end())), 1e-3);
  }
  r.set("choice", engine.log());
  return r;
}

// int8 inputs with scale and offset (exact in fp32), int64 labels.
Json check_widen(const std::string& op, Rng& rng) {
  const std::int64_t n = pick(rng, 1, 5000);
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
  for (size_t i = 0; i < y.size(); ++i) err = worse(err, labels[i] == y[i] ? 0.0 : 1.0);
  return result(op, "n=" + std::to_string(n), err, 1e-6);
}

Json check_bias_epilogue(const std::string& op, Rng& rng) {
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
    return result(op, nchw(N, C, HW), max_rel(want, download(dx, static_cast<std::int64_t>(x.size()))), 1e-6);
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
  err = worse(err, max_rel(g, download(dback, static_cast<std::int64_t>(x.size()))));
  return result(op, nchw(N, C, HW), err, 1e-6);
}

Json check_batchnorm_eval(const std::string& op, Rng& rng) {
  const BatchNormEvalCase c = batchnorm_eval_case(rng);
  DeviceBuffer dx = upload(c.x), dg = upload(c.gamma), dbeta = upload(c.beta), dm = upload(c.mean), dv = upload(c.var), dout(0, c.x.size() * 4);
  cuda::batchnorm_forward_eval(dout.as<float>(), dx.as<float>(), dg.as<float>(), dbeta.as<float>(), dm.as<float>(), dv.as<float>(), c.N, c.C,
                               c.HW, c.eps, false, nullptr);
  return result(op, c.shapes(), batchnorm_eval_score(c, download(dout, static_cast<std::int64_t>(c.x.size()))));
}

// Not the CPU's random stream: the rule (mask in {0, 1/(1-p)}, out = in * mask, keep rate ~ 1-p), and masks
// that depend on the step's seed, the layer and the micro-batch index only, never on the readout sums.
Json check_dropout(const std::string& op, Rng& rng) {
  const std::int64_t big = 100000;
  const float p = static_cast<float>(rng.uniform(0.1, 0.6));
  auto x = random_vec(rng, big);
  cuda::TrainState st;
  st.dropout_seed = rng.next_u64();
  DeviceBuffer dst = upload_state(st), dx = upload(x), dout(0, x.size() * 4), dmask(0, x.size() * 4);
  cuda::dropout_forward(dout.as<float>(), dmask.as<float>(), dx.as<float>(), big, p, 1, 0, dst.as<cuda::TrainState>(), nullptr);
  const auto out = download(dout, big), mask = download(dmask, big);
  double err = 0, kept = 0;
  for (std::int64_t i = 0; i < big; ++i) {
    const bool keep = mask[static_cast<size_t>(i)] != 0.f;
    kept += keep;
    if (keep) err = worse(err, std::fabs(mask[static_cast<size_t>(i)] * (1.0 - p) - 1.0));
    err = worse(err, static_cast<double>(std::fabs(out[static_cast<size_t>(i)] - x[static_cast<size_t>(i)] * mask[static_cast<size_t>(i)])));
  }
  // 100,000 draws: the keep rate is within 1 % of 1-p unless the hash is biased.
  err = worse(err, std::fabs(kept / big - (1.0 - p)) > 0.01 ? 1.0 : 0.0);
  // Sums the host has not read yet leave the mask alone; the next micro-batch gets a new one.
  st.micro_batches = 5;
  DeviceBuffer dst5 = upload_state(st), dmask5(0, x.size() * 4), dmask1(0, x.size() * 4);
  cuda::dropout_forward(dout.as<float>(), dmask5.as<float>(), dx.as<float>(), big, p, 1, 0, dst5.as<cuda::TrainState>(), nullptr);
  cuda::dropout_forward(dout.as<float>(), dmask1.as<float>(), dx.as<float>(), big, p, 1, 1, dst5.as<cuda::TrainState>(), nullptr);
  err = worse(err, download(dmask5, big) == mask ? 0.0 : 1.0);
  err = worse(err, download(dmask1, big) != mask ? 0.0 : 1.0);
  return result(op, "n=100000 p=" + std::to_string(p), err, 1e-5);
}

Json check_mse(const std::string& op, Rng& rng) {
  const int B = pick(rng, 1, 64), D = pick(rng, 1, 40);
  auto pr = random_vec(rng, static_cast<std::int64_t>(B) * D), t = random_vec(rng, static_cast<std::int64_t>(B) * D);
  std::vector<float> want(pr.size());
  const double loss = mse_forward_backward(want.data(), pr.data(), t.data(), static_cast<std::int64_t>(pr.size()), 0.5);
  DeviceBuffer dp = upload(pr), dt = upload(t), dd(0, pr.size() * 4), dl(0, static_cast<size_t>(B) * 4);
  cuda::mse(dl.as<float>(), dd.as<float>(), dp.as<float>(), dt.as<float>(), B, D, 0.5f, nullptr);
  double got = 0;
  for (float r : download(dl, B)) got += r;
  got /= B;
  const double err = worse(max_rel(want, download(dd, static_cast<std::int64_t>(pr.size()))), std::fabs(got - loss) / std::max(loss, 1e-3));
  return result(op, "B,D=" + std::to_string(B) + "," + std::to_string(D), err, 1e-5);
}

Json check_device_sums(const std::string& op, Rng& rng) {
  const int B = pick(rng, 1, 300), K = pick(rng, 2, 1500);
  auto z = random_vec(rng, static_cast<std::int64_t>(B) * K), t = random_vec(rng, static_cast<std::int64_t>(B) * K), rows = random_vec(rng, B);
  std::vector<std::int32_t> y(static_cast<size_t>(B));
  std::vector<float> mask(static_cast<size_t>(B));
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(K)));
  // Row weights, fractional too: the loss divides by their sum, as the CPU does.
  for (auto& v : mask) v = rng.uniform() < 0.3 ? 0.f : rng.uniform() < 0.5 ? 0.5f : 1.f;
  // Make about half the rows right.
  for (int b = 0; b < B; b += 2) z[static_cast<size_t>(b) * K + static_cast<size_t>(y[static_cast<size_t>(b)])] = 5.f;
  std::int64_t hard = 0, soft = 0;
  double weight_sum = 0, row_sum = 0;
  for (int b = 0; b < B; ++b) {
    const float* o = z.data() + static_cast<std::int64_t>(b) * K;
    const float* tt = t.data() + static_cast<std::int64_t>(b) * K;
    const auto am = std::max_element(o, o + K) - o;
    hard += am == y[static_cast<size_t>(b)];
    if (mask[static_cast<size_t>(b)] != 0.f) soft += am == std::max_element(tt, tt + K) - tt;
    weight_sum += mask[static_cast<size_t>(b)];
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
  const double mean = weight_sum > 0 ? row_sum / weight_sum : 0.0;
  const double err = worst({std::fabs(s.head_sums[1] - mean * B) / std::max(std::fabs(mean * B), 1e-3),
                            std::fabs(s.loss_sum - 0.25 * mean) / std::max(std::fabs(0.25 * mean), 1e-3), s.micro_batches == 1 ? 0.0 : 1.0});
  return result(op, "B=" + std::to_string(B), err, 1e-5);
}

// The device's update after a clean step and after an inf: the host rule's answer, and the update is skipped.
Json check_loss_scale(const std::string& op, Rng& rng) {
  const std::int64_t n = pick(rng, 1, 5000);
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
  const cuda::TrainState a = read_state(dst);
  double err = worst({std::fabs(a.grad_norm - norm) / norm, a.apply == 1 ? 0.0 : 1.0, std::fabs(a.scale.scale - host.scale)});
  cuda::poison_gradient(dg.as<float>(), nullptr);
  cuda::gradient_stats(s, dg.as<float>(), n, nullptr);
  cuda::finish_gradients(s, 0.f, true, 0.9f, 0.999f, nullptr);
  cuda::sgd_update(dp.as<float>(), dg.as<float>(), dm.as<float>(), n, 0.9f, 0.f, s, nullptr);
  update_loss_scale(host, true, policy);
  const cuda::TrainState b = read_state(dst);
  err = worst({err, b.apply == 0 ? 0.0 : 1.0, b.skipped == 1 ? 0.0 : 1.0, std::fabs(b.scale.scale - host.scale)});
  err = worse(err, max_rel(g, download(dp, n)));  // the skipped update left the parameters alone
  return result(op, "n=" + std::to_string(n), err, 1e-5);
}

// A non-blocking stream, as the training step uses.
struct TestStream {
  cudaStream_t s = nullptr;
  TestStream() { TB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~TestStream() {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
};

// readout()'s reset, queued on the step's stream: the sums restart, the loss scale and step count carry on.
Json check_readout_reset(const std::string& op, Rng& rng) {
  cuda::TrainState st;
  st.loss_sum = rng.uniform(1, 2);
  st.micro_batches = 3;
  st.correct = 17;
  st.skipped = 2;
  st.head_sums[0] = st.head_sums[3] = 4;
  st.scale.scale = 1024;
  st.adam_t = 7;
  st.grad_norm = 3;
  TestStream stream;
  DeviceBuffer dst = upload_state(st);
  cuda::reset_readout(dst.as<cuda::TrainState>(), stream.s);
  TB_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  const cuda::TrainState r = read_state(dst);
  const bool cleared = r.loss_sum == 0 && r.micro_batches == 0 && r.correct == 0 && r.skipped == 0 && r.head_sums[0] == 0 && r.head_sums[3] == 0;
  const bool kept = r.scale.scale == 1024 && r.adam_t == 7 && r.grad_norm == 3;
  return result(op, "one TrainState", cleared && kept ? 0.0 : 1.0, 0.5);
}

// The capture guard: a throw while recording leaves the stream usable; a capture that failed is reported,
// not dropped; a good one replays the recorded work.
Json check_graph_capture(const std::string& op, Rng& rng) {
  const std::int64_t n = pick(rng, 1, 5000);
  auto x = random_vec(rng, n), y = random_vec(rng, n);
  std::vector<float> want(static_cast<size_t>(n));
  add_forward(want.data(), x.data(), y.data(), n);
  TestStream stream;
  DeviceBuffer dx = upload(x), dy = upload(y), dout(0, static_cast<size_t>(n) * 4, stream.s);
  double failures = 0;
  auto capturing = [&] {
    cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
    TB_CUDA_CHECK(cudaStreamIsCapturing(stream.s, &c));
    return c != cudaStreamCaptureStatusNone;
  };
  try {
    cuda::StreamCapture capture(stream.s);
    cuda::add_forward(dout.as<float>(), dx.as<float>(), dy.as<float>(), n, stream.s);
    TB_THROW(ErrorCode::Internal, "thrown mid-capture on purpose");
  } catch (const Error&) {
  }
  failures += capturing();
  std::string why;
  {
    cuda::StreamCapture capture(stream.s);
    cudaStreamSynchronize(stream.s);  // not allowed while capturing: invalidates the capture
    failures += capture.finish(&why) != nullptr || why.empty();
  }
  failures += capturing();
  TB_CUDA_CHECK(cudaMemsetAsync(dout.get(), 0, static_cast<size_t>(n) * 4, stream.s));
  cudaGraphExec_t exec = nullptr;
  {
    cuda::StreamCapture capture(stream.s);
    cuda::add_forward(dout.as<float>(), dx.as<float>(), dy.as<float>(), n, stream.s);
    exec = capture.finish(&why);
  }
  if (exec) {
    TB_CUDA_CHECK(cudaGraphLaunch(exec, stream.s));
    TB_CUDA_CHECK(cudaStreamSynchronize(stream.s));
    cudaGraphExecDestroy(exec);
    failures += max_rel(want, download(dout, n)) > 0 ? 1 : 0;
  } else {
    failures += 1;
  }
  Json r = result(op, "n=" + std::to_string(n), failures, 0.5);
  r.set("invalidatedCapture", why);
  return r;
}

// A block freed by one stream goes to another only after the work queued before the free has run; the
// same stream may have it back at once. A host callback holds the first stream until the checks are done.
Json check_allocator_streams(const std::string& op, Rng& rng) {
  const std::size_t bytes = static_cast<std::size_t>(pick(rng, 1, 64)) << 20;
  CudaAllocator::for_device(0).empty_cache();  // only this check's blocks, so "which block" is well defined
  TestStream first, second;
  // Held until released, or 10 s at most: a driver that serialised cudaMalloc behind it must not hang the run.
  struct Hold {
    std::atomic<bool> on{true};
    std::chrono::steady_clock::time_point until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  } hold;
  const auto wait = [](void* h) {
    const auto* held = static_cast<Hold*>(h);
    while (held->on.load() && std::chrono::steady_clock::now() < held->until) std::this_thread::yield();
  };
  double failures = 0;
  void* freed = nullptr;
  {
    DeviceBuffer a(0, bytes, first.s);
    freed = a.get();
    TB_CUDA_CHECK(cudaMemsetAsync(a.get(), 1, bytes, first.s));
    TB_CUDA_CHECK(cudaLaunchHostFunc(first.s, wait, &hold));
  }  // freed while `first` is still held
  try {
    DeviceBuffer other(0, bytes, second.s);
    failures += other.get() == freed;  // would race with the held memset's stream
    DeviceBuffer same(0, bytes, first.s);
    failures += same.get() != freed;  // stream order makes this one safe
  } catch (...) {
    hold.on = false;
    throw;
  }
  hold.on = false;
  TB_CUDA_CHECK(cudaStreamSynchronize(first.s));
  // Once the first stream has passed the free, the other stream may have the block.
  DeviceBuffer after1(0, bytes, second.s), after2(0, bytes, second.s);
  failures += after1.get() != freed && after2.get() != freed;
  return result(op, std::to_string(bytes >> 20) + " MiB", failures, 0.5);
}

// The device model's convolutions chunked over the batch (a tiny im2col budget, so chunks start at n0 > 0
// and the last is partial) against the same model in one chunk: the same forward bits (the own GEMM kernel
// sums each output in one order) and the same gradients up to the order of the chunks' sums.
Json check_conv_chunked(const std::string& op, Rng& rng) {
  const int B = pick(rng, 5, 12);
  const ModelSpec spec = parse_model_spec(Json::parse(
      R"({"family": "cnn", "task": "classification", "input": [1, 12, 12], "outputs": 4, "channels": [8, 16], "strides": [1, 2], "kernel": 3, "batchNorm": true, "hidden": 32})"));
  const Model model(spec, rng.next_u64());
  const Head& head = model.heads()[0];
  const std::int64_t in = B * model.input_dims().size(), out = B * model.nodes()[static_cast<size_t>(head.node)].dims.size();
  const auto x = random_vec(rng, in), dy = random_vec(rng, out);
  TestStream stream;
  cuda::GemmEngine gemm(0, cuda::Precision::Fp32, stream.s);
  gemm.force_path(cuda::GemmPath::Own);
  DeviceBuffer dx = upload(x), dst = upload_state(cuda::TrainState{});
  const std::int64_t budget = 2 * 9 * 144 + 100;  // the first conv two samples a chunk, the second one
  auto run = [&](std::int64_t col_budget, std::vector<float>* y, std::vector<float>* grads) {
    cuda::DeviceModel net(model, 0, stream.s, gemm);
    net.set_col_budget(col_budget);
    net.reserve(B);
    net.zero_grads();
    net.forward(dx.as<float>(), B, true, dst.as<cuda::TrainState>(), 0);
    TB_CUDA_CHECK(cudaMemcpyAsync(net.output_grad(head), dy.data(), dy.size() * 4, cudaMemcpyHostToDevice, stream.s));
    net.backward();
    y->resize(static_cast<size_t>(out));
    grads->resize(static_cast<size_t>(net.param_count()));
    TB_CUDA_CHECK(cudaMemcpyAsync(y->data(), net.output(head), y->size() * 4, cudaMemcpyDeviceToHost, stream.s));
    TB_CUDA_CHECK(cudaMemcpyAsync(grads->data(), net.grads(), grads->size() * 4, cudaMemcpyDeviceToHost, stream.s));
    TB_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  };
  std::vector<float> y_whole, g_whole, y_chunked, g_chunked;
  run(cuda::DeviceModel::kColBudget, &y_whole, &g_whole);
  run(budget, &y_chunked, &g_chunked);
  return result(op, "cnn 1x12x12, batch " + std::to_string(B) + ", im2col budget " + std::to_string(budget) + " floats",
                worst_ratio({{max_rel(y_whole, y_chunked), 1e-7}, {norm_rel(g_chunked, g_whole), 1e-5}}));
}

}  // namespace

const std::vector<Check>& step_checks() {
  static const std::vector<Check> checks = {
      {"gemm_tc_bf16", check_gemm_tc},         {"gemm_tc_fp16", check_gemm_tc},           {"gemm_tc_split", check_gemm_tc_split},           {"gemm_engine", check_gemm_engine},
      {"gemm_lt_fp32", check_gemm_engine},     {"gemm_lt_bf16", check_gemm_engine},       {"gemm_lt_fp16", check_gemm_engine},
      {"widen", check_widen},                  {"bias_act", check_bias_epilogue},         {"conv_out", check_bias_epilogue},
      {"batchnorm_eval", check_batchnorm_eval}, {"dropout", check_dropout},               {"mse", check_mse},
      {"count_correct", check_device_sums},    {"accumulate_loss", check_device_sums},    {"loss_scale", check_loss_scale},
      {"readout_reset", check_readout_reset},  {"graph_capture", check_graph_capture},    {"allocator_streams", check_allocator_streams},
      {"conv_chunked", check_conv_chunked},
  };
  return checks;
}

}  // namespace tb
