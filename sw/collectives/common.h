// What every collective algorithm family shares (sw/collectives/torus.h,
// sw/collectives/ndim.h): splitting spans, executing plans on host buffers in
// the model's order, closed-form results, nccl-tests bus factors. SystemC-free.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/npu/collective.h"

namespace fabricvp::collectives {

using npu::CollectiveKind;
using npu::Span;

/// Part i of k of `s`, split on multiples of `align` elements of the
/// concatenation (balanced: the first parts get one align unit more).
Span split(const Span& s, uint32_t k, uint32_t i, uint32_t align);
/// split(s, k, i, align).elems() for a span of `total` elements, without the span.
uint64_t split_elems(uint64_t total, uint32_t k, uint32_t i, uint32_t align);

/// Execute the plans of every member (plans[rank]; rank_of maps an NPU id to
/// its rank) on host buffers (bufs[rank]: the member's whole buffer), phase by
/// phase and step by step as the model does, with core::add for every
/// reduction. Afterwards bufs[rank] holds what the member must end with.
void run_plans(const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
               const std::function<uint32_t(uint32_t)>& rank_of, std::vector<std::vector<uint8_t>>& bufs);
/// Where check_collective reads a collective's data: callbacks by rank and
/// element (a rank's inputs are the same stream whatever slice is asked for).
struct CheckIo {
  /// Rank r's input elements [elem, elem + n) into dst.
  std::function<void(uint32_t r, uint64_t elem, uint64_t n, uint8_t* dst)> input;
  /// Rank r's result elements [elem, elem + n) (what the model left) into dst.
  std::function<void(uint32_t r, uint64_t elem, uint64_t n, uint8_t* dst)> result;
  /// Element `elem` of rank r is wrong: the expected and the actual bytes.
  std::function<void(uint32_t r, uint64_t elem, const uint8_t* want, const uint8_t* got)> mismatch;
};
/// Compare every member's result (output_elements) with the host reference
/// and return the number of wrong elements: reductions replayed in the
/// plans' order of additions (as run_plans does) one chunk of every member
/// at a time, the other kinds in closed form a slice at a time, so the host
/// holds one chunk per member, not every member's whole buffer.
uint64_t check_collective(const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                          const std::function<uint32_t(uint32_t)>& rank_of, uint32_t root, const CheckIo& io);

/// The result every member must hold, in closed form from the inputs
/// (allgather, alltoall, broadcast; elements outside a member's output keep
/// their input). Returns false for the reductions, whose bits depend on the
/// order of additions (use run_reference()).
bool expected(CollectiveKind kind, uint32_t root, std::vector<std::vector<uint8_t>>& buffers);

/// Elements of the buffer that rank `rank` must hold at the end (the rest is
/// left as it was or is scratch): all for allreduce, allgather, alltoall and
/// broadcast, block `rank` for reducescatter.
Span output_elements(CollectiveKind kind, uint64_t elems, uint32_t members, uint32_t rank);

/// nccl-tests bus factor of a collective over n members.
double bus_factor(CollectiveKind kind, uint32_t n);

}  // namespace fabricvp::collectives
