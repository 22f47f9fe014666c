// An in-memory dataset: named fields of fixed-size records. Data stays
// compact (uint8 images, fp16 targets) and is widened to float per batch.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tb {

enum class DType { U8, I32, F16, F32 };
const char* dtype_name(DType t);
DType parse_dtype(const std::string& name);  // "uint8", "int32", "float16", "float32"
int dtype_bytes(DType t);

struct Field {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  // per record
  std::vector<std::uint8_t> bytes;  // count * record_bytes, little-endian
  // Applied when widening to float: value * scale + offset (input normalisation).
  float scale = 1.0f, offset = 0.0f;
  std::int64_t record_values() const;
};

class Dataset {
 public:
  // Validates sizes, finiteness of float fields and integer labels' dtype; throws E_BAD_INPUT.
  void add_field(const std::string& name, Field field, std::int64_t count);
  std::int64_t count() const { return count_; }
  bool has(const std::string& name) const { return fields_.count(name) > 0; }
  const Field& field(const std::string& name) const;
  const std::map<std::string, Field>& fields() const { return fields_; }

  // Writes records idx[0..n) of a field as float (n * record_values values).
  void gather_float(const std::string& name, const std::int64_t* idx, int n, float* out) const;
  // Writes records idx[0..n) of an integer field (one value per record) as int32.
  void gather_labels(const std::string& name, const std::int64_t* idx, int n, std::int32_t* out) const;

 private:
  std::int64_t count_ = -1;
  std::map<std::string, Field> fields_;
};

float half_to_float(std::uint16_t h);

}  // namespace tb
