#include "data/open_source.h"

#include "core/errors.h"
#include "data/cache_source.h"
#include "data/raw_source.h"

namespace tb {

std::shared_ptr<RecordSource> open_source(const Json& spec) {
  const Json* kind = spec.find("kind");
  if (kind && kind->is_string() && kind->string() == "cache") {
    const Json* dir = spec.find("dir");
    if (!dir || !dir->is_string()) TB_THROW(ErrorCode::BadInput, "a cache source needs \"dir\"");
    return std::make_shared<CacheSource>(dir->string());
  }
  if (kind && kind->is_string() && kind->string() == "raw") {
    const Json* layout = spec.find("layout");
    if (!layout) TB_THROW(ErrorCode::BadInput, "a raw source needs \"layout\"");
    return std::make_shared<RawSource>(*layout);
  }
  TB_THROW(ErrorCode::BadInput, "source kind must be \"cache\" or \"raw\", got " + (kind ? kind->dump() : std::string("nothing")));
}

}  // namespace tb
