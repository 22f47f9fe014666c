// Host CPU description: brand string, core count and the vector extensions the
// CPU backend can use (the GEMM picks its kernel from these).
#include <array>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "core/device_info.h"

#if defined(__x86_64__) || defined(_M_X64)
#define TB_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#endif

namespace tb {

#if TB_X86
static void cpuid(unsigned leaf, unsigned regs[4]) {
#if defined(_MSC_VER)
  int r[4];
  __cpuid(r, static_cast<int>(leaf));
  for (int i = 0; i < 4; ++i) regs[i] = static_cast<unsigned>(r[i]);
#else
  __cpuid(leaf, regs[0], regs[1], regs[2], regs[3]);
#endif
}

static std::string x86_brand() {
  unsigned regs[4];
  cpuid(0x80000000u, regs);
  if (regs[0] < 0x80000004u) return "";
  std::array<char, 49> brand{};
  for (unsigned i = 0; i < 3; ++i) {
    cpuid(0x80000002u + i, regs);
    std::memcpy(brand.data() + 16 * i, regs, 16);
  }
  std::string s(brand.data());
  const auto first = s.find_first_not_of(' ');
  return first == std::string::npos ? "" : s.substr(first);
}

static std::vector<std::string> x86_simd() {
  std::vector<std::string> out;
#if defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) out.push_back("sse4.2");
  if (__builtin_cpu_supports("avx")) out.push_back("avx");
  if (__builtin_cpu_supports("avx2")) out.push_back("avx2");
  if (__builtin_cpu_supports("fma")) out.push_back("fma");
  if (__builtin_cpu_supports("avx512f")) out.push_back("avx512f");
#else
  unsigned regs[4];
  cpuid(1, regs);
  if (regs[2] & (1u << 20)) out.push_back("sse4.2");
  if (regs[2] & (1u << 28)) out.push_back("avx");
  if (regs[2] & (1u << 12)) out.push_back("fma");
  cpuid(7, regs);
  if (regs[1] & (1u << 5)) out.push_back("avx2");
  if (regs[1] & (1u << 16)) out.push_back("avx512f");
#endif
  return out;
}
#endif

// Linux fallback for non-x86 machines (and x86 CPUs without a brand string).
static std::string proc_cpuinfo_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "";
}

CpuInfo cpu_info() {
  CpuInfo info;
  info.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
#if TB_X86
  info.arch = "x86_64";
  info.name = x86_brand();
  info.simd = x86_simd();
#elif defined(__aarch64__) || defined(_M_ARM64)
  info.arch = "arm64";
  info.simd = {"neon"};
#else
  info.arch = "unknown";
#endif
  if (info.name.empty()) info.name = proc_cpuinfo_name();
  if (info.name.empty()) info.name = "unknown CPU";
  return info;
}

}  // namespace tb
