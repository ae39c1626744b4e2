#include "reference/base/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <type_traits>
#include <utility>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

static_assert(!std::is_copy_constructible_v<UniqueFd> && !std::is_copy_assignable_v<UniqueFd>,
              "a copy would close the descriptor twice");
static_assert(std::is_nothrow_move_constructible_v<UniqueFd> && std::is_nothrow_move_assignable_v<UniqueFd>,
              "a vector of them moves, not copies, when it grows");

// A fresh descriptor (-1 when none can be opened: the test fails there).
int OpenDevNull() {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) ADD_FAILURE() << "open /dev/null: " << std::strerror(errno);
  return fd;
}

// Whether `fd` names an open descriptor of this process; any failure
// other than EBADF fails the test. The tests start no thread, so a number
// closed here is not given to anything else in between.
bool IsOpen(int fd) {
  errno = 0;
  if (fcntl(fd, F_GETFD) != -1) return true;
  EXPECT_EQ(errno, EBADF) << "fcntl(" << fd << ", F_GETFD): " << std::strerror(errno);
  return false;
}

TEST(UniqueFdTest, EmptyByDefault) {
  UniqueFd fd;
  EXPECT_FALSE(fd.valid());
  EXPECT_EQ(fd.get(), -1);
  EXPECT_FALSE(UniqueFd(-1).valid());
}

TEST(UniqueFdTest, ClosesOnDestruction) {
  const int raw = OpenDevNull();
  {
    UniqueFd fd(raw);
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(fd.get(), raw);
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
}

TEST(UniqueFdTest, MoveConstructionTransfersOwnership) {
  const int raw = OpenDevNull();
  UniqueFd from(raw);
  {
    UniqueFd to(std::move(from));
    EXPECT_FALSE(from.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
    EXPECT_EQ(from.get(), -1);
    EXPECT_EQ(to.get(), raw);
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));  // closed by `to`, once
}

TEST(UniqueFdTest, MoveAssignmentClosesWhatTheTargetHeld) {
  const int first = OpenDevNull();
  const int second = OpenDevNull();
  UniqueFd a(first);
  UniqueFd b(second);
  b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.get(), first);
  EXPECT_TRUE(IsOpen(first));
  EXPECT_FALSE(IsOpen(second));
}

TEST(UniqueFdTest, SelfMoveKeepsTheDescriptorOpen) {
  const int raw = OpenDevNull();
  UniqueFd fd(raw);
  UniqueFd& same = fd;  // through a reference: the compiler would warn about fd = std::move(fd)
  fd = std::move(same);
  EXPECT_EQ(fd.get(), raw);
  EXPECT_TRUE(IsOpen(raw));
}

TEST(UniqueFdTest, ReleaseGivesTheDescriptorUpWithoutClosingIt) {
  const int raw = OpenDevNull();
  {
    UniqueFd fd(raw);
    EXPECT_EQ(fd.release(), raw);
    EXPECT_FALSE(fd.valid());
  }
  EXPECT_TRUE(IsOpen(raw));
  close(raw);
}

TEST(UniqueFdTest, ResetClosesTheOldDescriptorAndTakesTheNew) {
  const int first = OpenDevNull();
  const int second = OpenDevNull();
  UniqueFd fd(first);
  fd.reset(second);
  EXPECT_FALSE(IsOpen(first));
  EXPECT_EQ(fd.get(), second);
  fd.reset();
  EXPECT_FALSE(IsOpen(second));
  EXPECT_FALSE(fd.valid());
}

TEST(UniqueFdTest, ResetToTheSameDescriptorKeepsItOpen) {
  const int raw = OpenDevNull();
  UniqueFd fd(raw);
  fd.reset(raw);
  EXPECT_EQ(fd.get(), raw);
  EXPECT_TRUE(IsOpen(raw));
}

// A caller reports the error that made it give up after the descriptor is
// closed (`return ErrnoError(...)` with a UniqueFd in scope).
TEST(UniqueFdTest, ClosingKeepsErrno) {
  UniqueFd fd(OpenDevNull());
  errno = ENOSPC;
  fd.reset();
  EXPECT_EQ(errno, ENOSPC);
}

TEST(UniqueFdTest, CloseClosesAndReportsSuccess) {
  const int raw = OpenDevNull();
  UniqueFd fd(raw);
  FL_EXPECT_OK(fd.Close());
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(IsOpen(raw));
  FL_EXPECT_OK(fd.Close());  // none held: nothing to close
}

TEST(UniqueFdTest, CloseReportsTheErrorOfANumberThatWasNotOpen) {
  const int raw = OpenDevNull();
  ASSERT_EQ(close(raw), 0);
  UniqueFd fd(raw);
  EXPECT_THAT(fd.Close(), StatusIs(StatusCode::kUnavailable, "close failed: Bad file descriptor"));
  EXPECT_FALSE(fd.valid());  // given up either way: never closed a second time
}

}  // namespace
}  // namespace faultline
