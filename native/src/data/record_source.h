// Where training records come from: memory (arrays handed over from JS), a
// memory-mapped dataset cache, or the raw source files (the "uncached" path).
// Every source serves fixed-size records of named fields by index.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dtype.h"

namespace tb {

struct FieldInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  // per record; {} is one value
  // Widening to float computes value * scale + offset (input normalisation).
  float scale = 1.0f, offset = 0.0f;
  std::int64_t record_values() const;
  std::int64_t record_bytes() const { return record_values() * dtype_bytes(dtype); }
};

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual std::int64_t count() const = 0;
  virtual const std::vector<FieldInfo>& fields() const = 0;
  // Copies records idx[0..n) of field `f`, packed back to back, into out. Safe from many threads.
  virtual void read(int f, const std::int64_t* idx, int n, std::uint8_t* out) const = 0;
  virtual std::string describe() const = 0;

  int field_index(const std::string& name) const;  // -1 when absent
  const FieldInfo& field(const std::string& name) const;  // throws E_BAD_INPUT naming it
  // Sets the normalisation applied when widening `name` (e.g. from the training set's statistics).
  void set_scale(const std::string& name, float scale, float offset);

 protected:
  std::vector<FieldInfo> fields_;
};

// Arrays handed over from JS: validated (sizes, NaN) and copied.
class MemorySource : public RecordSource {
 public:
  void add_field(FieldInfo info, std::vector<std::uint8_t> bytes, std::int64_t count);
  std::int64_t count() const override { return count_ < 0 ? 0 : count_; }
  const std::vector<FieldInfo>& fields() const override { return fields_; }
  void read(int f, const std::int64_t* idx, int n, std::uint8_t* out) const override;
  std::string describe() const override { return "arrays in memory"; }

 private:
  std::int64_t count_ = -1;
  std::vector<std::vector<std::uint8_t>> data_;
};

// Throws E_BAD_INPUT naming the field, record and value when a float field holds NaN or infinity.
void check_finite(const FieldInfo& f, const std::uint8_t* bytes, std::int64_t records);

}  // namespace tb
