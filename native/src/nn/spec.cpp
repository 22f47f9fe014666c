#include "nn/spec.h"

#include <cmath>

#include "core/errors.h"

namespace tb {
namespace {

constexpr int kMaxSize = 1 << 20;  // no single dimension of a model is larger than this

std::string show(const Json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

[[noreturn]] void bad(const std::string& path, const std::string& what, const Json* got) {
  TB_THROW(ErrorCode::BadInput, path + " " + what + (got ? ", got " + show(*got) : ""));
}

const Json& require(const Json& obj, const std::string& key, const std::string& path) {
  const Json* v = obj.find(key);
  if (!v) bad(path + "." + key, "is required", nullptr);
  return *v;
}

int positive_int(const Json& v, const std::string& path, int max = kMaxSize) {
  if (!v.is_number() || v.number() != std::floor(v.number()) || v.number() < 1 || v.number() > max) {
    bad(path, "must be an integer from 1 to " + std::to_string(max), &v);
  }
  return static_cast<int>(v.number());
}

int positive_int_field(const Json& obj, const std::string& key, const std::string& path, int max = kMaxSize) {
  return positive_int(require(obj, key, path), path + "." + key, max);
}

std::vector<int> int_list(const Json& obj, const std::string& key, const std::string& path, bool allow_empty,
                          int max = kMaxSize) {
  const Json& v = require(obj, key, path);
  if (!v.is_array()) bad(path + "." + key, "must be an array of integers", &v);
  if (!allow_empty && v.items().empty()) bad(path + "." + key, "must not be empty", &v);
  if (v.items().size() > 64) bad(path + "." + key, "has more than 64 entries", nullptr);
  std::vector<int> out;
  for (size_t i = 0; i < v.items().size(); ++i)
    out.push_back(positive_int(v.items()[i], path + "." + key + "[" + std::to_string(i) + "]", max));
  return out;
}

double probability(const Json& obj, const std::string& key, const std::string& path) {
  const Json* v = obj.find(key);
  if (!v) return 0.0;
  if (!v->is_number() || !(v->number() >= 0.0 && v->number() < 1.0)) bad(path + "." + key, "must be in [0, 1)", v);
  return v->number();
}

void check_keys(const Json& obj, const std::string& path, std::initializer_list<const char*> allowed) {
  for (const auto& kv : obj.members()) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || kv.first == a;
    if (!ok) bad(path + "." + kv.first, "is not a field of this model family", nullptr);
  }
}

}  // namespace

ModelSpec parse_model_spec(const Json& json) {
  const std::string p = "spec";
  if (!json.is_object()) bad(p, "must be a JSON object", &json);
  ModelSpec s;
  s.source = json;
  const Json& family = require(json, "family", p);
  if (!family.is_string()) bad(p + ".family", "must be a string", &family);
  s.family = family.string();

  if (s.family == "mlp" || s.family == "cnn") {
    const Json& task = require(json, "task", p);
    if (!task.is_string() || (task.string() != "classification" && task.string() != "regression")) {
      bad(p + ".task", "must be \"classification\" or \"regression\"", &task);
    }
    s.task = task.string() == "classification" ? Task::Classification : Task::Regression;
    s.outputs = positive_int_field(json, "outputs", p);
    if (s.task == Task::Classification && s.outputs < 2) bad(p + ".outputs", "must be at least 2 classes", nullptr);
  }

  if (s.family == "mlp") {
    check_keys(json, p, {"family", "task", "input", "outputs", "hidden", "dropout"});
    s.input = int_list(json, "input", p, false);
    s.mlp.hidden = int_list(json, "hidden", p, true);
    s.mlp.dropout = probability(json, "dropout", p);
  } else if (s.family == "cnn") {
    check_keys(json, p, {"family", "task", "input", "outputs", "channels", "strides", "kernel", "batchNorm", "hidden", "dropout"});
    s.input = int_list(json, "input", p, false);
    if (s.input.size() != 3) bad(p + ".input", "must be [channels, height, width]", &require(json, "input", p));
    s.cnn.channels = int_list(json, "channels", p, false);
    s.cnn.strides = int_list(json, "strides", p, false, 8);
    if (s.cnn.strides.size() != s.cnn.channels.size()) {
      bad(p + ".strides", "must have one entry per entry of spec.channels (" + std::to_string(s.cnn.channels.size()) + ")",
          &require(json, "strides", p));
    }
    s.cnn.kernel = positive_int_field(json, "kernel", p, 15);
    if (s.cnn.kernel % 2 == 0) bad(p + ".kernel", "must be odd (padding keeps the size)", &require(json, "kernel", p));
    const Json& bn = require(json, "batchNorm", p);
    if (!bn.is_bool()) bad(p + ".batchNorm", "must be true or false", &bn);
    s.cnn.batch_norm = bn.boolean();
    const Json* hidden = json.find("hidden");
    s.cnn.hidden = (hidden && !(hidden->is_number() && hidden->number() == 0)) ? positive_int(*hidden, p + ".hidden") : 0;
    s.cnn.dropout = probability(json, "dropout", p);
  } else if (s.family == "bottleneck_resnet") {
    check_keys(json, p, {"family", "input", "stemWidth", "layers", "strides", "widths", "expansion", "headChannels", "policyClasses"});
    s.input = int_list(json, "input", p, false);
    if (s.input.size() != 3) bad(p + ".input", "must be [planes, height, width]", &require(json, "input", p));
    s.resnet.stem_width = positive_int_field(json, "stemWidth", p);
    s.resnet.layers = int_list(json, "layers", p, false, 64);
    s.resnet.strides = int_list(json, "strides", p, false, 8);
    s.resnet.widths = int_list(json, "widths", p, false);
    const size_t stages = s.resnet.layers.size();
    if (s.resnet.strides.size() != stages || s.resnet.widths.size() != stages) {
      bad(p + ".strides", "and spec.widths must have one entry per stage (" + std::to_string(stages) + ")", nullptr);
    }
    s.resnet.expansion = positive_int_field(json, "expansion", p, 16);
    s.resnet.head_channels = positive_int_field(json, "headChannels", p);
    s.resnet.policy_classes = positive_int_field(json, "policyClasses", p);
  } else {
    bad(p + ".family", "must be \"mlp\", \"cnn\" or \"bottleneck_resnet\"", &family);
  }
  return s;
}

}  // namespace tb
