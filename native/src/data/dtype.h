// Storage dtypes of dataset fields and their widening to float (the CPU
// backend's compute type). Data stays compact until a batch is formed.
#pragma once
#include <cstdint>
#include <string>

namespace tb {

enum class DType { Bool, I8, U8, I16, U16, I32, U32, I64, U64, F16, F32, F64 };

const char* dtype_name(DType t);
// "bool", "int8", "uint8", ..., "float64"; throws E_BAD_INPUT naming the text otherwise.
DType parse_dtype(const std::string& name);
int dtype_bytes(DType t);
bool dtype_is_integer(DType t);

// dst[i] = value(src[i]) * scale + offset for n little-endian values.
void widen_to_float(DType t, const std::uint8_t* src, std::int64_t n, float* dst, float scale, float offset);
// Integer labels; throws E_BAD_INPUT for float dtypes.
void widen_to_int32(DType t, const std::uint8_t* src, std::int64_t n, std::int32_t* dst);

float half_to_float(std::uint16_t h);

}  // namespace tb
