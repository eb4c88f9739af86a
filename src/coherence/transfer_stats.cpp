#include <unimem/transfer_stats.hpp>

namespace unimem {

namespace {

std::string json_count(const CopyCount& c) {
  return "{\"bytes\":" + std::to_string(c.bytes) + ",\"copies\":" + std::to_string(c.copies) + "}";
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
  return *this;
}

std::string TransferStats::to_json() const {
  CopyCount total{total_bytes(), total_copies()};
  return "{\"h2d\":" + json_count(host_to_device) + ",\"d2h\":" + json_count(device_to_host) +
         ",\"d2d\":" + json_count(device_to_device) + ",\"total\":" + json_count(total) +
         ",\"prefetch_bytes\":" + std::to_string(prefetch_bytes) +
         ",\"prefetch_unread_bytes\":" + std::to_string(prefetch_unread_bytes) +
         ",\"replays\":" + std::to_string(replays) +
         ",\"mispredictions\":" + std::to_string(mispredictions) + "}";
}

}  // namespace unimem
