// Implements WriteFileAtomically (atomic_file.h).
#include "reference/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "reference/base/fd_io.h"
#include "reference/base/unique_fd.h"

namespace faultline {

Status WriteFileAtomically(const std::string& path, std::initializer_list<std::string_view> parts,
                           FileDurability durability) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = dir + "/." + base + ".tmp.XXXXXX";
  // Close-on-exec: a process another thread forks and execs while the file
  // is written must not hold it (mkstemp's descriptor is inherited).
  UniqueFd file(mkostemp(&tmp[0], O_CLOEXEC));
  if (!file.valid()) {
    const std::string message = "cannot create a temporary file for '" + path + "': " + std::strerror(errno);
    // A full disk or quota, or an I/O error, is not a wrong path.
    if (errno == ENOSPC || errno == EDQUOT || errno == EIO) return UnavailableError(message);
    return InvalidArgumentError(message);
  }
  // `what`: the failed step and its error ("fsync: No space left on device").
  // Unavailable: the path was fine, the writing failed (a full disk, EIO).
  // The file is closed before the temporary name is unlinked.
  auto fail_with = [&](const std::string& what) {
    const std::string message = "cannot write '" + path + "': " + what;
    file.reset();
    unlink(tmp.c_str());
    return UnavailableError(message);
  };
  auto fail = [&](const char* step) { return fail_with(std::string(step) + ": " + std::strerror(errno)); };
  if (fchmod(file.get(), 0644) != 0) return fail("fchmod");
  for (std::string_view part : parts) {
    const Status written = WriteAll(file.get(), part);
    if (!written.ok()) return fail_with(written.message());  // "write failed: <strerror>"
  }
  if (durability == FileDurability::kDurable && fsync(file.get()) != 0) return fail("fsync");
  // A write error the kernel held back (NFS, a delayed allocation) shows
  // here: "close failed: <strerror>".
  if (const Status closed = file.Close(); !closed.ok()) return fail_with(closed.message());
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string message = "cannot rename the temporary file onto '" + path + "': " + std::strerror(errno);
    unlink(tmp.c_str());
    return InvalidArgumentError(message);
  }
  return OkStatus();
}

}  // namespace faultline
