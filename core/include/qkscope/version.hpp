// qkscope/version.hpp — library version (semantic versioning).
#pragma once

namespace qkscope {
inline constexpr const char* version = "0.1.0";
}
