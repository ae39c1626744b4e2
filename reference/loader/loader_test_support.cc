// Implements the loader test helpers.
#include "reference/loader/loader_test_support.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "reference/graph/generators.h"
#include "reference/graph/npy.h"

namespace faultline {

const std::string& LoaderTestDatasetDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string path = std::string(tmp ? tmp : "/tmp") + "/loader_dataset_" + std::to_string(getpid());
    mkdir(path.c_str(), 0755);
    auto graph = GeneratePowerLaw(400, 4000, 3, /*weighted=*/false);
    EXPECT_TRUE(graph.ok() && graph->Save(path).ok());
    npy::NpyArray features;
    features.dtype = npy::DType::kFloat32;
    features.shape = {400, 8};
    std::vector<float> values(400 * 8);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
    features.bytes.resize(values.size() * sizeof(float));
    std::memcpy(features.bytes.data(), values.data(), features.bytes.size());
    EXPECT_TRUE(npy::WriteNpy(path + "/features.npy", features).ok());
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

Result<std::vector<std::string>> LeftoverSegments(const std::string& dir_path, const std::string& segment_prefix) {
  DIR* dir = opendir(dir_path.c_str());
  if (dir == nullptr) {
    return UnavailableError("cannot list " + dir_path + " to look for leaked segments: " + std::strerror(errno));
  }
  std::vector<std::string> names;
  const std::string prefix = segment_prefix.substr(1);  // the file name: no leading slash
  while (dirent* e = readdir(dir)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.push_back(e->d_name);
  }
  closedir(dir);
  return names;
}

::testing::AssertionResult NoLeftoverSegments() {
  Result<std::vector<std::string>> names = LeftoverSegments();
  if (!names.ok()) return ::testing::AssertionFailure() << names.status();
  if (names->empty()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure() << "leaked shared-memory segments:";
  for (const std::string& name : *names) failure << " /dev/shm/" << name;
  return failure;
}

}  // namespace faultline
