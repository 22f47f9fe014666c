#include "cuda/cublaslt.h"

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX  // windows.h's min/max macros would break std::min/std::max
#endif
#include <windows.h>
#else
#include <dlfcn.h>
#endif

#include <cstdlib>
#include <cstring>
#include <string>

namespace tb::cuda {
namespace {

// ---- the ABI of cublasLt.h, declared for the calls made here
using Status = int;  // cublasStatus_t; 0 is success
using LtHandle = void*;
using LtDesc = void*;
using LtLayout = void*;
using LtPref = void*;
struct LtAlgo {
  std::uint64_t data[8];
};
struct LtHeuristic {
  LtAlgo algo;
  std::size_t workspace_size;
  Status state;
  float waves_count;
  int reserved[4];
};
constexpr int kComputeF32 = 68;             // CUBLAS_COMPUTE_32F
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;  // cudaDataType
constexpr int kDescTransA = 3, kDescTransB = 4;   // cublasLtMatmulDescAttributes_t
constexpr int kPrefMaxWorkspace = 1;              // cublasLtMatmulPreferenceAttributes_t
constexpr int kPrefAlignA = 5, kPrefAlignB = 6, kPrefAlignC = 7, kPrefAlignD = 8;
constexpr int kOpN = 0, kOpT = 1;

struct Api {
  Status (*create)(LtHandle*);
  Status (*desc_create)(LtDesc*, int, int);
  Status (*desc_destroy)(LtDesc);
  Status (*desc_set)(LtDesc, int, const void*, std::size_t);
  Status (*layout_create)(LtLayout*, int, std::uint64_t, std::uint64_t, std::int64_t);
  Status (*layout_destroy)(LtLayout);
  Status (*pref_create)(LtPref*);
  Status (*pref_destroy)(LtPref);
  Status (*pref_set)(LtPref, int, const void*, std::size_t);
  Status (*heuristic)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout, LtLayout, LtPref, int, LtHeuristic*, int*);
  Status (*matmul)(LtHandle, LtDesc, const void*, const void*, LtLayout, const void*, LtLayout, const void*, const void*, LtLayout,
                   void*, LtLayout, const LtAlgo*, void*, std::size_t, cudaStream_t);
};
Api api;

#if defined(_WIN32)
// Loads a DLL without the system's error box, saying why it failed (126: not found or a dependency
// missing, 193: not a 64-bit DLL).
void* load_dll(const wchar_t* file, DWORD flags, std::string* why) {
  DWORD old_mode = 0;
  SetThreadErrorMode(SEM_FAILCRITICALERRORS, &old_mode);
  HMODULE h = LoadLibraryExW(file, nullptr, flags);
  const DWORD code = h ? 0 : GetLastError();
  SetThreadErrorMode(old_mode, nullptr);
  if (!h) *why = "Windows error " + std::to_string(code);
  return reinterpret_cast<void*>(h);
}
#endif

void* open_library(std::string* name, std::string* error) {
#if defined(TB_CUDA_EMULATED)
  // cuBLASLt drives a real GPU through the driver: the emulated device has neither.
  (void)name;
  *error = "the emulated CUDA device runs the engine's own kernels only (cuBLASLt needs a GPU)";
  return nullptr;
#endif
  // TB_CUBLASLT names the library file when it is not on the loader's path (e.g. pip's nvidia-cublas).
  std::string explicit_failure;
#if defined(_WIN32)
  // The wide environment keeps a non-ASCII path intact; the DLL's own folder is searched for its dependencies.
  if (const wchar_t* path = _wgetenv(L"TB_CUBLASLT"); path && *path) {
    std::string why;
    if (void* h = load_dll(path, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_DEFAULT_DIRS, &why)) {
      *name = "TB_CUBLASLT";
      return h;
    }
    explicit_failure = "TB_CUBLASLT could not be loaded (" + why + "); ";
  }
  const wchar_t* names[] = {L"cublasLt64_13.dll", L"cublasLt64_12.dll", L"cublasLt64_11.dll"};
  const char* printable[] = {"cublasLt64_13.dll", "cublasLt64_12.dll", "cublasLt64_11.dll"};
  std::string why;
  for (int i = 0; i < 3; ++i)
    if (void* h = load_dll(names[i], 0, &why)) {
      *name = printable[i];
      return h;
    }
  *error = explicit_failure + "none of cublasLt64_13.dll, cublasLt64_12.dll, cublasLt64_11.dll could be loaded (" + why +
           "; is the CUDA toolkit's bin folder on PATH?)";
#else
  if (const char* path = std::getenv("TB_CUBLASLT"); path && *path) {
    if (void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
      *name = path;
      return h;
    }
    const char* e = dlerror();
    explicit_failure = std::string("TB_CUBLASLT=") + path + " could not be loaded (" + (e ? e : "unknown error") + "); ";
  }
  const char* names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"};
  std::string last;
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) {
      *name = n;
      return h;
    }
    const char* e = dlerror();
    last = e ? e : n;
  }
  *error = explicit_failure + "libcublasLt.so.13/.12/.11 not found (" + last + ")";
