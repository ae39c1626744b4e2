// Implements CountVisibleDevices and ReadVisibleDevices (visible_devices.h).
#include "reference/runtime/visible_devices.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace faultline {
namespace {

std::vector<std::string> SplitAtCommas(const std::string& mask) {
  std::vector<std::string> entries;
  std::stringstream list(mask);
  std::string entry;
  while (std::getline(list, entry, ',')) entries.push_back(entry);
  return entries;
}

bool Contains(const std::vector<long>& ordinals, long ordinal) {
  return std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end();
}

// The leading ordinal of `entry` as PyTorch's _strtoul reads it (a sign,
// then digits), or -1 without digits or for a negative value. Ordinals
// that large name no device anyway, so the digits are capped.
long LeadingOrdinal(const std::string& entry) {
  size_t i = 0;
  while (i < entry.size() && std::isspace(static_cast<unsigned char>(entry[i]))) ++i;
  const bool negative = i < entry.size() && entry[i] == '-';
  if (i < entry.size() && (entry[i] == '+' || entry[i] == '-')) ++i;
  long ordinal = -1;
  for (; i < entry.size() && std::isdigit(static_cast<unsigned char>(entry[i])); ++i) {
    ordinal = std::min<long>(1L << 30, (ordinal < 0 ? 0 : ordinal * 10) + (entry[i] - '0'));
  }
  return negative && ordinal != 0 ? -1 : ordinal;
}

// The one device whose UUID starts with `entry`, or -1.
long DeviceWithUuidPrefix(const std::string& entry, const std::vector<std::string>& uuids) {
  long found = -1;
  for (size_t d = 0; d < uuids.size(); ++d) {
    if (uuids[d].rfind(entry, 0) != 0) continue;
    if (found >= 0) return -1;  // ambiguous
    found = static_cast<long>(d);
  }
  return found;
}

}  // namespace

int CountVisibleDevices(const std::string& mask, const std::vector<std::string>& uuids) {
  return ReadVisibleDevices(mask, uuids).count;
}

VisibleDevices ReadVisibleDevices(const std::string& mask, const std::vector<std::string>& uuids) {
  const VisibleDevices kRepeat{0, true, {}};
  const std::vector<std::string> entries = SplitAtCommas(mask);
  const long physical = static_cast<long>(uuids.size());
  if (entries.empty() || entries[0].rfind("GPU-", 0) != 0) {
    std::vector<long> ordinals;  // up to the first entry with no digits
    for (const std::string& entry : entries) {
      const long ordinal = LeadingOrdinal(entry);
      if (Contains(ordinals, ordinal)) return kRepeat;
      if (ordinal < 0) break;
      ordinals.push_back(ordinal);
    }
    const auto past = std::find_if(ordinals.begin(), ordinals.end(), [&](long o) { return o >= physical; });
    return {static_cast<int>(past - ordinals.begin()), false, std::vector<int>(ordinals.begin(), past)};
  }
  std::vector<std::string> prefixes;  // up to the first entry that is not a UUID
  for (const std::string& entry : entries) {
    if (std::find(prefixes.begin(), prefixes.end(), entry) != prefixes.end()) return kRepeat;
    if (entry.rfind("GPU-", 0) != 0) break;
    prefixes.push_back(entry);
  }
  std::vector<long> devices;
  for (const std::string& prefix : prefixes) {
    const long device = DeviceWithUuidPrefix(prefix, uuids);
    if (device < 0) break;  // unknown, or ambiguous (where PyTorch gives up on counting)
    if (Contains(devices, device)) return kRepeat;
    devices.push_back(device);
  }
  return {static_cast<int>(devices.size()), false, std::vector<int>(devices.begin(), devices.end())};
}

}  // namespace faultline
