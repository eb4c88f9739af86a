// Out-of-core launches (src/api/out_of_core.hpp): partitions that do not fit their device cut
// into chunks, and the rounds that run them.

#include "api/out_of_core.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "api/kernel_pitch_rewrite.hpp"
#include "common/check.hpp"

namespace unimem {

// Step 3c (out-of-core launches, issue 10; BBMM 001_9219257c3045faa0.txt runs a GPU's tiles
// within its memory): a partition whose allocations (RuntimeCore::footprint: one box per buffer,
// rebased) do not fit its device even with everything else evicted is cut into chunks, blocks
// of its work-groups along the split dimension, that run one after another on that device: each
// chunk's boxes replace the earlier chunks' boxes they overlap or touch (LaunchPartition::
// out_of_core: boxed out, not merged) and evict older ones. Chunks are as large as half the
// device's limit allows when a work-group fits in it, so the next chunk's boxes can be allocated
// and filled while the current chunk's kernel runs (launch_rounds). Correct because work-groups
// of one OpenCL launch have no order among them and no synchronisation across them: running the
// work-groups of a partition in a few launches one after another is one of the orders the kernel
// already allows (a kernel reading bytes another work-group writes races in OpenCL itself). Kernels
// whose work-item functions depend on the launch's size (get_num_groups, get_global_size,
// get_global_offset) cannot be cut; one work- group that alone does not fit is an error naming the
// kernel, its buffers and the bytes. Unless: when even one block of work-groups along the split
// dimension does not fit and the NDRange has a second dimension, the partition is cut into tiles
// along both (2-D chunks: the same argument, work-groups in a few launches); a tile's bytes of a
// buffer that are rows at a constant pitch (a tile of B's columns) get a packed 2-D box and the
// tile runs the pitched rewrite of its kernel (api/kernel_pitch_rewrite.hpp, built once per
// distinct pitches and widths: the tile count along the second dimension divides its groups,
// so all tiles share one build).
void cut_to_fit(RuntimeCore& core, ProgramBuilds& builds, LaunchPlan& plan,
                const PlanRequest& request, std::span<const LaunchArg> launch_args, bool group_ids,
                const ProgramBuilds::SizeVariant* sizes) {
  const std::string& kernel = request.kernel;
  std::string rebased_prefix;  // the variant prefix of the rebased (and pitched) builds in use
  const auto with_rebased = [&](LaunchPartition& p, bool whole_launch_group_ids) {
    if (core.device(p.device).rebases_arguments()) return;
    rebased_prefix = sizes != nullptr         ? sizes->prefix
                     : whole_launch_group_ids ? std::string(ProgramBuilds::kWholeLaunchGroupIds)
                                              : std::string();
    p.rebased_kernel = builds.rebased_kernel_for(kernel, p.device, rebased_prefix);
    if (!p.rebased_kernel) return;
    p.rebased_pointers = builds.rebased_pointers(kernel);
  };
  const auto boxes_text = [](const PartitionFootprint& f) {
    std::string text;
    for (const PartitionFootprint::Box& b : f.boxes) {
      text += text.empty() ? "" : ", ";
      text += "argument " + std::to_string(b.arg) + " (" + b.buffer + "): ";
      text += std::to_string(b.bytes) + " bytes";
      if (b.pitch != 0) {
        text += " packed (rows of " + std::to_string(b.width) + " at pitch " +
                std::to_string(b.pitch) + ")";
      }
    }
    return text;
  };
  const std::uint32_t dim = split_dimension(request.range, request.dimension);
  const std::uint64_t unit = request.range.local[dim] == 0 ? 1 : request.range.local[dim];
  // The second dimension of 2-D chunks: of the others, the one with the most work-groups.
  std::optional<std::uint32_t> dim2;
  for (std::uint32_t d = 0; d < request.range.dims; ++d) {
    if (d == dim) continue;
    const auto groups_of = [&](std::uint32_t x) {
      return request.range.global[x] / (request.range.local[x] == 0 ? 1 : request.range.local[x]);
    };
    if (!dim2 || groups_of(d) > groups_of(*dim2)) dim2 = d;
  }
  std::vector<LaunchPartition> out;
  std::size_t chunks = 0;
  for (LaunchPartition& p : plan.partitions) {
    if (core.whole_buffers_fit(launch_args, p.device)) {
      out.push_back(std::move(p));
      continue;
    }
    PartitionFootprint need = core.footprint(launch_args, p);
    if (need.fits()) {
      out.push_back(std::move(p));
      continue;
    }
    LaunchPartition whole = p;  // rebased, it may fit after all (its boxes start past byte 0)
    if (!whole.rebased_kernel) with_rebased(whole, group_ids);
    need = core.footprint(launch_args, whole);
    if (need.fits()) {
      out.push_back(std::move(whole));
      continue;
    }
    const std::string where =
        "launch of kernel '" + kernel + "' on device " + std::to_string(p.device) +
        ": its partition needs " + std::to_string(need.total) + " bytes there at once (" +
        boxes_text(need) + "), the device's limit is " + std::to_string(need.limit) + " bytes";
    // A whole-launch-size build (size_variant) gives every work-item function the whole
    // launch's value in any sub-range, so its chunks need nothing more.
    if (sizes == nullptr && !builds.offset_dependent_call().empty()) {
      throw OutOfDeviceMemory(where + ", and it cannot run in chunks: the program calls " +
                              builds.offset_dependent_call() +
                              ", whose value in a chunk would differ from the whole launch's");
    }
    if (sizes == nullptr && builds.calls_group_id() && !group_ids) {
      if (!builds.group_variant_fits(request.range) || builds.group_variant() == nullptr) {
        throw OutOfDeviceMemory(where +
                                ", and it cannot run in chunks: the program calls get_group_id "
                                "and has no build counting group ids over the whole launch" +
                                (builds.group_variant_error().empty()
                                     ? std::string()
                                     : " (" + builds.group_variant_error() + ")"));
      }
      whole.kernel = builds.kernel_for(kernel, p.device, true);
      with_rebased(whole, true);
    }
    const std::uint64_t groups = p.group_end - p.group_begin;
    // The chunk of work-groups [g0, g1) along dim and, for a 2-D chunk, [t0, t1) along dim2.
    const auto make_chunk = [&](std::uint64_t g0, std::uint64_t g1, std::uint64_t t0,
                                std::uint64_t t1, bool tiled) {
      RangePartition slice;
      slice.device = p.device;
      slice.range = p.range;
      slice.range.offset[dim] = request.range.offset[dim] + g0 * unit;
      slice.range.global[dim] = (g1 - g0) * unit;
      if (tiled) {
        const std::uint64_t unit2 = p.range.local[*dim2] == 0 ? 1 : p.range.local[*dim2];
        slice.range.offset[*dim2] = p.range.offset[*dim2] + t0 * unit2;
        slice.range.global[*dim2] = (t1 - t0) * unit2;
      }
      slice.group_begin = g0;
      slice.group_end = g1;
      LaunchPartition chunk = derive_partition(request, slice);
      chunk.kernel = whole.kernel;
      chunk.rebased_kernel = whole.rebased_kernel;
      chunk.rebased_pointers = whole.rebased_pointers;
      chunk.out_of_core = true;
      if (tiled && !core.device(p.device).rebases_arguments() && whole.rebased_kernel) {
        chunk.pitched_parameters = builds.pitched_parameters(kernel);
      }
      return chunk;
    };
    std::vector<LaunchPartition> cut;
    std::string single_group_error;
    // Half the limit first (room to overlap), then the whole limit.
    for (const std::uint64_t budget : {need.limit / 2, need.limit}) {
      std::uint64_t n = std::min<std::uint64_t>(
          groups,
          std::max<std::uint64_t>(2, budget == 0 ? groups : (need.total + budget - 1) / budget));
      bool single_group_too_large = false;
      while (cut.empty() && !single_group_too_large) {
        for (std::uint64_t c = 0; c < n; ++c) {
          const std::uint64_t g0 = p.group_begin + groups * c / n;
          const std::uint64_t g1 = p.group_begin + groups * (c + 1) / n;
          if (g1 == g0) continue;
          LaunchPartition chunk = make_chunk(g0, g1, 0, 0, false);
          const PartitionFootprint f = core.footprint(launch_args, chunk);
          if (f.total > budget || !f.fits()) {
            if (g1 - g0 > 1) {
              cut.clear();
              break;
            }
            single_group_too_large = true;
            if (budget < need.limit) break;
            std::string msg = "launch of kernel '" + kernel + "' on device " +
                              std::to_string(p.device) + ": one work-group (group " +
                              std::to_string(g0) + " along dimension " + std::to_string(dim) +
                              ") needs " + std::to_string(f.total) + " bytes there at once (" +
                              boxes_text(f) + "), more than the device's capacity of " +
                              std::to_string(f.limit) + " bytes";
            if (f.total <= f.limit) {
              msg += " in one allocation of at most " + std::to_string(f.max_allocation) + " bytes";
            }
            single_group_error = msg +
                                 "; a work-group cannot be cut into chunks (a buffer's box is "
                                 "the bounding interval of the bytes the work-group touches, or "
                                 "a packed 2-D box when its bytes are rows at a constant pitch)";
            break;
          }
          cut.push_back(std::move(chunk));
        }
        if (single_group_too_large) cut.clear();
        if (cut.empty() && !single_group_too_large) {
          if (n == groups) break;
          // A few more chunks, not twice as many: chunks as large as the budget allows (every
          // chunk costs a launch and its copies' latency).
          n = std::min(groups, n + std::max<std::uint64_t>(1, n / 8));
        }
      }
      if (!cut.empty() || !single_group_error.empty()) break;
    }
    // 2-D chunks: a block of work-groups along dim still too large (each reads a whole matrix's
    // columns, say) is cut along dim2 too, into tiles whose boxes of column tiles are packed.
    if (cut.empty() && dim2) {
      const std::uint64_t unit2 = p.range.local[*dim2] == 0 ? 1 : p.range.local[*dim2];
      const std::uint64_t groups2 = p.range.global[*dim2] / unit2;
      const auto tile_fits = [&](std::uint64_t n1, std::uint64_t b, std::uint64_t n2,
                                 std::uint64_t t, std::uint64_t budget) {
        const std::uint64_t g0 = p.group_begin + groups * b / n1;
        const std::uint64_t g1 = p.group_begin + groups * (b + 1) / n1;
        const std::uint64_t t0 = groups2 * t / n2;
        const std::uint64_t t1 = groups2 * (t + 1) / n2;
        if (g1 == g0 || t1 == t0) return true;
        const PartitionFootprint f = core.footprint(launch_args, make_chunk(g0, g1, t0, t1, true));
        return f.total <= budget && f.fits();
      };
      // Tile counts along dim2: its divisors first (equal tiles share one pitched build).
      std::vector<std::uint64_t> counts2;
      for (std::uint64_t k = 2; k <= groups2; ++k) {
        if (groups2 % k == 0) counts2.push_back(k);
      }
      for (const std::uint64_t budget : {need.limit / 2, need.limit}) {
        std::uint64_t best1 = 0;
        std::uint64_t best2 = 0;
        for (const std::uint64_t n2 : counts2) {
          if (best1 != 0 && n2 >= best1 * best2) break;  // more tiles only add chunks now
          // The fewest blocks along dim whose first tile fits (fitting grows with the count).
          std::uint64_t lo = 1;
          std::uint64_t hi = groups;
          if (!tile_fits(hi, 0, n2, 0, budget)) continue;
          while (lo < hi) {
            const std::uint64_t mid = (lo + hi) / 2;
            if (tile_fits(mid, 0, n2, 0, budget)) {
              hi = mid;
            } else {
              lo = mid + 1;
            }
          }
          if (best1 == 0 || lo * n2 < best1 * best2) {
            best1 = lo;
            best2 = n2;
          }
        }
        if (best1 == 0) continue;
        // Every tile must fit; the first one decided the counts, so others may need more blocks.
        for (std::uint64_t n1 = best1; cut.empty() && n1 <= groups;
             n1 = n1 == groups ? groups + 1
                               : std::min(groups, n1 + std::max<std::uint64_t>(1, n1 / 8))) {
          bool all = true;
          for (std::uint64_t b = 0; b < n1 && all; ++b) {
            for (std::uint64_t t = 0; t < best2 && all; ++t)
              all = tile_fits(n1, b, best2, t, budget);
          }
          if (!all) continue;
          const auto chunk_at = [&](std::uint64_t b, std::uint64_t t) {
            return make_chunk(p.group_begin + groups * b / n1,
                              p.group_begin + groups * (b + 1) / n1, groups2 * t / best2,
                              groups2 * (t + 1) / best2, true);
          };
          // Consecutive chunks of a device keep the boxes whose bytes they share (a box that
          // holds exactly a chunk's bytes is found again): walk tiles inside blocks when the
          // next tile keeps more bytes than the next block would (matmul: a block's rows of A
          // against a tile's columns of B), else blocks inside tiles.
          const auto kept = [&](const LaunchPartition& x, const LaunchPartition& y) {
            std::uint64_t bytes = 0;
            for (const PartitionFootprint::Box& box : core.footprint(launch_args, y).boxes) {
              const auto in_x = x.accesses.find(box.arg);
              const auto in_y = y.accesses.find(box.arg);
              if (in_x != x.accesses.end() && in_y != y.accesses.end() &&
                  in_x->second == in_y->second) {
                bytes += box.bytes;
              }
            }
            return bytes;
          };
          bool tiles_inside = true;
          if (n1 > 1 && best2 > 1) {
            const LaunchPartition first = chunk_at(0, 0);
            tiles_inside = kept(first, chunk_at(0, 1)) >= kept(first, chunk_at(1, 0));
          }
          const std::uint64_t outer = tiles_inside ? n1 : best2;
          const std::uint64_t inner = tiles_inside ? best2 : n1;
          for (std::uint64_t o = 0; o < outer; ++o) {
            for (std::uint64_t i = 0; i < inner; ++i) {
              const std::uint64_t b = tiles_inside ? o : i;
              const std::uint64_t t = tiles_inside ? i : o;
              if (groups * (b + 1) / n1 == groups * b / n1) continue;
              if (groups2 * (t + 1) / best2 == groups2 * t / best2) continue;
              cut.push_back(chunk_at(b, t));
            }
          }
        }
        if (!cut.empty()) break;
      }
      // Each tile with packed boxes runs the pitched kernel built for their pitches and widths.
      for (LaunchPartition& chunk : cut) {
        if (!chunk.pitched_parameters) continue;
        const PartitionFootprint f = core.footprint(launch_args, chunk);
        auto shapes = std::make_shared<std::vector<std::pair<std::uint64_t, std::uint64_t>>>(
            launch_args.size());
        std::string macros;
        for (const PartitionFootprint::Box& b : f.boxes) {
          if (b.pitch == 0) continue;
          for (const std::uint32_t i : b.args) {
            const std::uint32_t element = (*chunk.pitched_parameters)[i];
            (*shapes)[i] = {b.pitch, b.width};
            macros += pitch_macros(kernel, i, b.pitch / element, b.width / element);
          }
        }
        if (macros.empty()) {
          chunk.pitched_parameters = nullptr;
          continue;
        }
        chunk.pitched_kernel =
            builds.pitched_kernel_for(kernel, chunk.device, rebased_prefix, macros);
        if (!chunk.pitched_kernel) {
          throw OutOfDeviceMemory(where +
                                  ", and its chunks need packed 2-D boxes, whose build failed "
                                  "(the program's log says why)");
        }
        chunk.pitched_shapes = std::move(shapes);
      }
    }
    if (cut.empty() && !single_group_error.empty()) {
      throw OutOfDeviceMemory(
          single_group_error +
          (dim2 ? "; nor do 2-D chunks (tiles along dimension " + std::to_string(*dim2) + ") fit"
                : std::string()));
    }
    if (cut.empty()) {
      detail::throw_invariant("cut_to_fit: no chunks found and no error raised", __FILE__,
                              __LINE__);
    }
    // Rounds alternate between the two halves of the partition (chunks 0, h, 1, h + 1, ...):
    // chunks that meet (a stencil's halo rows, a written box touching the next) run two rounds
    // apart, so the box a chunk replaces (Residency::Placement::replace) belongs to a kernel
    // issued a round before the last one, and the next chunk's copies overlap the last kernel.
    const std::size_t half = (cut.size() + 1) / 2;
    for (std::size_t c = 0; c < cut.size(); ++c) {
      cut[c].chunk = static_cast<std::uint32_t>(c < half ? 2 * c : 2 * (c - half) + 1);
    }
    chunks += cut.size();
    for (LaunchPartition& c : cut) out.push_back(std::move(c));
  }
  // Each round's partitions side by side (launch_rounds passes them as one span).
  std::stable_sort(out.begin(), out.end(), [](const LaunchPartition& a, const LaunchPartition& b) {
    return a.chunk < b.chunk;
  });
  plan.partitions = std::move(out);
  plan.chunks = chunks;
}

// The rounds of a plan with chunks (cut_to_fit, which puts each round's partitions side by
// side): round r launches every partition whose chunk is r (at most one per device), rounds in
// order; events receives every partition's kernel event. Round r + 1's boxes are allocated and
// filled while round r's kernels run: cut_to_fit sizes chunks for half the device and orders
// them so a round never replaces the boxes of the round just before it, each chunk's written
// bytes go home right after its kernel (RuntimeCore::write_back_chunks), and a box-out waits only
// for the operations on its own allocation, so the host waits for round r - 1 at most.
Event launch_rounds(RuntimeCore& core, const LaunchPlan& plan,
                    std::span<const LaunchArg> launch_args, std::vector<Event>* events) {
  const std::span<const LaunchPartition> all_partitions(plan.partitions);
  EventList all;
  for (std::size_t begin = 0; begin < all_partitions.size();) {
    std::size_t end = begin + 1;
    while (end < all_partitions.size() &&
           all_partitions[end].chunk == all_partitions[begin].chunk) {
      ++end;
    }
    const std::span<const LaunchPartition> round = all_partitions.subspan(begin, end - begin);
    all.push_back(core.launch_partitioned(launch_args, round, events));
    begin = end;
  }
  return when_all(all);
}

}  // namespace unimem
