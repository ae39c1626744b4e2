// Implements the .npy reader (with a small parser for the header's Python
// dict literal) and the atomic writer.
#include "reference/graph/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include "reference/base/atomic_file.h"
#include "reference/base/huge_pages.h"
#include "reference/base/unique_fd.h"

namespace faultline {
namespace npy {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the .npy code copies little-endian bytes straight into memory");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMagicSize = 6;
constexpr const char* kSupportedDescrs = "'|b1', '|u1', '<i4', '<i8', '<f4'";
// NumPy's own default limit (numpy/lib/format.py, _MAX_HEADER_SIZE): a longer
// header is refused before it is allocated (v2 allows 4 GiB).
constexpr int64_t kMaxHeaderSize = 10000;
// How much of a bad header an error message quotes.
constexpr size_t kMaxQuotedHeader = 200;

std::string Quoted(const std::string& path) { return "'" + path + "'"; }

// Returns the shape formatted the way NumPy prints it: "(3,)", "(2, 5)", "()".
std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) os << ", ";
    os << shape[i];
  }
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

// Returns printable text for possibly binary bytes (non-printables as \xNN).
std::string Printable(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// Returns Printable(bytes) cut to `limit` bytes, saying how long it was.
std::string PrintablePrefix(const std::string& bytes, size_t limit) {
  if (bytes.size() <= limit) return Printable(bytes);
  return Printable(bytes.substr(0, limit)) + "...(" + std::to_string(bytes.size()) + " bytes in all)";
}

// The error for an allocation the host could not make (std::bad_alloc).
Status OutOfMemory(const std::string& path, int64_t bytes, const std::string& what) {
  return UnavailableError("cannot read " + Quoted(path) + ": out of memory allocating " + std::to_string(bytes) +
                          " bytes for " + what);
}

bool DescrToDType(const std::string& descr, DType* dtype) {
  if (descr == "|b1")
    *dtype = DType::kBool;
  else if (descr == "|u1")
    *dtype = DType::kUInt8;
  else if (descr == "<i4")
    *dtype = DType::kInt32;
  else if (descr == "<i8")
    *dtype = DType::kInt64;
  else if (descr == "<f4")
    *dtype = DType::kFloat32;
  else
    return false;
  return true;
}

// Parses the header dict: {'descr': '<i4', 'fortran_order': False, 'shape': (3,), }
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  Status Parse(std::string* descr, bool* fortran_order, std::vector<int64_t>* shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    FL_RETURN_IF_ERROR(Expect('{', "'{' opening the header dict"));
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;
      std::string key;
      FL_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      FL_RETURN_IF_ERROR(Expect(':', "':' after key '" + key + "'"));
      SkipSpace();
      if (key == "descr") {
        // A structured dtype is a list: kept as text, refused as unsupported.
        FL_RETURN_IF_ERROR(Peek() == '[' ? ParseList(descr) : ParseString(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        FL_RETURN_IF_ERROR(ParseBool(fortran_order));
        have_order = true;
      } else if (key == "shape") {
        FL_RETURN_IF_ERROR(ParseShape(shape));
        have_shape = true;
      } else {
        return Error("unknown key '" + key + "'; expected only 'descr', 'fortran_order' and 'shape'");
      }
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') break;
      return Error("expected ',' or '}' after the value of '" + key + "'");
    }
    ++pos_;  // the closing brace
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the closing '}'");
    if (!have_descr) return Error("the key 'descr' is missing");
    if (!have_order) return Error("the key 'fortran_order' is missing");
    if (!have_shape) return Error("the key 'shape' is missing");
    return OkStatus();
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  Status Error(const std::string& what) const {
    return DataLossError("bad .npy header in " + Quoted(path_) + " at header offset " + std::to_string(pos_) + ": " +
                         what + "; header is \"" + PrintablePrefix(text_, kMaxQuotedHeader) + "\"");
  }

  Status Expect(char c, const std::string& what) {
    if (Peek() != c) return Error("expected " + what);
    ++pos_;
    return OkStatus();
  }

  Status ParseString(std::string* out) {
    char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    size_t end = text_.find(quote, pos_);
    if (end == std::string::npos) return Error("unterminated string");
    *out = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return OkStatus();
  }

  // Stores the text of a bracketed list, nested lists and quotes included.
  Status ParseList(std::string* out) {
    const size_t start = pos_;
    int depth = 0;
    char quote = '\0';
    for (; pos_ < text_.size(); ++pos_) {
      const char c = text_[pos_];
      if (quote != '\0') {
        if (c == quote) quote = '\0';
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '[') {
        ++depth;
      } else if (c == ']' && --depth == 0) {
        ++pos_;
        *out = text_.substr(start, pos_ - start);
        return OkStatus();
      }
    }
    pos_ = start;
    return Error("unterminated list for 'descr'");
  }

  Status ParseBool(bool* out) {
    if (text_.compare(pos_, 4, "True") == 0) {
      *out = true;
      pos_ += 4;
    } else if (text_.compare(pos_, 5, "False") == 0) {
      *out = false;
      pos_ += 5;
    } else {
      return Error("expected True or False for 'fortran_order'");
    }
    return OkStatus();
  }

  Status ParseShape(std::vector<int64_t>* shape) {
    shape->clear();
    FL_RETURN_IF_ERROR(Expect('(', "'(' opening the shape tuple"));
    while (true) {
      SkipSpace();
      if (Peek() == ')') break;
      if (Peek() < '0' || Peek() > '9') return Error("expected a non-negative integer in the shape tuple");
      int64_t value = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        int digit = Peek() - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          return Error("shape dimension overflows int64");
        }
        value = value * 10 + digit;
        ++pos_;
      }
      if (Peek() == 'L') ++pos_;  // Python 2 long suffix
      shape->push_back(value);
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ')') break;
      return Error("expected ',' or ')' in the shape tuple");
    }
    ++pos_;
    return OkStatus();
  }

  const std::string& path_;
  const std::string& text_;
  size_t pos_ = 0;
};

