#include "device/sim/sim_model.hpp"

#include <algorithm>

#include "common/check.hpp"

namespace unimem::sim {

double LinkModel::seconds(double bytes) const {
  UNIMEM_REQUIRE(present(), "LinkModel::seconds: the link has no bandwidth (it does not exist)");
  return latency + bytes / bandwidth;
}

namespace {

constexpr double kGB = 1e9;
constexpr std::uint64_t kGiB = 1ULL << 30;

std::vector<Preset> make_presets() {
  std::vector<Preset> all;
  // Matz et al. (seed 002), section 9: a Supermicro X10DRG with two Xeon E5-2667 and eight NVIDIA
  // K80 boards = 16 GK210 GPUs (Fig. 6 runs 1..16 of them). The paper gives no device figures;
  // these are NVIDIA's K80 datasheet values per GK210 (half a board: 2496 cores, 2.8 TFLOP/s
  // single precision at base clock, 240 GB/s, 12 GB) and PCIe 3.0 x16 as commonly measured with
  // pinned memory (~12 GB/s per direction, ~10 us per cudaMemcpyAsync). The two GPUs of a board
  // share its x16 slot through the on-board PCIe switch; peer copies (cudaMemcpyPeerAsync, which
  // Matz et al.'s runtime issues, section 8.3) work within one CPU socket's PCIe tree (8 GPUs),
  // not across the QPI link between sockets.
  Preset k80;
  k80.name = "k80";
  k80.description =
      "NVIDIA K80 GPU (one GK210) as in Matz et al.'s 16-GPU system: 2.8 TFLOP/s, 240 GB/s, "
      "12 GB; PCIe 3.0 x16 12 GB/s 10 us shared by the 2 GPUs of a board; peer copies 10 GB/s "
      "12 us within a socket (8 GPUs)";
  k80.device.compute_flops = 2.8e12;
  k80.device.memory_bandwidth = 240 * kGB;
  k80.device.kernel_latency = 5e-6;
  k80.device.capacity = 12 * kGiB;
  k80.device.host_link = {12 * kGB, 10e-6};
  k80.device.devices_per_host_link = 2;
  k80.device.peer_link = {10 * kGB, 12e-6};
  k80.device.peer_group_size = 8;
  all.push_back(k80);

  Preset pcie;
  pcie.name = "pcie";
  pcie.description =
      "generic PCIe 3.0 GPU: 10 TFLOP/s, 900 GB/s, 16 GB, own x16 link 12 GB/s 10 us, no peer "
      "copies (every device-to-device copy goes through the host)";
  pcie.device.compute_flops = 10e12;
  pcie.device.memory_bandwidth = 900 * kGB;
  pcie.device.kernel_latency = 5e-6;
  pcie.device.capacity = 16 * kGiB;
  pcie.device.host_link = {12 * kGB, 10e-6};
  pcie.device.peer_link = {};
  all.push_back(pcie);

  Preset nvlink;
  nvlink.name = "nvlink";
  nvlink.description =
      "NVLink-connected GPUs: 15 TFLOP/s, 900 GB/s, 32 GB, own PCIe x16 link 12 GB/s 10 us, "
      "peer links 50 GB/s 5 us between all devices";
  nvlink.device.compute_flops = 15e12;
  nvlink.device.memory_bandwidth = 900 * kGB;
  nvlink.device.kernel_latency = 5e-6;
  nvlink.device.capacity = 32 * kGiB;
  nvlink.device.host_link = {12 * kGB, 10e-6};
  nvlink.device.peer_link = {50 * kGB, 5e-6};
  all.push_back(nvlink);
  return all;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = make_presets();
  return all;
}

const Preset& find_preset(const std::string& name) {
  std::string known;
  for (const Preset& p : presets()) {
    if (p.name == name) return p;
    if (!known.empty()) known += ", ";
    known += p.name;
  }
  std::string message = "unknown sim preset '";
  message += name;
  message += "' (known: ";
  message += known;
  message += ")";
  throw PreconditionError(message);
}

double kernel_seconds(const DeviceModel& model, const KernelWork& work) {
  UNIMEM_REQUIRE(model.compute_flops > 0 && model.memory_bandwidth > 0,
                 "kernel_seconds: the device needs positive compute and memory throughput");
  return model.kernel_latency +
         std::max(work.flops / model.compute_flops, work.bytes / model.memory_bandwidth);
}

KernelWork default_kernel_work(const NDRange& range, std::span<const KernelArg> args) {
  const double items = static_cast<double>(range.global[0]) * static_cast<double>(range.global[1]) *
                       static_cast<double>(range.global[2]);
  double buffers = 0;
  for (const KernelArg& a : args) buffers += a.kind == KernelArg::Kind::buffer ? 1 : 0;
  return {16 * items, 4 * buffers * items};
}

SimInterval SimClock::schedule(EngineId engine, double ready, double seconds) {
  UNIMEM_REQUIRE(seconds >= 0, "SimClock::schedule: negative duration");
  std::lock_guard lock(mutex_);
  double& free = free_at_[engine];
  const double start = std::max({free, ready, host_});
  const double end = start + seconds;
  free = end;
  busy_[engine] += seconds;
  latest_ = std::max(latest_, end);
  return {start, end};
}

void SimClock::advance_host(double time) {
  std::lock_guard lock(mutex_);
  host_ = std::max(host_, time);
}

double SimClock::host_time() const {
  std::lock_guard lock(mutex_);
  return host_;
}

double SimClock::now() const {
  std::lock_guard lock(mutex_);
  return std::max(host_, latest_);
}

std::map<EngineId, double> SimClock::busy() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

}  // namespace unimem::sim
