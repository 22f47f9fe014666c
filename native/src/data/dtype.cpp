#include "data/dtype.h"

#include <cstring>

#include "core/errors.h"

namespace tb {

namespace {
struct DTypeInfo {
  DType type;
  const char* name;
  int bytes;
  bool integer;
};
constexpr DTypeInfo kTypes[] = {
    {DType::Bool, "bool", 1, true},      {DType::I8, "int8", 1, true},       {DType::U8, "uint8", 1, true},
    {DType::I16, "int16", 2, true},      {DType::U16, "uint16", 2, true},    {DType::I32, "int32", 4, true},
    {DType::U32, "uint32", 4, true},     {DType::I64, "int64", 8, true},     {DType::U64, "uint64", 8, true},
    {DType::F16, "float16", 2, false},   {DType::F32, "float32", 4, false},  {DType::F64, "float64", 8, false},
};
const DTypeInfo& info(DType t) { return kTypes[static_cast<int>(t)]; }

template <typename S>
inline S load(const std::uint8_t* p) {
  S v;
  std::memcpy(&v, p, sizeof(S));
  return v;
}

template <typename S, typename D, typename F>
void convert(const std::uint8_t* src, std::int64_t n, D* dst, F&& f) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = f(load<S>(src + i * static_cast<std::int64_t>(sizeof(S))));
}
}  // namespace

const char* dtype_name(DType t) { return info(t).name; }
int dtype_bytes(DType t) { return info(t).bytes; }
bool dtype_is_integer(DType t) { return info(t).integer; }

DType parse_dtype(const std::string& name) {
  for (const auto& t : kTypes)
    if (name == t.name) return t.type;
  TB_THROW(ErrorCode::BadInput, "dtype '" + name + "' is not supported: use bool, (u)int8/16/32/64 or float16/32/64");
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      std::uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3FFu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void widen_to_float(DType t, const std::uint8_t* src, std::int64_t n, float* dst, float scale, float offset) {
  auto lin = [scale, offset](auto v) { return static_cast<float>(v) * scale + offset; };
  switch (t) {
    case DType::Bool:
    case DType::U8: {
      // The hot path (image planes): a plain loop the compiler vectorises.
      for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i] * scale + offset;
      return;
    }
    case DType::I8: return convert<std::int8_t>(src, n, dst, lin);
    case DType::I16: return convert<std::int16_t>(src, n, dst, lin);
    case DType::U16: return convert<std::uint16_t>(src, n, dst, lin);
    case DType::I32: return convert<std::int32_t>(src, n, dst, lin);
    case DType::U32: return convert<std::uint32_t>(src, n, dst, lin);
    case DType::I64: return convert<std::int64_t>(src, n, dst, lin);
    case DType::U64: return convert<std::uint64_t>(src, n, dst, lin);
    case DType::F16: return convert<std::uint16_t>(src, n, dst, [&](std::uint16_t h) { return half_to_float(h) * scale + offset; });
    case DType::F32:
      if (scale == 1.0f && offset == 0.0f) {
        std::memcpy(dst, src, static_cast<size_t>(n) * 4);
        return;
      }
      return convert<float>(src, n, dst, lin);
    case DType::F64: return convert<double>(src, n, dst, lin);
  }
}

void widen_to_int32(DType t, const std::uint8_t* src, std::int64_t n, std::int32_t* dst) {
  auto as_int = [](auto v) { return static_cast<std::int32_t>(v); };
  switch (t) {
    case DType::Bool:
    case DType::U8: return convert<std::uint8_t>(src, n, dst, as_int);
    case DType::I8: return convert<std::int8_t>(src, n, dst, as_int);
    case DType::I16: return convert<std::int16_t>(src, n, dst, as_int);
    case DType::U16: return convert<std::uint16_t>(src, n, dst, as_int);
    case DType::I32: return convert<std::int32_t>(src, n, dst, as_int);
    case DType::U32: return convert<std::uint32_t>(src, n, dst, as_int);
    case DType::I64: return convert<std::int64_t>(src, n, dst, as_int);
    case DType::U64: return convert<std::uint64_t>(src, n, dst, as_int);
    default: TB_THROW(ErrorCode::BadInput, std::string("labels must be integers, not ") + dtype_name(t));
  }
}

}  // namespace tb
