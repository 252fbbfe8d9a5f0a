#include "pushgateway.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cctype>

#include "smddp/telemetry/endpoint.h"
#include "smddp/error.h"

namespace smddp::telemetry {
namespace {

constexpr long kConnectTimeoutMs = 2000;
constexpr long kRequestTimeoutMs = 5000;
constexpr size_t kMaxErrorBody = 200;

bool plain_segment(const std::string& value) {
  return !value.empty() && std::all_of(value.begin(), value.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == '-';
  });
}

std::string base64url(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  const size_t left = in.size() - i;
  if (left > 0) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (left == 2) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += left == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out.empty() ? "=" : out;  // the gateway spells an empty value "="
}

// http(s)://HOST[:PORT][/PATH] -> the same without a trailing '/'.
std::string checked_base_url(const std::string& url) {
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("--pushgateway: '{}' is not a valid URL ({})", url, why));
  };
  auto scheme = split_scheme(url);
  if (!scheme) throw bad("expected http://HOST[:PORT]");
  if (scheme->first != "http" && scheme->first != "https") throw bad("scheme must be http or https");
  const std::string& rest = scheme->second;
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) throw bad("credentials in the URL are not supported");
  if (!parse_host_port(authority, scheme->first == "https" ? 443 : 80)) throw bad("bad host or port");
  if (path.find_first_of("?# ") != std::string::npos) throw bad("no query, fragment or spaces");
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

size_t collect_body(char* data, size_t size, size_t count, void* out) {
  auto* body = static_cast<std::string*>(out);
  if (body->size() < kMaxErrorBody) body->append(data, std::min(size * count, kMaxErrorBody - body->size()));
  return size * count;
}

}  // namespace

std::string grouping_segment(const std::string& name, const std::string& value) {
  if (plain_segment(value)) return name + "/" + value;
  return name + "@base64/" + base64url(value);
}

Pushgateway::Pushgateway(const std::string& url, const std::string& job, const std::string& instance,
                         std::shared_ptr<prometheus::Collectable> metrics)
    : metrics_(std::move(metrics)) {
  if (job.empty()) throw UsageError("--job: the job name must not be empty");
  group_url_ = checked_base_url(url) + "/metrics/" + grouping_segment("job", job);
  if (!instance.empty()) group_url_ += "/" + grouping_segment("instance", instance);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  curl_ = curl_easy_init();
  if (curl_ == nullptr) throw Error("cannot initialise libcurl");
}

Pushgateway::~Pushgateway() {
  curl_easy_cleanup(static_cast<CURL*>(curl_));
  curl_global_cleanup();
}

void Pushgateway::push() {
  const std::string body = prometheus::TextSerializer().Serialize(metrics_->Collect());
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: text/plain; version=0.0.4; charset=utf-8");
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  std::string response;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl, CURLOPT_URL, group_url_.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, kRequestTimeoutMs);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    throw Error(fmt::format("push to {} failed: {}", group_url_, error[0] != '\0' ? error : curl_easy_strerror(rc)));
  }
  if (status < 200 || status >= 300) {
    std::replace(response.begin(), response.end(), '\n', ' ');
    throw Error(fmt::format("push to {} failed: HTTP {} {}", group_url_, status, response));
  }
}

}  // namespace smddp::telemetry
