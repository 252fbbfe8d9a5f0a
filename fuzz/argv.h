// The command-line targets' input: one argument per line (argv[0] is added).
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

}  // namespace smddp::fuzz
