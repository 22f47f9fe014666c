#include "train/checkpoint.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <random>
#include <vector>

#include "core/errors.h"
#include "core/file_path.h"

namespace tb {
namespace {

const float* entry_data(const Model& m, const ParamEntry& e) {
  return (e.is_buffer() ? const_cast<Model&>(m).buffers().data() : m.params().data()) + e.offset;
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

}  // namespace

void save_checkpoint(const Model& model, const std::string& path, const Json& metadata) {
  Json header = Json::object();
  Json meta = Json::object();
  meta.set("format", "pt");
  for (const auto& kv : metadata.members()) meta.set(kv.first, kv.second.is_string() ? kv.second : Json(kv.second.dump()));
  header.set("__metadata__", meta);
  std::int64_t offset = 0;
  for (const ParamEntry& e : model.entries()) {
    Json t = Json::object();
    t.set("dtype", "F32");
    Json shape = Json::array();
    for (auto d : e.shape) shape.push(Json(d));
    t.set("shape", shape);
    t.set("data_offsets", Json::array({Json(offset), Json(offset + 4 * e.size())}));
    header.set(e.name, t);
    offset += 4 * e.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // keeps the data 8-byte aligned

  // A fresh temp name nobody can plant a link at in advance, created new and written through its own handle
  // (core/file_path.h), then renamed over the checkpoint: a link in the run's folder cannot send it elsewhere.
  std::random_device entropy;
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%08x%08x", entropy(), entropy());
  const std::string tmp = path + "." + suffix + ".tmp";
  try {
    NewFile out(tmp);
    std::uint8_t len[8];
    std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(n >> (8 * i));
    out.write(len, 8);
    out.write(text.data(), text.size());
    // Little-endian float32 on every platform we build for.
    for (const ParamEntry& e : model.entries()) out.write(entry_data(model, e), 4 * static_cast<size_t>(e.size()));
    out.close();
  } catch (const Error&) {
    std::error_code ignored;
    std::filesystem::remove(fs_path(tmp), ignored);
    throw;
  }
  try {
    replace_file(tmp, path);
  } catch (const Error&) {
    std::error_code ignored;
    std::filesystem::remove(fs_path(tmp), ignored);
    throw;
  }
}

Json load_checkpoint(Model& model, const std::string& path) {
  std::ifstream in(fs_path(path), std::ios::binary | std::ios::ate);
  if (!in) TB_THROW(ErrorCode::BadInput, "cannot open checkpoint " + path);
  const std::int64_t size = static_cast<std::int64_t>(in.tellg());
  in.seekg(0);
  if (size < 8) TB_THROW(ErrorCode::Data, "checkpoint " + path + " is truncated: " + std::to_string(size) + " bytes");
  std::uint8_t len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(len[i]) << (8 * i);
  if (n > static_cast<std::uint64_t>(size - 8) || n > (100u << 20)) {
    TB_THROW(ErrorCode::Data, "checkpoint " + path + " has a header length of " + std::to_string(n) +
                                  " bytes, more than the file holds (" + std::to_string(size) + " bytes)");
  }
  std::string text(static_cast<size_t>(n), '\0');
  in.read(&text[0], static_cast<std::streamsize>(n));
  Json header;
  try {
    header = Json::parse(text);
  } catch (const Error& e) {
    TB_THROW(ErrorCode::Data, "checkpoint " + path + " has a bad header: " + e.what());
  }
  const std::int64_t data_start = 8 + static_cast<std::int64_t>(n), data_size = size - data_start;
  for (const ParamEntry& e : model.entries()) {
    const Json* t = header.find(e.name);
    if (!t) TB_THROW(ErrorCode::Data, "checkpoint " + path + " has no tensor '" + e.name + "' (a different model?)");
    const Json* dtype = t->find("dtype");
    const Json* shape = t->find("shape");
    const Json* offs = t->find("data_offsets");
    if (!dtype || !dtype->is_string() || dtype->string() != "F32")
      TB_THROW(ErrorCode::Data, "checkpoint tensor '" + e.name + "' is not F32");
    std::vector<std::int64_t> got;
    if (shape && shape->is_array())
      for (const auto& d : shape->items()) got.push_back(static_cast<std::int64_t>(d.number()));
    if (got != e.shape) {
      TB_THROW(ErrorCode::Data, "checkpoint tensor '" + e.name + "' has shape " + shape_text(got) + " but the model needs " +
                                    shape_text(e.shape));
    }
    if (!offs || !offs->is_array() || offs->items().size() != 2)
      TB_THROW(ErrorCode::Data, "checkpoint tensor '" + e.name + "' has no data_offsets");
    const std::int64_t b = static_cast<std::int64_t>(offs->items()[0].number());
    const std::int64_t end = static_cast<std::int64_t>(offs->items()[1].number());
    if (b < 0 || end - b != 4 * e.size() || end > data_size) {
      TB_THROW(ErrorCode::Data, "checkpoint " + path + " is truncated or corrupt: tensor '" + e.name + "' needs bytes " +
                                    std::to_string(b) + ".." + std::to_string(end) + " of a " + std::to_string(data_size) +
                                    "-byte data section");
    }
    float* dst = (e.is_buffer() ? model.buffers().data() : model.params().data()) + e.offset;
    in.seekg(data_start + b);
    in.read(reinterpret_cast<char*>(dst), 4 * e.size());
    if (!in) TB_THROW(ErrorCode::Data, "checkpoint " + path + ": reading tensor '" + e.name + "' failed");
  }
  const Json* meta = header.find("__metadata__");
  return meta ? *meta : Json::object();
}

}  // namespace tb
