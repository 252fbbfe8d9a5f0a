// smddp-bench's own data generator and checker (bench/src/sweep/data.cc), driven
// line by line from stdin, so the torch companion's Python copy can be
// compared with it bit for bit:
//
//   fill  COLLECTIVE DTYPE OP SEED NRANKS ROOT RANK COUNT      -> hex of the send elements
//   check COLLECTIVE DTYPE OP SEED NRANKS ROOT RANK COUNT HEX  -> #wrong of the output HEX
//
// COUNT is the call's count (NCCL convention); one answer line per line.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sweep/data.h"
#include "smddp/communicator.h"

using namespace smddp;

namespace {

std::string to_hex(const std::vector<unsigned char>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::vector<unsigned char> from_hex(const std::string& hex) {
  std::vector<unsigned char> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string verb, coll, dtype, op, hex;
    unsigned long long seed = 0;
    int nranks = 0, root = 0, rank = 0;
    size_t count = 0;
    in >> verb >> coll >> dtype >> op >> seed >> nranks >> root >> rank >> count;
    auto c = parse_collective(coll);
    auto t = parse_dtype(dtype);
    auto o = parse_op(op);
    if (!in || !c || !t || !o || (verb != "fill" && verb != "check")) {
      std::fprintf(stderr, "data_reference: bad line: %s\n", line.c_str());
      return 64;
    }
    bench::DataSpec spec{*c, *t, *o, seed, nranks, root};
    BufferCounts b = buffer_counts(*c, count, nranks);
    if (verb == "fill") {
      std::vector<unsigned char> buf(b.send * dtype_size(*t));
      bench::fill_send(spec, rank, buf.data(), b.send);
      std::cout << to_hex(buf) << "\n";
    } else {
      in >> hex;
      std::vector<unsigned char> buf = from_hex(hex);
      if (buf.size() != b.recv * dtype_size(*t)) {
        std::fprintf(stderr, "data_reference: %zu output bytes, expected %zu\n", buf.size(), b.recv * dtype_size(*t));
        return 64;
      }
      std::cout << bench::count_wrong(spec, rank, buf.data(), count) << "\n";
    }
  }
  return 0;
}
