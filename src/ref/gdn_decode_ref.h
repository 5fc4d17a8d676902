#pragma once
// CPU reference of gdn::decode (the GPU oracle and the CPU path): the fp64 recurrence
//   H = alpha H (I - beta k k^T) + beta v k^T,  o = scale H q
// per sequence, state head and token, with the gating and q/k normalisation of
// include/fastinfer/gdn_decode.h. Arguments must already be validated (and, for the CPU path, the
// slots checked); strides of every view are honoured. Results are rounded once, on store.
#include "fastinfer/gdn_decode.h"

namespace fastinfer::ref {

void gdn_decode(const gdn::DecodeArgs& args);

}  // namespace fastinfer::ref