#endif
  return nullptr;
}

void* symbol(void* lib, const char* name) {
#if defined(_WIN32)
  return reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(lib), name));
#else
  return dlsym(lib, name);
#endif
}

template <typename F>
bool bind(void* lib, F& fn, const char* name, std::string* missing) {
  fn = reinterpret_cast<F>(symbol(lib, name));
  if (!fn) *missing = std::string("the library has no ") + name;
  return fn != nullptr;
}

bool bind_all(void* lib, Api& api, std::string* missing) {
  return bind(lib, api.create, "cublasLtCreate", missing) && bind(lib, api.desc_create, "cublasLtMatmulDescCreate", missing) &&
         bind(lib, api.desc_destroy, "cublasLtMatmulDescDestroy", missing) &&
         bind(lib, api.desc_set, "cublasLtMatmulDescSetAttribute", missing) &&
         bind(lib, api.layout_create, "cublasLtMatrixLayoutCreate", missing) &&
         bind(lib, api.layout_destroy, "cublasLtMatrixLayoutDestroy", missing) &&
         bind(lib, api.pref_create, "cublasLtMatmulPreferenceCreate", missing) &&
         bind(lib, api.pref_destroy, "cublasLtMatmulPreferenceDestroy", missing) &&
         bind(lib, api.pref_set, "cublasLtMatmulPreferenceSetAttribute", missing) &&
         bind(lib, api.heuristic, "cublasLtMatmulAlgoGetHeuristic", missing) && bind(lib, api.matmul, "cublasLtMatmul", missing);
}

// Largest power of two (up to 256) dividing the address: cuBLASLt must not assume more.
std::uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t align = 256;
  while (align > 1 && a % align) align /= 2;
  return align;
}

}  // namespace

CublasLtProbe probe_cublaslt() {
  CublasLtProbe probe;
  std::string error;
  void* lib = open_library(&probe.library, &error);
  if (!lib) {
    probe.reason = error;
    return probe;
  }
  std::string missing;
  Api scratch{};
  probe.loaded = bind_all(lib, scratch, &missing);
  probe.reason = probe.loaded ? "" : missing;
  return probe;
}

CublasLt& CublasLt::instance() {
  static CublasLt lt;
  return lt;
}

CublasLt::CublasLt() {
  std::string error;
  lib_ = open_library(&library_, &error);
  if (!lib_) {
    reason_ = error;
    return;
  }
  if (!bind_all(lib_, api, &error)) {
    reason_ = error;
    return;
  }
  LtHandle h = nullptr;
  const Status st = api.create(&h);
  if (st != 0) {
    reason_ = "cublasLtCreate failed with status " + std::to_string(st);
    return;
  }
  handle_ = h;
}

