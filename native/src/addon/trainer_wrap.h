// JS class `Trainer`: one model with its data, trained off the JS thread.
#pragma once
#include <napi.h>

#include <atomic>
#include <memory>

#include "train/trainer.h"

namespace tb::addon {

class TrainerWrap : public Napi::ObjectWrap<TrainerWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit TrainerWrap(const Napi::CallbackInfo& info);

  /** The trainer; throws (E_BAD_INPUT) once release() has freed it. */
  Trainer& trainer();
  std::atomic<bool>& cancel_flag() { return cancel_; }
  std::atomic<bool>& busy() { return busy_; }

 private:
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value SetData(const Napi::CallbackInfo& info);
  Napi::Value SetSource(const Napi::CallbackInfo& info);
  Napi::Value Train(const Napi::CallbackInfo& info);
  Napi::Value Evaluate(const Napi::CallbackInfo& info);
  Napi::Value Cancel(const Napi::CallbackInfo& info);
  Napi::Value Save(const Napi::CallbackInfo& info);
  Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value Params(const Napi::CallbackInfo& info);
  Napi::Value Release(const Napi::CallbackInfo& info);

  std::unique_ptr<Trainer> trainer_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> busy_{false};
};

// modelInfo(specJson) -> parameter count, FLOPs, layers and parameter table.
Napi::Value ModelInfo(const Napi::CallbackInfo& info);
Json model_info_json(const Model& model);
Json source_info_json(const RecordSource& source);

}  // namespace tb::addon
