// CLI11 reads "0x10" as 16 and "010" as 8 for integer options, "inf", "1e999"
// (infinity) and "0x1p4" for floating ones, and lets "-1" wrap for unsigned
// 64-bit ones. These helpers hold every tool's numeric options to the one
// decimal grammar of smddp/common/numbers.h, and every time option to
// common::kMaxSeconds, with one line naming the option and what is wrong:
//   --timeout '0x10': hexadecimal; expected a decimal number
// The error is a CLI::ParseError, so each tool's existing handler prints it
// (one line, exit 64, before any work).
#pragma once

#include <CLI/CLI.hpp>

namespace smddp::tools {

// Every option of `app` and of all its subcommands whose type is a number
// (CLI11's INT, UINT, FLOAT, NUMBER; lists of them too) takes decimal text
// only. Call it once, after every option is added.
void decimal_numbers_only(CLI::App& app);

// `option` is a number of seconds, 0..kMaxSeconds (with `positive`, above 0).
CLI::Option* seconds_option(CLI::Option* option, bool positive = false);

// How the messages name an option: "-T/--timeout", "--interval", "results".
std::string option_label(const CLI::Option& option);

}  // namespace smddp::tools
