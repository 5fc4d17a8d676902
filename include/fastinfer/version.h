#pragma once
#define FASTINFER_VERSION_MAJOR 0
#define FASTINFER_VERSION_MINOR 1
#define FASTINFER_VERSION_PATCH 0

namespace fastinfer {
const char* version();  // "0.1.0"
}  // namespace fastinfer
