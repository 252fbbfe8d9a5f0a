#include "smddp/tools/cli_numbers.h"

#include "smddp/common/numbers.h"
#include "smddp/common/strings.h"

namespace smddp::tools {
namespace {

// Not a CLI::ValidationError: CLI11 would prefix its own "--name: " to that.
class NumberError : public CLI::ParseError {
 public:
  explicit NumberError(std::string message)
      : CLI::ParseError("NumberError", std::move(message), CLI::ExitCodes::ValidationError) {}
};

enum class Kind { None, Signed, Unsigned, Real };

Kind kind_of(const CLI::Option& option) {
  // The type name, less what validators append (":POSITIVE", ...).
  const std::string full = option.get_type_name();
  const std::string type = full.substr(0, full.find(':'));
  if (type == "INT") return Kind::Signed;
  if (type == "UINT") return Kind::Unsigned;
  if (type == "FLOAT" || type == "NUMBER") return Kind::Real;
  return Kind::None;
}

[[noreturn]] void refuse(const std::string& label, const std::string& text, const std::string& why,
                         const std::string& expected) {
  throw NumberError(label + " '" + text + "': " + why + "; expected " + expected);
}

}  // namespace

std::string option_label(const CLI::Option& option) {
  std::string label;
  if (!option.get_snames().empty()) label = "-" + option.get_snames().front();
  if (!option.get_lnames().empty()) label += (label.empty() ? "--" : "/--") + option.get_lnames().front();
  return label.empty() ? option.get_single_name() : label;
}

void decimal_numbers_only(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const Kind kind = kind_of(*option);
    if (kind == Kind::None) continue;
    const std::string label = option_label(*option);
    // A transform: the text CLI11 then converts is rewritten in plain
    // decimal ("010" -> "10", which strtol(.., 0) would read as 8).
    option->transform(CLI::Validator(
        [kind, label](std::string& text) -> std::string {
          std::string why;
          if (kind == Kind::Real) {
            if (!common::parse_number(text, &why)) refuse(label, text, why, "a decimal number");
            text = std::string(common::trim(text));
          } else if (kind == Kind::Signed) {
            const auto v = common::parse_integer(text, &why);
            if (!v) refuse(label, text, why, "a whole decimal number");
            text = std::to_string(*v);
          } else {
            const auto v = common::parse_unsigned(text, &why);
            if (!v) refuse(label, text, why, "a whole decimal number >= 0");
            text = std::to_string(*v);
          }
          return "";
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) decimal_numbers_only(*sub);
}

CLI::Option* seconds_option(CLI::Option* option, bool positive) {
  const std::string label = option_label(*option);
  return option->check(CLI::Validator(
      [label, positive](std::string& text) -> std::string {
        std::string why;
        if (!common::parse_seconds(text, positive, &why)) refuse(label, text, why, common::seconds_expectation(positive));
        return "";
      },
      ""));
}

}  // namespace smddp::tools