// Descriptors and the chosen algorithm are built once per shape: building them costs more host
// time than a small GEMM takes on the device.
const CublasLt::Plan* CublasLt::plan(const PlanKey& key, std::string* why) {
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    if (!it->second.ok) *why = it->second.why;
    return it->second.ok ? &it->second : nullptr;
  }
  Plan& p = plans_[key];
  const int ab_type = key.input_type == 1 ? kR16BF : key.input_type == 2 ? kR16F : kR32F;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B's buffer is cuBLASLt's first operand.
  const int op_first = key.trans_b ? kOpT : kOpN, op_second = key.trans_a ? kOpT : kOpN;
  const int M = key.M, N = key.N, K = key.K;
  LtPref pref = nullptr;
  Status st = api.desc_create(&p.desc, kComputeF32, kR32F);
  if (st == 0) st = api.desc_set(p.desc, kDescTransA, &op_first, sizeof op_first);
  if (st == 0) st = api.desc_set(p.desc, kDescTransB, &op_second, sizeof op_second);
  // Layouts as stored: column-major views of the row-major buffers.
  if (st == 0) st = key.trans_b ? api.layout_create(&p.first, ab_type, K, N, key.ldb) : api.layout_create(&p.first, ab_type, N, K, key.ldb);
  if (st == 0) st = key.trans_a ? api.layout_create(&p.second, ab_type, M, K, key.lda) : api.layout_create(&p.second, ab_type, K, M, key.lda);
  if (st == 0) st = api.layout_create(&p.out, kR32F, N, M, key.ldc);
  if (st == 0) st = api.pref_create(&pref);
  const std::size_t ws = key.workspace_bytes;
  const std::uint32_t align_first = key.align_b, align_second = key.align_a, align_c = key.align_c;
  if (st == 0) st = api.pref_set(pref, kPrefMaxWorkspace, &ws, sizeof ws);
  if (st == 0) st = api.pref_set(pref, kPrefAlignA, &align_first, sizeof align_first);
  if (st == 0) st = api.pref_set(pref, kPrefAlignB, &align_second, sizeof align_second);
  if (st == 0) st = api.pref_set(pref, kPrefAlignC, &align_c, sizeof align_c);
  if (st == 0) st = api.pref_set(pref, kPrefAlignD, &align_c, sizeof align_c);
  if (st != 0) {
    p.why = "cuBLASLt setup failed with status " + std::to_string(st);
  } else {
    LtHeuristic h{};
    int found = 0;
    st = api.heuristic(handle_, p.desc, p.first, p.second, p.out, p.out, pref, 1, &h, &found);
    if (st != 0 || found == 0) {
      p.why = "cuBLASLt has no algorithm for this shape (status " + std::to_string(st) + ")";
    } else {
      static_assert(sizeof(LtAlgo) == sizeof(p.algo), "cublasLtMatmulAlgo_t is 64 bytes");
      std::memcpy(p.algo, &h.algo, sizeof p.algo);
      p.ok = true;
    }
  }
  if (pref) api.pref_destroy(pref);
  if (!p.ok) *why = p.why;
  return p.ok ? &p : nullptr;
}

bool CublasLt::matmul(int input_type, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A, int lda,
                      const void* B, int ldb, float beta, float* C, int ldc, void* workspace, std::size_t workspace_bytes,
                      cudaStream_t s, std::string* why) {
  if (!handle_) {
    *why = reason_;
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const PlanKey key{input_type, trans_a, trans_b, M, N, K, lda, ldb, ldc, alignment(A), alignment(B), alignment(C), workspace_bytes};
  const Plan* p = plan(key, why);
  if (!p) return false;
  const Status st = api.matmul(handle_, p->desc, &alpha, B, p->first, A, p->second, &beta, C, p->out, C, p->out,
                               reinterpret_cast<const LtAlgo*>(p->algo), workspace, workspace_bytes, s);
  if (st != 0) *why = "cublasLtMatmul failed with status " + std::to_string(st);
  return st == 0;
}

}  // namespace tb::cuda
