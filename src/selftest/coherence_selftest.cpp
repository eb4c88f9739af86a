#include "selftest/coherence_selftest.hpp"

#include <algorithm>
#include <deque>
#include <exception>
#include <memory>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/runtime_core.hpp"
#include "device/host/host_platform.hpp"
#include "device/sim/sim_device.hpp"
#include "selftest/flat_memory.hpp"
#include "selftest/random_program.hpp"

namespace unimem {

using selftest::FlatMemory;
using selftest::KernelEffect;
using selftest::ProgramGenerator;

namespace {

// A recurring launch of the program's main loop (so that adaptive histories repeat).
struct Template {
  std::string kernel;
  std::size_t device = 0;
  KernelEffect effect;
};

// A host-driver kernel that runs `effect` on its buffer arguments.
std::shared_ptr<HostKernel> make_kernel(const std::string& name,
                                        std::shared_ptr<const KernelEffect> effect) {
  return std::make_shared<HostKernel>(name, [effect](const HostKernelContext& ctx) {
    std::vector<const std::byte*> in;
    std::vector<std::byte*> out;
    for (std::size_t j = 0; j < effect->buffers.size(); ++j) {
      in.push_back(ctx.buffer<std::byte>(j));
      out.push_back(ctx.buffer<std::byte>(j));
    }
    effect->write(effect->digest(in), out);
  });
}

}  // namespace

std::string CoherenceSelftestResult::to_json(const CoherenceSelftestOptions& o) const {
  nlohmann::ordered_json j;
  j["ok"] = ok;
  j["seed"] = o.seed;
  j["ops"] = o.ops;
  j["devices"] = o.devices;
  j["buffers"] = o.buffers;
  j["strategy"] = std::string(to_string(o.strategy));
  j["peer_copies"] = o.peer_copies;
  j["direct_reads"] = o.direct_reads;
  j["sim_preset"] = o.sim_preset;
  j["mismatched_bytes"] = mismatched_bytes;
  j["bytes_copied"] = bytes_copied;
  j["minimum_bytes"] = minimum_bytes;
  j["copies"] = copies;
  j["replays"] = replays;
  j["mispredictions"] = mispredictions;
  j["prefetch_bytes"] = prefetch_bytes;
  j["prefetch_unread_bytes"] = prefetch_unread_bytes;
  j["launches"] = launches;
  j["partitioned_launches"] = partitioned_launches;
  j["cycle_launches"] = cycle_launches;
  j["repeated_launches"] = repeated_launches;
  j["deferred_record_launches"] = deferred_record_launches;
  j["periodic_replays"] = periodic_replays;
  j["host_reads"] = host_reads;
  j["host_writes"] = host_writes;
  j["direct_read_bytes"] = direct_read_bytes;
  j["home_read_bytes"] = home_read_bytes;
  j["device_memory"] = o.device_memory;
  j["evictions"] = evictions;
  j["evicted_bytes"] = evicted_bytes;
  j["eviction_writeback_bytes"] = eviction_writeback_bytes;
  j["reloaded_bytes"] = reloaded_bytes;
  j["relocated_bytes"] = relocated_bytes;
  j["reclaims"] = reclaims;
  j["peak_device_bytes"] = peak_device_bytes;
  j["error"] = error;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

CoherenceSelftestResult run_coherence_selftest(const CoherenceSelftestOptions& opt) {
  UNIMEM_REQUIRE(opt.devices >= 1 && opt.devices <= 16, "selftest: devices must be in 1..16");
  UNIMEM_REQUIRE(opt.buffers >= 1 && opt.buffers <= 64, "selftest: buffers must be in 1..64");
  UNIMEM_REQUIRE(opt.max_buffer_size >= 1, "selftest: max buffer size must be positive");
  if (opt.device_memory != 0 && opt.device_memory < 3 * opt.max_buffer_size) {
    throw PreconditionError("selftest: a device memory cap of " +
                            std::to_string(opt.device_memory) +
                            " bytes cannot hold the 3 buffers a kernel may use (up to " +
                            std::to_string(opt.max_buffer_size) + " bytes each): use at least " +
                            std::to_string(3 * opt.max_buffer_size));
  }
  CoherenceSelftestResult result;
  ProgramGenerator gen(opt.seed);

  std::vector<std::uint64_t> sizes;
  for (std::size_t b = 0; b < opt.buffers; ++b) sizes.push_back(1 + gen.below(opt.max_buffer_size));
  // On simulated devices (opt.sim_preset) the model decides which devices copy peer to peer.
  // With mixed paths (k80: peers only within a socket) the oracle's byte minimum does not
  // apply; the bytes themselves are still compared.
  bool peer = opt.peer_copies;
  bool byte_checks = true;
  if (!opt.sim_preset.empty()) {
    const sim::SimSystem probe(sim::find_preset(opt.sim_preset).device, opt.devices);
    bool all = true;
    bool any = false;
    for (std::size_t a = 0; a < opt.devices; ++a) {
      for (std::size_t b = 0; b < opt.devices; ++b) {
        if (a == b) continue;
        all = all && probe.peer_possible(a, b);
        any = any || probe.peer_possible(a, b);
      }
    }
    peer = peer && all;
    byte_checks = all || !any || !opt.peer_copies;
  }
  FlatMemory oracle(sizes, peer, opt.direct_reads);

  // Data handed to non-blocking calls must outlive them (and the runtime,
  // which waits for everything when destroyed): declared before it.
  std::deque<std::vector<std::byte>> write_data;
  struct PendingRead {
    std::vector<std::byte> got;
    std::vector<std::byte> expected;
    Event done;
  };
  std::deque<PendingRead> reads;

  HostDeviceOptions dev_opt;
  dev_opt.peer_copies = opt.peer_copies;
  RuntimeOptions rt_opt{opt.strategy};
  rt_opt.device_memory = opt.device_memory;
  rt_opt.direct_host_reads = opt.direct_reads;
  DeviceRegistry host_devices = make_host_devices(opt.devices, dev_opt);
  Runtime rt(opt.sim_preset.empty()
                 ? std::move(host_devices)
                 : sim::make_sim_devices(sim::find_preset(opt.sim_preset).device, opt.sim_preset,
                                         opt.devices, host_devices),
             rt_opt);
  std::vector<BufferId> ids;
  for (std::size_t b = 0; b < opt.buffers; ++b) {
    ids.push_back(rt.create_buffer(sizes[b], "b" + std::to_string(b)));
  }

  auto args_of = [&](const KernelEffect& effect) {
    std::vector<LaunchArg> args;
    for (std::size_t j = 0; j < effect.buffers.size(); ++j) {
      const AccessBytes& a = effect.access[j];
      args.push_back(LaunchArg::of_buffer(ids[effect.buffers[j]], a.reads, a.writes, a.may_writes));
    }
    return args;
  };
  bool out_of_core_ran = false;  // out-of-core partitions copy more than the minimum
  // A few recurring launches (a program's main loop) so that adaptive histories repeat.
  std::vector<Template> templates;
  const std::size_t template_count = 1 + gen.below(4);
  for (std::size_t t = 0; t < template_count; ++t) {
    templates.push_back(
        {"loop" + std::to_string(t), gen.below(opt.devices), gen.kernel_effect(sizes)});
  }

  // A launch split over `devs` (one partition each, partition p writing within slice p of each
  // buffer): built once, run by run_split, again and again when it repeats in a cycle.
  struct SplitLaunch {
    std::vector<std::size_t> devs;
    std::vector<std::size_t> arg_buffers;
    std::vector<std::shared_ptr<KernelEffect>> specs;
    std::vector<LaunchPartition> partitions;
    std::vector<LaunchArg> args;
  };
  auto make_split = [&](const std::vector<std::size_t>& devs) {
    auto launch = std::make_shared<SplitLaunch>();
    launch->devs = devs;
    const std::size_t parts = devs.size();
    std::vector<std::size_t>& arg_buffers = launch->arg_buffers;
    std::vector<std::shared_ptr<KernelEffect>>& specs = launch->specs;
    std::vector<LaunchPartition>& partitions = launch->partitions;
    // All partitions share the argument list; each gets its own sets and write slice.
    const KernelEffect base = gen.kernel_effect(sizes);
    // One launch in four also passes one of its buffers a second time, with access sets of
    // its own (floyd-warshall passes its matrix as the rows and as the pivot row): the
    // runtime unites a buffer's arguments, and out of core gives arguments whose bytes lie
    // apart boxes of their own (RuntimeCore::split_uses). The choice and the second
    // argument's sets come from a generator seeded by the base's salt, so the program's
    // random stream is the same either way.
    ProgramGenerator aside(base.salt);
    arg_buffers = base.buffers;
    if (aside.chance(25)) arg_buffers.push_back(base.buffers[aside.below(base.buffers.size())]);
    for (std::size_t p = 0; p < parts; ++p) {
      auto spec = std::make_shared<KernelEffect>();
      spec->salt = gen.next();
      spec->buffers = arg_buffers;
      for (std::size_t j = 0; j < base.buffers.size(); ++j) {
        const std::uint64_t n = sizes[arg_buffers[j]];
        spec->access.push_back(gen.access_in(n, n * p / parts, n * (p + 1) / parts));
      }
      if (arg_buffers.size() > base.buffers.size()) {
        // The second argument stays in the partition's slice, so that its bytes often lie
        // apart from the first's.
        const std::uint64_t n = sizes[arg_buffers.back()];
        const std::uint64_t lo = n * p / parts;
        const std::uint64_t hi = n * (p + 1) / parts;
        spec->access.push_back(
            hi == lo ? AccessBytes{}
                     : aside.access_in(hi - lo, 0, hi - lo).shifted(static_cast<std::int64_t>(lo)));
      }
      specs.push_back(spec);
      LaunchPartition lp;
      lp.device = devs[p];
      lp.kernel = make_kernel("split", spec);
      // Under a cap, half the partitions run as out-of-core chunks do: their boxes replace
      // the boxes they meet instead of merging, and their writes go home after the kernel
      // (more bytes than the minimum: not without a cap, where the bytes are checked). A bit
      // of the salt decides, so the program's random stream is the same either way.
      lp.out_of_core = opt.device_memory != 0 && ((spec->salt >> 7) & 1) != 0;
      out_of_core_ran = out_of_core_ran || lp.out_of_core;
      for (std::size_t j = 0; j < spec->buffers.size(); ++j) {
        lp.accesses[static_cast<std::uint32_t>(j)] = spec->access[j];
      }
      partitions.push_back(std::move(lp));
    }

    for (std::size_t b : arg_buffers) launch->args.push_back(LaunchArg::of_buffer(ids[b], {}, {}));
    return launch;
  };
  // Runs a split launch (the oracle first); a launch of a cycle passes itself as repeat token.
  auto run_split = [&](const std::shared_ptr<const SplitLaunch>& launch, bool cycle) {
    const std::vector<std::size_t>& devs = launch->devs;
    const std::size_t parts = devs.size();
    const std::vector<std::shared_ptr<KernelEffect>>& specs = launch->specs;
    // Oracle: every partition reads the state before the launch, then all writes land.
    std::vector<std::uint64_t> digests;
    for (std::size_t p = 0; p < parts; ++p) {
      const KernelEffect& e = *specs[p];
      for (std::size_t j = 0; j < e.buffers.size(); ++j) {
        oracle.device_read(e.buffers[j], agent_of_device(devs[p]), e.access[j].needed());
      }
      const std::vector<std::byte*> in = oracle.arguments(e);
      digests.push_back(e.digest({in.begin(), in.end()}));
    }
    for (std::size_t p = 0; p < parts; ++p) {
      const KernelEffect& e = *specs[p];
      e.write(digests[p], oracle.arguments(e));
      for (std::size_t j = 0; j < e.buffers.size(); ++j) {
        oracle.set_owner(e.buffers[j], e.access[j].written(), agent_of_device(devs[p]));
      }
    }
    (void)rt.core().launch_partitioned(launch->args, launch->partitions, nullptr,
                                       cycle ? launch : nullptr);
    ++result.launches;
  };
  // Cycles of launches passing repeat tokens (a ping-pong: the runtime's repeat path, its
  // directory skip and its deferred hazard records), at most three kept.
  std::vector<std::vector<std::shared_ptr<const SplitLaunch>>> cycles;

  try {
    for (std::size_t op = 0; op < opt.ops; ++op) {
      const std::uint64_t kind = gen.below(100);
      if (kind < 15) {  // host write
        const std::size_t b = gen.below(opt.buffers);
        const Interval r = gen.interval_in(0, sizes[b]);
        std::vector<std::byte> data(r.size());
        for (auto& x : data) x = static_cast<std::byte>(gen.next() & 0xFF);
        std::copy(data.begin(), data.end(), oracle.memory(b).begin() + static_cast<long>(r.begin));
        oracle.set_owner(b, IntervalSet(r), kHostAgent);
        write_data.push_back(std::move(data));
        if (gen.chance(20)) {
          rt.write_blocking(ids[b], r.begin, write_data.back());
        } else {
          (void)rt.write(ids[b], r.begin, write_data.back());
        }
        ++result.host_writes;
      } else if (kind < 30) {  // host read
        const std::size_t b = gen.below(opt.buffers);
        const Interval r = gen.interval_in(0, sizes[b]);
        oracle.host_read(b, r);
        PendingRead pr;
        pr.got.assign(r.size(), std::byte{0});
        pr.expected.assign(oracle.memory(b).begin() + static_cast<long>(r.begin),
                           oracle.memory(b).begin() + static_cast<long>(r.end));
        reads.push_back(std::move(pr));
        if (gen.chance(20)) {
          rt.read_blocking(ids[b], r.begin, reads.back().got);
        } else {
          reads.back().done = rt.read(ids[b], r.begin, reads.back().got);
        }
        ++result.host_reads;
      } else if (kind < 40 && opt.devices >= 2) {  // partitioned launch over several devices
        const std::size_t parts = 2 + gen.below(opt.devices - 1);
        std::vector<std::size_t> devs(opt.devices);
        for (std::size_t i = 0; i < devs.size(); ++i) devs[i] = i;
        std::shuffle(devs.begin(), devs.end(), std::mt19937_64(gen.next()));
        devs.resize(parts);
        run_split(make_split(devs), false);
        ++result.partitioned_launches;
      } else if (kind < 46) {  // a cycle of up to three launches, repeated 2 to 6 rounds
        if (cycles.empty() || gen.chance(30)) {
          // Its launches share their devices (one to three), so that a cycle whose launches
          // read only their own slices copies nothing after its first round.
          const std::size_t parts = 1 + gen.below(std::min<std::size_t>(opt.devices, 3));
          std::vector<std::size_t> devs(opt.devices);
          for (std::size_t i = 0; i < devs.size(); ++i) devs[i] = i;
          std::shuffle(devs.begin(), devs.end(), std::mt19937_64(gen.next()));
          devs.resize(parts);
          std::vector<std::shared_ptr<const SplitLaunch>> cycle;
          const std::size_t length = 1 + gen.below(3);
          for (std::size_t i = 0; i < length; ++i) cycle.push_back(make_split(devs));
          if (cycles.size() == 3) cycles.erase(cycles.begin());
          cycles.push_back(std::move(cycle));
        }
        const auto& cycle = cycles[gen.below(cycles.size())];
        const std::size_t rounds = 2 + gen.below(5);
        for (std::size_t r = 0; r < rounds; ++r) {
          for (const auto& launch : cycle) {
            run_split(launch, true);
            ++result.cycle_launches;
          }
        }
      } else {  // single-device launch: a recurring one or a fresh random one
        std::string name;
        std::size_t device;
        auto spec = std::make_shared<KernelEffect>();
        if (gen.chance(60)) {
          const Template& t = templates[gen.below(templates.size())];
          name = t.kernel;
          device = t.device;
          *spec = t.effect;
          spec->salt = gen.next();
        } else {
          name = "k" + std::to_string(gen.below(3));
          device = gen.below(opt.devices);
          *spec = gen.kernel_effect(sizes);
        }
        oracle.run(*spec, agent_of_device(device));
        Launch l;
        l.device = device;
        l.kernel = make_kernel(name, spec);
        l.args = args_of(*spec);
        l.args.push_back(LaunchArg::of_scalar(spec->salt));  // exercises scalar arguments too
        (void)rt.core().launch(l);
        ++result.launches;
      }
    }
    rt.finish();
    for (PendingRead& pr : reads) {
      pr.done.wait();
      for (std::size_t i = 0; i < pr.got.size(); ++i) {
        if (pr.got[i] != pr.expected[i]) ++result.mismatched_bytes;
      }
    }
    // Final contents, read back through the runtime (these reads count as copies too).
    for (std::size_t b = 0; b < opt.buffers; ++b) {
      oracle.host_read(b, Interval{0, sizes[b]});
      std::vector<std::byte> got(sizes[b]);
      rt.read_blocking(ids[b], 0, got);
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i] != oracle.memory(b)[i]) ++result.mismatched_bytes;
      }
    }
    const TransferStats s = rt.stats();
    result.bytes_copied = s.total_bytes();
    result.copies = s.total_copies();
    result.replays = s.replays;
    result.mispredictions = s.mispredictions;
    result.prefetch_bytes = s.prefetch_bytes;
    result.prefetch_unread_bytes = s.prefetch_unread_bytes;
    result.evicted_bytes = s.evicted_bytes;
    result.eviction_writeback_bytes = s.eviction_writeback_bytes;
    result.reloaded_bytes = s.reloaded_bytes;
    result.direct_read_bytes = s.direct_read_bytes;
    result.home_read_bytes = s.home_read_bytes;
    result.relocated_bytes = s.relocated_bytes;
    result.repeated_launches = rt.core().repeated_launches();
    result.deferred_record_launches = rt.core().deferred_record_launches();
    result.periodic_replays = rt.core().periodic_replays();
    for (const DeviceMemoryReport& d : rt.core().device_memory()) {
      result.evictions += d.memory.evictions;
      result.reclaims += d.memory.reclaims;
      result.peak_device_bytes = std::max(result.peak_device_bytes, d.memory.peak_held_bytes);
      if (opt.device_memory != 0 && d.memory.peak_held_bytes > opt.device_memory) {
        result.error = "a device held " + std::to_string(d.memory.peak_held_bytes) +
                       " bytes, over the cap of " + std::to_string(opt.device_memory);
      }
    }
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  result.minimum_bytes = oracle.minimum_bytes();
  // Lazy copies exactly the minimum. Adaptive, with peer copies, copies the minimum plus the
  // replayed bytes no reader used (a replay that was read replaced the demand copy byte for byte).
  const bool evicted = result.evictions != 0 || out_of_core_ran;
  const bool lazy_exact = evicted || !byte_checks || opt.strategy != UpdateStrategy::lazy ||
                          result.bytes_copied == result.minimum_bytes;
  const bool adaptive_exact =
      evicted || !byte_checks || opt.strategy != UpdateStrategy::adaptive || !peer ||
      result.bytes_copied == result.minimum_bytes + result.prefetch_unread_bytes;
  result.ok = result.error.empty() && result.mismatched_bytes == 0 && lazy_exact && adaptive_exact;
  return result;
}

}  // namespace unimem
