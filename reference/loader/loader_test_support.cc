// Implements the loader test helpers.
#include "reference/loader/loader_test_support.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "reference/base/status_matchers.h"
#include "reference/base/temp_dir.h"
#include "reference/graph/generators.h"
#include "reference/graph/npy.h"

namespace faultline {

const std::string& LoaderTestDatasetDir() {
  // A static TempDir: the folder goes, with whatever a test left in it, when
  // the test binary exits (workers leave through _exit, and TempDir leaves
  // removal to the process that made it).
  static const Result<TempDir> made = TempDir::Create("", "loader_dataset_", "the loader tests' dataset folder");
  static const std::string dir = [] {
    if (!made.ok()) {
      ADD_FAILURE() << made.status();
      return std::string();
    }
    const std::string& path = made->path();
    auto graph = GeneratePowerLaw(400, 4000, 3, /*weighted=*/false);
    FL_EXPECT_OK(graph);
    if (graph.ok()) {
      FL_EXPECT_OK(graph->Save(path));
    }
    npy::NpyArray features;
    features.dtype = npy::DType::kFloat32;
    features.shape = {400, 8};
    std::vector<float> values(400 * 8);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
    features.bytes.resize(values.size() * sizeof(float));
    std::memcpy(features.bytes.data(), values.data(), features.bytes.size());
    FL_EXPECT_OK(npy::WriteNpy(path + "/features.npy", features));
    return path;
  }();
  return dir;
}

LoaderOptions LoaderTestOptions(int workers, StartMethod method) {
  LoaderOptions o;
  o.graph_dir = LoaderTestDatasetDir();
  o.fanouts = {5, 3};
  o.batch_size = 32;
  o.seed = 11;
  o.num_workers = workers;
  o.start_method = method;
  return o;
}

Result<std::vector<DescriptorTarget>> DescriptorTargets(const std::string& proc) {
  const std::string fd_dir = proc + "/fd";
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) {
    return UnavailableError("cannot list " + fd_dir + " to look for leaked segments: " + std::strerror(errno));
  }
  std::vector<DescriptorTarget> targets;
  while (dirent* e = readdir(dir)) {
    char target[1024];
    const ssize_t n = readlink((fd_dir + "/" + e->d_name).c_str(), target, sizeof(target) - 1);
    if (n > 0) targets.push_back({e->d_name, std::string(target, static_cast<size_t>(n))});
  }
  closedir(dir);
  return targets;
}

Result<std::vector<std::string>> MappedFiles(const std::string& proc) {
  std::ifstream maps(proc + "/maps");
  if (!maps) return UnavailableError("cannot read " + proc + "/maps to look for leaked segments");
  std::vector<std::string> files;
  for (std::string line; std::getline(maps, line);) {
    const size_t at = line.find('/');
    if (at != std::string::npos) files.push_back(line.substr(at));
  }
  return files;
}

Result<std::vector<std::string>> LeakedSegments(const std::string& proc, const std::string& segment_prefix) {
  // "/memfd:NAME (deleted)": the loaders' slots are memfds (CreateUnlinkedSegment).
  const std::string segment = "/memfd:" + segment_prefix.substr(1);  // no leading slash in the memfd's name
  auto is_segment = [&](const std::string& target) { return target.find(segment) != std::string::npos; };
  std::vector<std::string> held;
  FL_ASSIGN_OR_RETURN(const std::vector<DescriptorTarget> descriptors, DescriptorTargets(proc));
  for (const DescriptorTarget& d : descriptors) {
    if (is_segment(d.target)) held.push_back("fd " + d.fd + ": " + d.target);
  }
  FL_ASSIGN_OR_RETURN(const std::vector<std::string> mapped, MappedFiles(proc));
  for (const std::string& file : mapped) {
    if (is_segment(file)) held.push_back("mapped: " + file);
  }
  return held;
}

bool AppearsWithin(const std::string& path, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  struct stat st {};
  while (stat(path.c_str(), &st) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

::testing::AssertionResult NoLeftoverSegments() {
  Result<std::vector<std::string>> held = LeakedSegments();
  if (!held.ok()) return ::testing::AssertionFailure() << held.status();
  if (held->empty()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure() << "leaked shared-memory segments:";
  for (const std::string& entry : *held) failure << "\n  " << entry;
  return failure;
}

}  // namespace faultline
