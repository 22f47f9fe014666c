// A small JSON value, parser and writer: model specs arrive as JSON and
// safetensors headers are JSON. Errors are E_BAD_INPUT with the byte offset.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tb {

class Json {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // keeps key order

  Json() = default;
  Json(bool b) : type_(Type::Bool), bool_(b) {}
  Json(double d) : type_(Type::Number), number_(d) {}
  Json(int i) : type_(Type::Number), number_(i) {}
  Json(std::int64_t i) : type_(Type::Number), number_(static_cast<double>(i)) {}
  Json(const char* s) : type_(Type::String), string_(s) {}
  Json(std::string s) : type_(Type::String), string_(std::move(s)) {}
  static Json array(Array a = {});
  static Json object(Object o = {});

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }
  bool is_bool() const { return type_ == Type::Bool; }

  double number() const { return number_; }
  bool boolean() const { return bool_; }
  const std::string& string() const { return string_; }
  const Array& items() const { return array_; }
  const Object& members() const { return object_; }

  // Object access: nullptr when missing.
  const Json* find(const std::string& key) const;
  void set(const std::string& key, Json value);
  void push(Json value);

  std::string dump() const;
  static Json parse(const std::string& text);

 private:
  Type type_ = Type::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  Array array_;
  Object object_;
};

}  // namespace tb