// Closes a FILE* on scope exit.
struct FileCloser {
  std::FILE* f;
  ~FileCloser() {
    if (f != nullptr) std::fclose(f);
  }
};

std::string ErrnoText() { return std::strerror(errno); }

}  // namespace

const char* DTypeDescr(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "|b1";
    case DType::kUInt8: return "|u1";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kFloat32: return "<f4";
  }
  return "?";
}

// Element size as a signed count, for the file arithmetic below.
int64_t ItemSize(DType dtype) { return static_cast<int64_t>(::faultline::DTypeSize(dtype)); }

int64_t NpyArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<NpyArray> ReadNpy(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
  // writer, forever, before the regular-file check below could refuse it.
  // A regular file's reads ignore the flag.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return NotFoundError("cannot open " + Quoted(path) + ": " + ErrnoText());
    return InvalidArgumentError("cannot open " + Quoted(path) + ": " + ErrnoText());
  }
  std::FILE* f = fdopen(fd.get(), "rb");
  if (f == nullptr) return InvalidArgumentError("cannot open " + Quoted(path) + ": " + ErrnoText());
  (void)fd.release();  // the FILE owns it now: fclose closes it
  FileCloser closer{f};
  struct stat st;
  if (fstat(fileno(f), &st) != 0) return InvalidArgumentError("cannot stat " + Quoted(path) + ": " + ErrnoText());
  if (!S_ISREG(st.st_mode)) return InvalidArgumentError(Quoted(path) + " is not a regular file");
  const int64_t file_size = st.st_size;

  // Preamble: magic, version, header length.
  unsigned char pre[12];
  if (file_size < 10 || std::fread(pre, 1, 8, f) != 8) {
    return DataLossError(Quoted(path) + " is truncated: " + std::to_string(file_size) +
                         " bytes, too short for the .npy preamble (magic \\x93NUMPY, version, "
                         "header length)");
  }
  if (std::memcmp(pre, kMagic, kMagicSize) != 0) {
    return DataLossError(Quoted(path) + " is not a .npy file: it starts with \"" +
                         Printable(std::string(reinterpret_cast<char*>(pre), kMagicSize)) +
                         "\", expected the magic string \"\\x93NUMPY\"");
  }
  const int major = pre[6], minor = pre[7];
  int64_t len_bytes;
  if (major == 1 && minor == 0) {
    len_bytes = 2;
  } else if ((major == 2 || major == 3) && minor == 0) {
    len_bytes = 4;
  } else {
    return InvalidArgumentError(Quoted(path) + " has .npy format version " + std::to_string(major) + "." +
                                std::to_string(minor) + "; expected 1.0, 2.0 or 3.0");
  }
  if (file_size < 8 + len_bytes || std::fread(pre + 8, 1, len_bytes, f) != static_cast<size_t>(len_bytes)) {
    return DataLossError(Quoted(path) + " is truncated inside the .npy preamble: " + std::to_string(file_size) +
                         " bytes, expected at least " + std::to_string(8 + len_bytes));
  }
  int64_t header_len = pre[8] | (pre[9] << 8);
  if (len_bytes == 4) header_len |= (static_cast<int64_t>(pre[10]) << 16) | (static_cast<int64_t>(pre[11]) << 24);
  const int64_t data_offset = 8 + len_bytes + header_len;
  if (file_size < data_offset) {
    return DataLossError(Quoted(path) + " is truncated inside the .npy header: the header needs " +
                         std::to_string(header_len) + " bytes after offset " + std::to_string(8 + len_bytes) +
                         ", the file has " + std::to_string(file_size) + " bytes in all");
  }
  if (header_len > kMaxHeaderSize) {
    return InvalidArgumentError(Quoted(path) + " has a .npy header of " + std::to_string(header_len) +
                                " bytes; expected at most " + std::to_string(kMaxHeaderSize) +
                                ", NumPy's default max_header_size");
  }
  std::string header(header_len, '\0');
  if (std::fread(&header[0], 1, header_len, f) != static_cast<size_t>(header_len)) {
    return DataLossError("cannot read the .npy header of " + Quoted(path) + ": " + ErrnoText());
  }

  std::string descr;
  bool fortran_order = false;
  NpyArray array;
  FL_RETURN_IF_ERROR(HeaderParser(path, header).Parse(&descr, &fortran_order, &array.shape));
  if (fortran_order) {
    return InvalidArgumentError(Quoted(path) +
                                " is stored in Fortran order (fortran_order: True); "
                                "expected C order (fortran_order: False)");
  }
  if (!DescrToDType(descr, &array.dtype)) {
    return InvalidArgumentError(Quoted(path) + " has unsupported dtype '" + PrintablePrefix(descr, kMaxQuotedHeader) +
                                "'; expected one of " + kSupportedDescrs + " (little-endian)");
  }

  // Element count, guarding against overflow.
  const int64_t item = ItemSize(array.dtype);
  const int64_t max_bytes = std::numeric_limits<int64_t>::max() / 2;
  int64_t count = 1;
  for (int64_t d : array.shape) {
    if (d != 0 && count > max_bytes / item / d) {
      return DataLossError(Quoted(path) + " has an impossibly large shape " + ShapeString(array.shape));
    }
    count *= d;
  }
  const int64_t data_bytes = count * item;
  const int64_t found = file_size - data_offset;
  if (found < data_bytes) {
    return DataLossError(Quoted(path) + " is truncated: shape " + ShapeString(array.shape) + " of '" + descr +
                         "' needs " + std::to_string(data_bytes) + " data bytes, found " + std::to_string(found));
  }
  if (found > data_bytes) {
    return DataLossError(Quoted(path) + " has " + std::to_string(found - data_bytes) +
                         " unexpected bytes after the data: shape " + ShapeString(array.shape) + " of '" + descr +
                         "' needs exactly " + std::to_string(data_bytes) + " data bytes");
  }
  // The file may be larger than the memory (or sparse): std::bad_alloc
  // must not escape to the CLIs, which would abort.
  try {
    array.bytes.resize(data_bytes);
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path, data_bytes, "the data (shape " + ShapeString(array.shape) + " of '" + descr + "')");
  }
  if (data_bytes > 0 && std::fread(array.bytes.data(), 1, data_bytes, f) != static_cast<size_t>(data_bytes)) {
    return DataLossError("cannot read the data of " + Quoted(path) + ": " + ErrnoText());
  }
  return array;
}

