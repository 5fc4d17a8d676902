#pragma once
// The whole public C++ API.
#include "fastinfer/context.h"
#include "fastinfer/device.h"
#include "fastinfer/dtype.h"
#include "fastinfer/error.h"
#include "fastinfer/gdn.h"
#include "fastinfer/gdn_distributed.h"
#include "fastinfer/gemm.h"
#include "fastinfer/nvfp4.h"
#include "fastinfer/tensor.h"
#include "fastinfer/version.h"
#include "fastinfer/workspace.h"
