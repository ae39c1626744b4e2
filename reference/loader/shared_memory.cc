// Implements shared-memory segments with shm_open and mmap.
#include "reference/loader/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace faultline {
namespace {

Status ShmError(const char* what, const std::string& name) {
  return UnavailableError(std::string(what) + " of shared memory segment " + name + " failed: " + std::strerror(errno));
}

}  // namespace

Status WriteSharedMemory(const std::string& name, std::string_view bytes, const std::function<void()>& halfway) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return ShmError("shm_open", name);
  Status status;
  if (ftruncate(fd, static_cast<off_t>(bytes.size())) != 0) {
    status = ShmError("ftruncate", name);
  } else if (!bytes.empty()) {
    // MAP_POPULATE: the pages are allocated in one go, not one fault each.
    void* map = mmap(nullptr, bytes.size(), PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (map == MAP_FAILED) {
      status = ShmError("mmap", name);
    } else {
      const size_t half = bytes.size() / 2;
      std::memcpy(map, bytes.data(), half);
      if (halfway) halfway();
      std::memcpy(static_cast<char*>(map) + half, bytes.data() + half, bytes.size() - half);
      munmap(map, bytes.size());
    }
  }
  close(fd);
  if (!status.ok()) shm_unlink(name.c_str());
  return status;
}

Status ReadSharedMemory(const std::string& name, const std::function<Status(std::string_view)>& read) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return ShmError("shm_open", name);
  shm_unlink(name.c_str());  // the mapping outlives the name
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    close(fd);
    return ShmError("fstat", name);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return read(std::string_view());
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return ShmError("mmap", name);
  Status status = read(std::string_view(static_cast<const char*>(map), size));
  munmap(map, size);
  return status;
}

Result<std::string> TakeSharedMemory(const std::string& name) {
  std::string bytes;
  FL_RETURN_IF_ERROR(ReadSharedMemory(name, [&](std::string_view view) {
    bytes.assign(view.data(), view.size());
    return OkStatus();
  }));
  return bytes;
}

void UnlinkSharedMemory(const std::string& name) { shm_unlink(name.c_str()); }

bool SharedMemoryExists(const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

}  // namespace faultline