Status WriteNpy(const std::string& path, const NpyArray& array) {
  if (static_cast<int64_t>(array.bytes.size()) != array.num_elements() * ItemSize(array.dtype)) {
    return InvalidArgumentError("cannot write " + Quoted(path) + ": shape " + ShapeString(array.shape) + " of '" +
                                DTypeDescr(array.dtype) + "' needs " +
                                std::to_string(array.num_elements() * ItemSize(array.dtype)) +
                                " bytes, the array holds " + std::to_string(array.bytes.size()));
  }
  std::string header = std::string("{'descr': '") + DTypeDescr(array.dtype) +
                       "', 'fortran_order': False, 'shape': " + ShapeString(array.shape) + ", }";
  // Pad with spaces and a final newline so the data starts on a 64-byte boundary.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t preamble = v2 ? 12 : 10;
  size_t total = preamble + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string head(kMagic, kMagicSize);
  head += static_cast<char>(v2 ? 2 : 1);
  head += '\0';
  const uint32_t hlen = static_cast<uint32_t>(header.size());
  head += static_cast<char>(hlen & 0xff);
  head += static_cast<char>((hlen >> 8) & 0xff);
  if (v2) {
    head += static_cast<char>((hlen >> 16) & 0xff);
    head += static_cast<char>((hlen >> 24) & 0xff);
  }
  head += header;
  return WriteFileAtomically(
      path, {head, std::string_view(reinterpret_cast<const char*>(array.bytes.data()), array.bytes.size())});
}

namespace {

std::string DescrList(const std::vector<DType>& dtypes) {
  std::string out;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::string("'") + DTypeDescr(dtypes[i]) + "'";
  }
  return out;
}

