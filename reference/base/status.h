// Provides Status and Result<T>: error values used at every library boundary,
// with the CUDA error detail (name, code, string, API call, file:line) kept
// intact when the error came from a device runtime.
#ifndef FAULTLINE_REFERENCE_BASE_STATUS_H_
#define FAULTLINE_REFERENCE_BASE_STATUS_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <variant>

#include "reference/base/macros.h"

namespace faultline {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller passed a bad value
  kOutOfRange,          // an index or id outside its valid range
  kNotFound,            // a named thing does not exist
  kFailedPrecondition,  // the call is not allowed in the current state
  kUnavailable,         // a resource (device, driver, peer) is not there
  kDeviceError,         // a device runtime call failed: see cuda_error()
  kChildFailed,         // a worker or child process failed or died
  kDataLoss,            // a file is truncated or corrupt
  kInternal,            // a broken invariant inside faultline
};

// Returns the lower-case name of a status code ("invalid_argument", ...).
const char* StatusCodeName(StatusCode code);

// Details of a failed CUDA runtime call, real or simulated.
struct CudaErrorInfo {
  int code = 0;        // the cudaError_t value
  std::string name;    // "cudaErrorInitializationError"
  std::string string;  // "initialization error"
  std::string api;     // "cudaGetDeviceCount"
  std::string file;    // where faultline made the call
  int line = 0;
};

// [[nodiscard]]: an error that is dropped silently is a bug; write
// `(void)call();` where ignoring one is deliberate, with a comment saying why.
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);
  Status(CudaErrorInfo cuda, std::string message);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Returns the CUDA error details when this is a device runtime failure.
  const std::optional<CudaErrorInfo>& cuda_error() const { return cuda_; }
  // Returns a one-line description: "<code>: <message>" plus CUDA detail.
  std::string ToString() const;

  // Returns a copy with "context: " prepended to the message (OK stays OK).
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::optional<CudaErrorInfo> cuda_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string message);
Status OutOfRangeError(std::string message);
Status NotFoundError(std::string message);
Status FailedPreconditionError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status InternalError(std::string message);

namespace internal {
// Prints the status of a Result whose value was taken although it failed,
// then aborts: a bug in the caller, never undefined behaviour.
[[noreturn]] void DieOfBadResultAccess(const Status& status);
}  // namespace internal

// Holds either a value or a non-OK status. value(), * and -> on a failed
// Result abort with the status text (as tensorstore's Result does).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = InternalError("Result constructed from OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return Checked(); }
  const T& value() const& { return Checked(); }
  T&& value() && { return std::move(Checked()); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &Checked(); }
  T& operator*() & { return Checked(); }
  const T& operator*() const& { return Checked(); }
  T&& operator*() && { return std::move(Checked()); }

 private:
  T& Checked() {
    if (!value_.has_value()) internal::DieOfBadResultAccess(status_);
    return *value_;
  }
  const T& Checked() const {
    if (!value_.has_value()) internal::DieOfBadResultAccess(status_);
    return *value_;
  }

  Status status_;
  std::optional<T> value_;
};

namespace internal {
inline const Status& GetStatus(const Status& s) { return s; }
template <typename T>
const Status& GetStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace faultline

// Returns the status of `expr` from the enclosing function when it is an error.
#define FL_RETURN_IF_ERROR(expr)                                                   \
  do {                                                                             \
    const ::faultline::Status _fl_status = ::faultline::internal::GetStatus(expr); \
    if (!_fl_status.ok()) return _fl_status;                                       \
  } while (0)

// Declares `lhs` from a Result, or returns its error from the enclosing function.
#define FL_ASSIGN_OR_RETURN(lhs, expr) FL_ASSIGN_OR_RETURN_IMPL(FL_CONCAT(_fl_result_, __LINE__), lhs, expr)
#define FL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#endif  // FAULTLINE_REFERENCE_BASE_STATUS_H_
