// Binding of gdn::prefill_distributed (issue 10): the NCCL communicator comes in as a raw
// ncclComm_t handle (an integer: e.g. torch's ProcessGroupNCCL._comm_ptr() on recent PyTorch, or
// a handle from the caller's own NCCL set-up). The caller owns the communicator.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>

#include <tuple>

#include "bindings.h"
#include "fastinfer/gdn_distributed.h"
#include "prefill_args.h"
#include "tensor_conversion.h"

namespace nb = nanobind;

namespace fastinfer::python {

void register_dist_bindings(nb::module_& m) {
  m.def("built_with_nccl", [] { return dist::built_with_nccl(); });
  m.def(
      "nccl_communicator_info",
      [](std::uintptr_t nccl_comm) {
        const dist::Communicator c = dist::Communicator::from_nccl(reinterpret_cast<void*>(nccl_comm));
        return std::make_tuple(c.rank(), c.world_size(), c.device());
      },
      nb::arg("nccl_comm"));
  m.def(
      "gdn_prefill_distributed",
      [](nb::handle q, nb::handle k, nb::handle v, nb::handle cu_seqlens, nb::handle output, nb::handle alpha,
         nb::handle beta, float scale, bool use_qk_l2norm, nb::handle initial_state, nb::handle output_state,
         nb::handle state_indices, std::uintptr_t nccl_comm, std::int64_t max_slice_len, nb::handle stream) {
        ArrayArgs arrays;  // before the GIL release: destroyed with the GIL held
        gdn::PrefillArgs args = make_prefill_args(arrays, q, k, v, cu_seqlens, output, alpha, beta, scale,
                                                  use_qk_l2norm, initial_state, output_state, state_indices);
        // from_nccl queries NCCL (a few calls); cheap next to a long-sequence prefill.
        const dist::Communicator comm = dist::Communicator::from_nccl(reinterpret_cast<void*>(nccl_comm));
        const Stream s = resolve_stream(stream, q, args.q);
        nb::gil_scoped_release release;
        gdn::prefill_distributed(args, comm, {.max_slice_len = max_slice_len}, s);
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("cu_seqlens"), nb::arg("output"), nb::arg("alpha").none(),
      nb::arg("beta").none(), nb::arg("scale"), nb::arg("use_qk_l2norm"), nb::arg("initial_state").none(),
      nb::arg("output_state").none(), nb::arg("state_indices").none(), nb::arg("nccl_comm"), nb::arg("max_slice_len"),
      nb::arg("stream").none());
}

}  // namespace fastinfer::python