Status Check1D(const std::string& path, const NpyArray& array) {
  if (array.shape.size() != 1) {
    return InvalidArgumentError(Quoted(path) + " has shape " + ShapeString(array.shape) + "; expected a 1-D array");
  }
  return OkStatus();
}

}  // namespace

Result<std::vector<int64_t>> ReadNpyInt64(const std::string& path, const std::vector<DType>& accepted,
                                          DType* stored_dtype) {
  FL_ASSIGN_OR_RETURN(NpyArray array, ReadNpy(path));
  bool ok = false;
  for (DType d : accepted) ok = ok || (d == array.dtype);
  if (!ok || array.dtype == DType::kBool || array.dtype == DType::kFloat32) {
    return InvalidArgumentError(Quoted(path) + " has dtype '" + DTypeDescr(array.dtype) + "'; expected one of " +
                                DescrList(accepted));
  }
  FL_RETURN_IF_ERROR(Check1D(path, array));
  const int64_t n = array.shape[0];
  // Graph arrays are read at random: on 2 MiB pages (huge_pages.h says why).
  std::vector<int64_t> out;
  try {
    out = VectorOnHugePages<int64_t>(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path, 8 * n, std::to_string(n) + " elements widened to int64");
  }
  const uint8_t* src = array.bytes.data();
  if (array.dtype == DType::kUInt8) {
    for (int64_t i = 0; i < n; ++i) out[i] = src[i];
  } else if (array.dtype == DType::kInt32) {
    for (int64_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, src + 4 * i, 4);
      out[i] = v;
    }
  } else {
    if (n > 0) std::memcpy(out.data(), src, 8 * n);
  }
  if (stored_dtype != nullptr) *stored_dtype = array.dtype;
  return out;
}

Result<std::vector<float>> ReadNpyFloat32(const std::string& path) {
  FL_ASSIGN_OR_RETURN(NpyArray array, ReadNpy(path));
  if (array.dtype != DType::kFloat32) {
    return InvalidArgumentError(Quoted(path) + " has dtype '" + DTypeDescr(array.dtype) + "'; expected '<f4'");
  }
  FL_RETURN_IF_ERROR(Check1D(path, array));
  std::vector<float> out;
  try {
    out = VectorOnHugePages<float>(static_cast<size_t>(array.shape[0]));
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path, static_cast<int64_t>(array.bytes.size()), "a copy of the float32 data");
  }
  if (!out.empty()) std::memcpy(out.data(), array.bytes.data(), array.bytes.size());
  return out;
}

Status WriteNpyInt(const std::string& path, const std::vector<int64_t>& values, DType dtype) {
  NpyArray array;
  array.dtype = dtype;
  array.shape = {static_cast<int64_t>(values.size())};
  const int64_t n = static_cast<int64_t>(values.size());
  int64_t lo, hi;
  switch (dtype) {
    case DType::kUInt8:
      lo = 0;
      hi = 255;
      break;
    case DType::kInt32:
      lo = std::numeric_limits<int32_t>::min();
      hi = std::numeric_limits<int32_t>::max();
      break;
    case DType::kInt64:
      lo = std::numeric_limits<int64_t>::min();
      hi = std::numeric_limits<int64_t>::max();
      break;
    default:
      return InvalidArgumentError("cannot write " + Quoted(path) + " as integers of dtype '" + DTypeDescr(dtype) +
                                  "'; expected '|u1', '<i4' or '<i8'");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] < lo || values[i] > hi) {
      return OutOfRangeError("cannot write " + Quoted(path) + " as '" + DTypeDescr(dtype) + "': value [" +
                             std::to_string(i) + "]=" + std::to_string(values[i]) + " does not fit");
    }
  }
  array.bytes.resize(n * ItemSize(dtype));
  uint8_t* dst = array.bytes.data();
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::kUInt8) {
      dst[i] = static_cast<uint8_t>(values[i]);
    } else if (dtype == DType::kInt32) {
      int32_t v = static_cast<int32_t>(values[i]);
      std::memcpy(dst + 4 * i, &v, 4);
    }
  }
  if (dtype == DType::kInt64 && n > 0) std::memcpy(dst, values.data(), 8 * n);
  return WriteNpy(path, array);
}

Status WriteNpyFloat32(const std::string& path, const std::vector<float>& values) {
  NpyArray array;
  array.dtype = DType::kFloat32;
  array.shape = {static_cast<int64_t>(values.size())};
  array.bytes.resize(values.size() * 4);
  if (!values.empty()) std::memcpy(array.bytes.data(), values.data(), array.bytes.size());
  return WriteNpy(path, array);
}

}  // namespace npy
}  // namespace faultline
