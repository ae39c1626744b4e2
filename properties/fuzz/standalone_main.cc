// A main for the fuzz targets when they are built without libFuzzer (the
// project's gcc build, plain and under ASan+UBSan): the `fuzz`-tagged smoke
// tests run it on each target's seed corpus.
//
//   <target> [-mutations=N] FILE_OR_FOLDER...
//
// Runs LLVMFuzzerTestOneInput on every file given (a folder: every file in
// it), then on N deterministic mutations of each (default 200): bit flips,
// interesting bytes, byte insertions and deletions, truncations and
// duplicated chunks, drawn from a fixed-seed PRNG. Prints how many inputs
// ran. A failed check or sanitizer report ends the process as under
// libFuzzer; the input being run is then named on stderr and its bytes are
// written to fuzz-crash-input in $TEST_UNDECLARED_OUTPUTS_DIR (else the
// working folder). Exit 0 when every input ran, 2 for a usage error or when
// no input file was found (a smoke run over nothing must not pass).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "reference/base/unique_fd.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Provided by the sanitizer runtimes (ASan, UBSan); null in a plain build.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

// What runs now, for the death report (plain data: read in a signal handler).
const uint8_t* g_data = nullptr;
size_t g_size = 0;
char g_label[512] = "";
char g_crash_path[4096] = "fuzz-crash-input";

void WriteText(const char* text) { (void)!write(STDERR_FILENO, text, strlen(text)); }

// Names the input and saves its bytes; async-signal-safe.
void ReportCurrentInput() {
  if (g_label[0] == '\0') return;
  WriteText("standalone fuzz driver: the process died on ");
  WriteText(g_label);
  WriteText("; its bytes are in ");
  WriteText(g_crash_path);
  WriteText("\n");
  const faultline::UniqueFd fd(open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  if (fd.valid()) (void)!write(fd.get(), g_data, g_size);
  g_label[0] = '\0';
}

void OnFatalSignal(int sig) {
  ReportCurrentInput();
  signal(sig, SIG_DFL);
  raise(sig);
}

// splitmix64: a small PRNG with a fixed seed, so every run mutates alike.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
};

// Applies one to four random edits to `input`.
std::string Mutate(std::string input, Rng& rng) {
  static const unsigned char kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '0', '9', '-', ',',
                                               ' ',  '\'', '"',  '{',  '}',  '(', ')', ':', '\n'};
  const int edits = 1 + static_cast<int>(rng.Below(4));
  for (int e = 0; e < edits; ++e) {
    const size_t pos = rng.Below(input.size() + 1);
    switch (rng.Below(6)) {
      case 0:  // flip a bit
        if (!input.empty()) input[std::min(pos, input.size() - 1)] ^= static_cast<char>(1u << rng.Below(8));
        break;
      case 1:  // an interesting byte
        if (!input.empty()) {
          input[std::min(pos, input.size() - 1)] = static_cast<char>(kInteresting[rng.Below(sizeof(kInteresting))]);
        }
        break;
      case 2:  // insert a random byte
        input.insert(pos, 1, static_cast<char>(rng.Next() & 0xff));
        break;
      case 3:  // delete a byte
        if (pos < input.size()) input.erase(pos, 1);
        break;
      case 4:  // truncate
        input.resize(pos);
        break;
      case 5: {  // duplicate a chunk of up to 16 bytes at another place
        if (input.empty()) break;
        const size_t from = rng.Below(input.size());
        const std::string chunk = input.substr(from, 1 + rng.Below(16));
        input.insert(rng.Below(input.size() + 1), chunk);
        break;
      }
    }
  }
  return input;
}

void Run(const std::string& bytes, const std::string& label) {
  g_data = reinterpret_cast<const uint8_t*>(bytes.data());
  g_size = bytes.size();
  std::snprintf(g_label, sizeof(g_label), "%s", label.c_str());
  LLVMFuzzerTestOneInput(g_data, g_size);
  g_label[0] = '\0';
}

// Appends `path` (a file) or the files of `path` (a folder), sorted.
void CollectFiles(const std::string& path, std::vector<std::string>* files) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "standalone fuzz driver: cannot read %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(path);
    return;
  }
  std::vector<std::string> entries;
  if (DIR* dir = opendir(path.c_str())) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') entries.push_back(path + "/" + entry->d_name);
    }
    closedir(dir);
  }
  std::sort(entries.begin(), entries.end());
  for (const std::string& entry : entries) CollectFiles(entry, files);
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 200;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("-mutations=", 0) == 0) {
      char* end = nullptr;
      mutations = std::strtol(arg.c_str() + 11, &end, 10);
      if (*end != '\0' || mutations < 0) {
        std::fprintf(stderr, "standalone fuzz driver: %s; expected -mutations=N with N >= 0\n", arg.c_str());
        return 2;
      }
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "standalone fuzz driver: ignoring %s (a libFuzzer flag?)\n", arg.c_str());
    } else {
      CollectFiles(arg, &files);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [-mutations=N] FILE_OR_FOLDER...: no input file given\n", argv[0]);
    return 2;
  }
  if (const char* out = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    std::snprintf(g_crash_path, sizeof(g_crash_path), "%s/fuzz-crash-input", out);
  }
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(ReportCurrentInput);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, OnFatalSignal);

  const auto start = std::chrono::steady_clock::now();
  uint64_t runs = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    std::ifstream in(files[f], std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    const std::string seed = bytes.str();
    Run(seed, files[f]);
    ++runs;
    Rng rng{0x5EEDF00Dull + f};
    for (long m = 0; m < mutations; ++m) {
      Run(Mutate(seed, rng), files[f] + " mutation " + std::to_string(m));
      ++runs;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("standalone fuzz driver: ran %llu inputs (%zu files x (1 + %ld mutations)) in %.2f s\n",
              static_cast<unsigned long long>(runs), files.size(), mutations, seconds);
  return 0;
}
