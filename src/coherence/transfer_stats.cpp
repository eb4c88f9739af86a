#include <unimem/transfer_stats.hpp>

#include <nlohmann/json.hpp>

namespace unimem {

namespace {

nlohmann::ordered_json count_json(const CopyCount& c) {
  nlohmann::ordered_json j;
  j["bytes"] = c.bytes;
  j["copies"] = c.copies;
  return j;
}

}  // namespace

TransferStats& TransferStats::operator+=(const TransferStats& o) {
  host_to_device += o.host_to_device;
  device_to_host += o.device_to_host;
  device_to_device += o.device_to_device;
  prefetch_bytes += o.prefetch_bytes;
  prefetch_unread_bytes += o.prefetch_unread_bytes;
  replays += o.replays;
  mispredictions += o.mispredictions;
  evicted_bytes += o.evicted_bytes;
  eviction_writeback_bytes += o.eviction_writeback_bytes;
  reloaded_bytes += o.reloaded_bytes;
  relocated_bytes += o.relocated_bytes;
  direct_read_bytes += o.direct_read_bytes;
  home_read_bytes += o.home_read_bytes;
  return *this;
}

std::string TransferStats::to_json() const {
  nlohmann::ordered_json j;
  j["h2d"] = count_json(host_to_device);
  j["d2h"] = count_json(device_to_host);
  j["d2d"] = count_json(device_to_device);
  j["total"] = count_json(CopyCount{total_bytes(), total_copies()});
  j["prefetch_bytes"] = prefetch_bytes;
  j["prefetch_unread_bytes"] = prefetch_unread_bytes;
  j["replays"] = replays;
  j["mispredictions"] = mispredictions;
  j["evicted_bytes"] = evicted_bytes;
  j["eviction_writeback_bytes"] = eviction_writeback_bytes;
  j["reloaded_bytes"] = reloaded_bytes;
  j["relocated_bytes"] = relocated_bytes;
  j["direct_read_bytes"] = direct_read_bytes;
  j["home_read_bytes"] = home_read_bytes;
  return j.dump();
}

}  // namespace unimem
