// Implements reusable shared-memory segments with memfd_create, fallocate
// and mmap.
#include "reference/loader/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

namespace faultline {
namespace {

constexpr size_t kHeaderBytes = sizeof(uint64_t);  // the length field

Status ShmError(const char* what, const std::string& name, int error = errno) {
  return UnavailableError(std::string(what) + " of shared memory segment " + name + " failed: " + std::strerror(error));
}

// Rounds up to whole pages, with a quarter more than is needed (and at
// least a quarter more than now), so that messages of varying or slowly
// rising size do not remap every time: each growth maps the whole segment
// again, in the writer and then in the reader.
// Sizes past what size_t holds saturate (and then fail to be reserved).
size_t GrownCapacity(size_t needed, size_t current) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto with_a_quarter = [](size_t n) { return n > SIZE_MAX - n / 4 ? SIZE_MAX : n + n / 4; };
  const size_t wanted = std::max(with_a_quarter(needed), with_a_quarter(current));
  return wanted > SIZE_MAX - (page - 1) ? wanted : (wanted + page - 1) / page * page;
}

// `a` + `b`, or SIZE_MAX when the sum does not fit (a size no segment can hold).
size_t SaturatedSum(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

}  // namespace

SegmentWriter::~SegmentWriter() {
  if (map_ != nullptr) munmap(map_, capacity_);
}

// Makes the segment hold at least `bytes` (its length field included);
// the message in it is kept.
Status SegmentWriter::Hold(size_t bytes) {
  if (bytes <= capacity_) return OkStatus();
  const size_t grown = GrownCapacity(bytes, capacity_);
  if (grown > static_cast<size_t>(std::numeric_limits<off_t>::max())) {
    return ShmError(("reserving " + std::to_string(bytes) + " bytes").c_str(), name_, EFBIG);
  }
  // fallocate, not ftruncate: memory that runs out is this error now, not
  // a SIGBUS when the message touches a page that cannot be backed.
  const int error = posix_fallocate(fd_.get(), 0, static_cast<off_t>(grown));
  if (error != 0) return ShmError(("reserving " + std::to_string(grown) + " bytes").c_str(), name_, error);
  // The message written so far stays in the segment across the remap.
  if (map_ != nullptr) munmap(map_, capacity_);
  map_ = nullptr;
  capacity_ = 0;
  // MAP_POPULATE: the pages are mapped in one go, not one fault each.
  void* map = mmap(nullptr, grown, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_.get(), 0);
  if (map == MAP_FAILED) return ShmError("mmap", name_);
  map_ = static_cast<char*>(map);
  capacity_ = grown;
  return OkStatus();
}

size_t SegmentWriter::reserved() const { return capacity_ > kHeaderBytes ? capacity_ - kHeaderBytes : 0; }

Status SegmentWriter::Begin() {
  FL_RETURN_IF_ERROR(Hold(kHeaderBytes));
  const uint64_t empty = 0;
  std::memcpy(map_, &empty, kHeaderBytes);
  size_ = 0;
  return OkStatus();
}

Status SegmentWriter::Reserve(size_t size) { return Hold(SaturatedSum(kHeaderBytes, size)); }

Result<char*> SegmentWriter::Extend(size_t n) {
  FL_RETURN_IF_ERROR(Hold(SaturatedSum(kHeaderBytes + size_, n)));
  char* out = map_ + kHeaderBytes + size_;
  size_ += n;
  return out;
}

char* SegmentWriter::At(size_t offset) { return map_ + kHeaderBytes + offset; }

void SegmentWriter::Finish() {
  const uint64_t length = size_;
  std::memcpy(map_, &length, kHeaderBytes);
}

Status SegmentWriter::Write(std::string_view bytes) {
  FL_RETURN_IF_ERROR(Begin());
  FL_ASSIGN_OR_RETURN(char* out, Extend(bytes.size()));
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  Finish();
  return OkStatus();
}

struct SegmentReader::Mapping {
  const char* data = nullptr;
  size_t size = 0;
  Mapping(const char* d, size_t n) : data(d), size(n) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { munmap(const_cast<char*>(data), size); }
};

Status SegmentReader::Read(const std::function<Status(std::string_view)>& read) {
  FL_ASSIGN_OR_RETURN(Message message, Map());
  return read(message.bytes);
}

Result<SegmentReader::Message> SegmentReader::Map() {
  uint64_t length = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const size_t mapped = mapping_ ? mapping_->size : 0;
    if (mapped >= kHeaderBytes) {
      std::memcpy(&length, mapping_->data, kHeaderBytes);
      if (length <= mapped - kHeaderBytes) {
        return Message{std::string_view(mapping_->data + kHeaderBytes, static_cast<size_t>(length)), mapping_};
      }
    }
    // Not mapped yet, or the writer grew the segment: map all of it again
    // (the old mapping stays while a message read from it is held).
    struct stat st {};
    if (fstat(fd_.get(), &st) != 0) return ShmError("fstat", name_);
    const size_t size = static_cast<size_t>(st.st_size);
    if (size <= mapped) break;
    void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd_.get(), 0);
    if (map == MAP_FAILED) return ShmError("mmap", name_);
    // Not inherited by a later fork: a forked worker of another loader would
    // otherwise keep this segment allocated for as long as it lives.
    madvise(map, size, MADV_DONTFORK);
    mapping_ = std::make_shared<const Mapping>(static_cast<const char*>(map), size);
  }
  const size_t mapped = mapping_ ? mapping_->size : 0;
  const std::string holds = "shared memory segment " + name_ + " holds " + std::to_string(mapped) + " bytes";
  if (mapped < kHeaderBytes) return DataLossError(holds + "; expected at least its 8-byte length field");
  return DataLossError(holds + "; its length field says " + std::to_string(length) + " bytes follow the 8-byte field");
}

Result<int> CreateUnlinkedSegment(const std::string& name) {
  // An anonymous tmpfs file; the name, less its leading "/", only labels
  // it in /proc/PID/fd and maps.
  const int fd = memfd_create(name.substr(name.rfind('/') + 1).c_str(), MFD_CLOEXEC);
  if (fd < 0) return ShmError("memfd_create", name);
  return fd;
}

std::string ProcessSegmentPrefix(const std::string& tag) {
  static const uint64_t nonce = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  char text[64];
  std::snprintf(text, sizeof(text), "%d-%016llx-", static_cast<int>(getpid()), static_cast<unsigned long long>(nonce));
  return "/faultline-" + tag + text;
}

}  // namespace faultline
