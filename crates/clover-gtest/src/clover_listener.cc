// clover's record of a GoogleTest run, linked into every test binary clover builds.
//
// A static object appends a listener to GoogleTest's list before `main` runs, whoever owns
// `main`. As each test that failed ends, the listener writes one line to the run's report
// channel (the descriptor named by CLOVER_REPORT_FD, a pipe only the host reads), and one
// more when the program's tests are done:
//
//   clover-failed <TAB> suite <TAB> name <LF>
//   clover-end <TAB> passed <TAB> failed <LF>
//
// Only failures are named, so the record stays small however many tests pass.
//
// The lines leave the process as the tests end, before GoogleTest writes its XML report, so
// whatever the binary does to its report afterwards (a static destructor, an atexit handler,
// a signal handler that rewrites the file and exits 0) no longer matches what was sent.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

class CloverRecord : public ::testing::EmptyTestEventListener {
 public:
  CloverRecord(int fd, pid_t pid) : fd_(fd), pid_(pid) {}

  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    Send(std::string("clover-failed\t") + info.test_suite_name() + "\t" + info.name() + "\n");
  }

  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    Send("clover-end\t" + std::to_string(unit.successful_test_count()) + "\t" +
         std::to_string(unit.failed_test_count()) + "\n");
  }

 private:
  // Only the process that ran the static initializer writes: a death test's child, which
  // shares the descriptor, does not.
  void Send(const std::string& line) {
    if (getpid() != pid_) return;
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      p += n;
      left -= static_cast<size_t>(n);
    }
  }

  int fd_;
  pid_t pid_;
};

struct Install {
  Install() {
    const char* fd = std::getenv("CLOVER_REPORT_FD");
    if (fd == nullptr || *fd == '\0') return;
    ::testing::UnitTest::GetInstance()->listeners().Append(
        new CloverRecord(std::atoi(fd), getpid()));
  }
};

const Install install;

}  // namespace
