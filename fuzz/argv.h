// The command-line targets' input: one argument per line (argv[0] is added),
// and their start-up.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"

namespace smddp::fuzz {

class Argv {
 public:
  Argv(const char* program, std::string_view text) {
    words_.emplace_back(program);
    size_t start = 0;
    while (start < text.size() && words_.size() < 64) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      words_.emplace_back(text.substr(start, end - start));
      start = end + 1;
    }
    for (auto& w : words_) pointers_.push_back(w.data());
    pointers_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(words_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> words_;
  std::vector<char*> pointers_;
};

// A tool's parser may write files the arguments name and print help: work in
// a private scratch directory (mkdtemp's template), with stdout discarded.
inline void enter_scratch_directory(const char* tool) {
  std::string dir = std::string("/tmp/smddp-fuzz-") + tool + "-XXXXXX";
  FUZZ_CHECK(mkdtemp(dir.data()) != nullptr);
  FUZZ_CHECK(chdir(dir.c_str()) == 0);
  const int null = open("/dev/null", O_WRONLY);
  FUZZ_CHECK(null >= 0 && dup2(null, STDOUT_FILENO) >= 0);
}

}  // namespace smddp::fuzz
