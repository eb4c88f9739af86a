#include <cstdlib>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "selftest/coherence_selftest.hpp"
#include "selftest/pointer_selftest.hpp"

namespace unimem::tools {

namespace {

void add_pointer_selftest(CLI::App& selftest) {
  auto* pointer = selftest.add_subcommand(
      "pointer",
      "Differential check of the one-pointer C API (<unimem/unimem.h>): a seeded random program "
      "of host accesses through the pointer (memcpy, element stores, two threads, um_memcpy, "
      "um_memset, read/pread/fread/write/pwrite/fwrite) and launches over the OpenCL devices, "
      "compared byte for byte with one flat memory. Prints one JSON line; exits 0 only when ok.");
  auto options = std::make_shared<PointerSelftestOptions>();
  pointer->add_option("--seed", options->seed, "Random seed (any unsigned 64-bit value)")
      ->check(not_negative);
  pointer->add_option("--ops", options->ops, "Number of operations in the program")
      ->check(not_negative);
  pointer->add_option("--devices", options->devices, "Launches split over this many devices")
      ->check(not_negative)
      ->check(CLI::Range(1, 64));
  pointer->add_option("--protocol", options->protocol, "Host protocol")
      ->check(CLI::IsMember({"batch", "lazy", "rolling"}));
  pointer->add_option("--allocations", options->allocations, "Number of allocations")
      ->check(not_negative)
      ->check(CLI::Range(2, 64));
  pointer
      ->add_option("--block-size", options->block_size,
                   "Block size in bytes (a multiple of the page size)")
      ->check(not_negative);
  pointer->add_option("--max-size", options->max_allocation_size, "Largest allocation in bytes")
      ->check(not_negative)
      ->check(CLI::Range(std::uint64_t{64}, std::uint64_t{1} << 28));
  pointer->callback([options] {
    PointerSelftestResult r;
    try {
      r = run_pointer_selftest(*options);
    } catch (const PreconditionError& e) {
      std::cerr << "unimem selftest pointer: " << e.what() << "\n";
      std::exit(2);
    } catch (const DeviceError& e) {
      std::cerr << "unimem selftest pointer: " << e.what() << "\n";
      std::exit(2);
    }
    std::cout << r.to_json(*options) << std::endl;
    if (!r.ok) std::exit(1);
  });
}

}  // namespace

void add_selftest_command(CLI::App& app) {
  auto* selftest = app.add_subcommand("selftest", "Run a built-in randomized self-check");
  selftest->require_subcommand(1);
  auto* coherence = selftest->add_subcommand(
      "coherence",
      "Differential check of the coherence layer: a seeded random program of host writes, host "
      "reads and kernel launches on host-driver devices, compared byte for byte with one flat "
      "memory. Prints one JSON line; exits 0 only when ok.");
  auto options = std::make_shared<CoherenceSelftestOptions>();
  auto strategy = std::make_shared<std::string>("lazy");
  auto no_peer = std::make_shared<bool>(false);
  auto no_direct = std::make_shared<bool>(false);
  coherence->add_option("--seed", options->seed, "Random seed (any unsigned 64-bit value)")
      ->check(not_negative);
  coherence->add_option("--ops", options->ops, "Number of operations in the program")
      ->check(not_negative);
  coherence->add_option("--devices", options->devices, "Number of host devices")
      ->check(not_negative)
      ->check(CLI::Range(1, 16));
  coherence->add_option("--buffers", options->buffers, "Number of shared buffers")
      ->check(not_negative)
      ->check(CLI::Range(1, 64));
  coherence->add_option("--strategy", *strategy, "Update strategy")
      ->check(CLI::IsMember({"lazy", "balance", "batch", "adaptive"}));
  coherence
      ->add_option("--max-buffer-size", options->max_buffer_size, "Largest buffer size in bytes")
      ->check(not_negative)
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 24));
  auto device_memory = std::make_shared<std::string>();
  coherence
      ->add_option("--device-memory", *device_memory,
                   "Cap on each device's memory in bytes (K, M, G suffixes: 64K); most "
                   "operations evict when it is close to 3 x --max-buffer-size")
      ->check(not_negative)
      ->check(byte_size);
  coherence->add_option("--sim", options->sim_preset,
                        "Run on simulated devices of this preset (k80, pcie, nvlink) over the host "
                        "devices");
  coherence->add_flag("--no-peer", *no_peer,
                      "Forbid peer copies: device-to-device traffic goes through the host");
  coherence->add_flag("--no-direct-reads", *no_direct,
                      "Host reads copy stale bytes home first, then out of the home copy "
                      "(RuntimeOptions::direct_host_reads off)");
  coherence->callback([options, strategy, no_peer, no_direct, device_memory] {
    options->direct_reads = !*no_direct;
    options->strategy = *parse_update_strategy(*strategy);
    if (!device_memory->empty()) options->device_memory = *parse_byte_size(*device_memory).bytes;
    options->peer_copies = !*no_peer;
    CoherenceSelftestResult r;
    try {
      r = run_coherence_selftest(*options);
    } catch (const PreconditionError& e) {
      std::cerr << "unimem selftest coherence: " << e.what() << "\n";
      std::exit(2);
    }
    std::cout << r.to_json(*options) << std::endl;
    if (!r.ok) std::exit(1);
  });
  add_pointer_selftest(*selftest);
}

}  // namespace unimem::tools
