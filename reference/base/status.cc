// Implements Status formatting and the error constructors.
#include "reference/base/status.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace faultline {

namespace internal {
void DieOfBadResultAccess(const Status& status) {
  std::fprintf(stderr, "faultline: the value of a failed Result was accessed; its status: %s\n",
               status.ToString().c_str());
  std::abort();
}
}  // namespace internal

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kOutOfRange: return "out_of_range";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kFailedPrecondition: return "failed_precondition";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kDeviceError: return "device_error";
    case StatusCode::kChildFailed: return "child_failed";
    case StatusCode::kDataLoss: return "data_loss";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

Status::Status(CudaErrorInfo cuda, std::string message)
    : code_(StatusCode::kDeviceError), message_(std::move(message)), cuda_(std::move(cuda)) {}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::ostringstream os;
  os << StatusCodeName(code_) << ": " << message_;
  if (cuda_) {
    os << " [" << cuda_->name << " (" << cuda_->code << "): \"" << cuda_->string << "\" in " << cuda_->api << " at "
       << cuda_->file << ":" << cuda_->line << "]";
  }
  return os.str();
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  Status copy = *this;
  copy.message_ = context + ": " + message_;
  return copy;
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

Status InvalidArgumentError(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
Status OutOfRangeError(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }
Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
Status FailedPreconditionError(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m)); }
Status UnavailableError(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
Status DataLossError(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

}  // namespace faultline
