#pragma once
// Gated DeltaNet: chunked prefill (with the context-parallel pipeline) and decode / MTP verify.
#include "fastinfer/gdn_decode.h"
#include "fastinfer/gdn_prefill.h"
