// Opens a record source described as JSON: {"kind":"cache","dir":...} or
// {"kind":"raw","layout":{...}} (see raw_source.h).
#pragma once
#include <memory>

#include "core/json.h"
#include "data/record_source.h"

namespace tb {

std::shared_ptr<RecordSource> open_source(const Json& spec);

}  // namespace tb
