#pragma once
// Validation of gdn::decode arguments. Every failure throws fastinfer::Error naming "gdn::decode"
// and the argument; nothing has been written when it throws.
#include "fastinfer/gdn_decode.h"

namespace fastinfer::gdn {

inline constexpr const char* kDecodeOp = "gdn::decode";

// Shapes, dtypes, strides, alignment and the scale (no device access, no data read).
void validate_decode_args(const DecodeArgs& args);

// The slot indices of a call whose tensors are on the CPU: in [-1, P), written slots distinct,
// no slot written by one sequence and read by another.
void validate_decode_slots_on_host(const DecodeArgs& args);

}  // namespace fastinfer::gdn
