#pragma once
// Scratch memory for ops, from a pool keyed by (device, stream, name). See docs/DESIGN.md.
//
// - Grow-only and stream-ordered: a block is only ever used by work on its own stream, so two
//   streams never share scratch and concurrent calls cannot alias.
// - Growing while the stream is capturing a CUDA graph is an error; run the op once before
//   capture (warm-up) or call reserve_workspace() with the size you will need.
// - Contents are undefined on entry; nothing an op returns points into a workspace.
// - Calls on one stream must not be issued from two host threads at the same time (the same rule
//   CUDA streams already impose on ordered work).
#include <cstddef>
#include <string_view>

#include "fastinfer/context.h"

namespace fastinfer {

// Makes sure the block `name` for (device, stream) holds at least `bytes` bytes.
void reserve_workspace(int device, Stream stream, std::string_view name, std::size_t bytes);

// Frees every workspace block of the process (stream-ordered). Safe to call at any time when no
// op is running; called automatically at exit.
void release_all_workspaces();

}  // namespace fastinfer
