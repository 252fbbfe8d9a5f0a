// smddp-diag fabric: libfabric providers and EFA counters on this host; under
// mpirun, a ping-pong latency/bandwidth matrix between the ranks.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "commands.h"
#include "smddp/tools/cli_numbers.h"
#include "smddp/tools/exit_codes.h"
#include "shared/mpi_util.h"
#include "shared/text.h"
#include "fabric/pingpong.h"
#include "fabric/providers.h"
#include "smddp/common/sizes.h"
#include "smddp/error.h"
#include "smddp/tools/exit_codes.h"
#include "system/devices.h"

namespace smddp::diag {
namespace {

std::vector<std::string> all_hostnames(MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  constexpr int kWidth = 256;
  std::string mine = hostname();
  mine.resize(kWidth);
  std::string all(static_cast<size_t>(kWidth * size), '\0');
  MPI_Allgather(mine.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.substr(static_cast<size_t>(r * kWidth)).c_str());
  return out;
}

nlohmann::json rdma_json(const std::vector<RdmaDevice>& devices) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : devices) {
    nlohmann::json dev = {{"name", d.name}, {"efa", d.efa}, {"busid", d.pci ? d.pci->busid : ""}, {"ports", nlohmann::json::array()}};
    for (const auto& p : d.ports) {
      nlohmann::json counters = nlohmann::json::object();
      for (const auto& [name, value] : p.counters) counters[name] = value;
      dev["ports"].push_back({{"port", p.port}, {"state", p.state}, {"counters", counters}});
    }
    out.push_back(dev);
  }
  return out;
}

std::string rdma_text(const std::vector<RdmaDevice>& devices, const SystemRoot& root) {
  int efa = 0;
  for (const auto& d : devices) efa += d.efa ? 1 : 0;
  std::string out;
  if (efa == 0) out += "EFA: none on this host (no device with vendor 0x1d0f under " + root.path("/sys/class/infiniband") + ")\n";
  for (const auto& d : devices) {
    out += fmt::format("RDMA device {} ({}{})\n", d.name, d.efa ? "EFA" : "not EFA", d.pci ? ", PCI " + d.pci->busid : "");
    for (const auto& p : d.ports) {
      out += p.port == 0 ? "  device counters:\n" : fmt::format("  port {}: {}\n", p.port, p.state.empty() ? "state unknown" : p.state);
      for (const auto& [name, value] : p.counters) out += fmt::format("    {:<28} {}\n", name, value);
    }
  }
  return out;
}

class FabricCommand final : public Command {
 public:
  FabricCommand(CLI::App& parent, const GlobalOptions& global) : global_(global) {
    app_ = parent.add_subcommand("fabric", "libfabric providers, EFA counters and (under mpirun) a ping-pong link matrix");
    app_->add_option("--provider", o_.provider, "libfabric provider: efa, tcp, shm, ... (default: efa when present, else tcp)");
    app_->add_option("--domain", o_.domain, "Use this libfabric domain (a NIC or EFA device name)");
    app_->add_flag("--all-providers", all_, "List every provider fi_getinfo reports, not only the chosen one");
    app_->add_flag("--json", json_, "Print JSON instead of text");
    app_->add_flag("--no-pingpong", no_pingpong_, "Only list providers and counters, even under mpirun");
    app_->add_option("--bw-bytes", bw_bytes_, "Bandwidth message size (K, M, G suffixes)")->capture_default_str();
    app_->add_option("--window", o_.bw_window, "Bandwidth messages in flight")->capture_default_str();
    app_->add_option("--bw-iters", o_.bw_iters, "Timed bandwidth windows per pair")->capture_default_str();
    app_->add_option("--latency-iters", o_.latency_iters, "Timed round trips per pair")->capture_default_str();
    tools::seconds_option(app_->add_option("--timeout", o_.timeout_s, "Seconds any single wait may take")->capture_default_str(), true);
    app_->add_option("--all-pairs-max", o_.all_pairs_max, "Test every pair up to this many ranks; sample rounds above")->capture_default_str();
    app_->add_option("--rounds", o_.sample_rounds, "Rounds of disjoint pairs when sampling")->capture_default_str();
    app_->add_option("--min-bw", t_.min_bw_gbs, "Flag links below this bandwidth, GB/s (0: off)")->capture_default_str();
    app_->add_option("--max-latency", t_.max_latency_us, "Flag links above this latency, us (0: off)")->capture_default_str();
    app_->add_option("--slow-factor", t_.slow_factor, "Flag links this many times worse than the median (0: off)")->capture_default_str();
  }

  CLI::App* app() const override { return app_; }

  void validate() override {
    root_ = SystemRoot::from_option(global_.sysfs_root);
    auto bytes = common::parse_size(bw_bytes_);
    if (!bytes || *bytes == 0) throw UsageError("--bw-bytes '" + bw_bytes_ + "' is not a positive size");
    if (*bytes > kMaxLinkMessageBytes) {
      throw UsageError("--bw-bytes '" + bw_bytes_ + "': more than " + format_bytes(kMaxLinkMessageBytes) + " per message");
    }
    o_.bw_bytes = *bytes;
    if (o_.bw_window < 1 || o_.bw_window > 128) throw UsageError("--window must be 1..128");
    if (o_.bw_iters < 1) throw UsageError("--bw-iters must be at least 1");
    if (o_.latency_iters < 1) throw UsageError("--latency-iters must be at least 1");
    if (!(o_.timeout_s > 0)) throw UsageError("--timeout must be above 0");
    if (o_.all_pairs_max < 2) throw UsageError("--all-pairs-max must be at least 2");
    if (o_.sample_rounds < 1) throw UsageError("--rounds must be at least 1");
    if (t_.min_bw_gbs < 0 || t_.max_latency_us < 0 || t_.slow_factor < 0) {
      throw UsageError("--min-bw, --max-latency and --slow-factor must not be negative");
    }
    if (t_.slow_factor > 0 && t_.slow_factor < 1) throw UsageError("--slow-factor must be 0 (off) or at least 1");
    if (app_->count("--provider") && o_.provider.empty()) throw UsageError("--provider is empty");
  }

  int run() override {
    if (o_.provider.empty() || !app_->count("--provider")) o_.provider = default_provider();
    std::string error;
    auto infos = query_providers(all_ ? "" : o_.provider, false, &error);
    if (!all_ && infos.empty()) {
      throw tools::UnavailableError(fmt::format("provider '{}' is not available on this host ({}); available: {}", o_.provider,
                                         error, join(available_providers(), ", ")));
    }
    auto rdma = discover_rdma(root_, true);
    const bool pingpong = launched_by_mpi() && !no_pingpong_;
    std::optional<MpiSession> mpi;
    if (pingpong) mpi.emplace();
    const bool leader = !mpi || mpi->rank() == 0;
    std::optional<LinkMatrix> links;
    std::vector<FlaggedLink> flagged;
    if (mpi && mpi->size() > 1) {
      try {
        links = run_pingpong(MPI_COMM_WORLD, all_hostnames(MPI_COMM_WORLD), o_);
      } catch (const tools::UnavailableError&) {
        throw;
      } catch (const std::exception& e) {
        std::cerr << "smddp-diag fabric: rank " << mpi->rank() << " (" << hostname() << "): " << e.what() << "\n";
        mpi->abort(tools::exit_code_for(e));  // a timeout is 3, as in smddp-bench
      }
      if (leader) flagged = flag_links(*links, t_);
    }
    if (leader) {
      if (json_) {
        nlohmann::json j;
        j["provider"] = o_.provider;
        j["providers"] = nlohmann::json::array();
        for (const auto& p : infos) j["providers"].push_back(provider_json(p));
        j["rdma_devices"] = rdma_json(rdma);
        if (links) j["pingpong"] = link_matrix_json(*links, flagged);
        std::cout << j.dump(2) << "\n";
      } else {
        std::cout << fmt::format("libfabric providers ({}):\n", all_ ? "all" : o_.provider) << providers_text(infos);
        std::cout << rdma_text(rdma, root_);
        if (links) {
          std::cout << "\n" << link_matrix_text(*links, flagged);
        } else if (!pingpong) {
          std::cout << "Ping-pong: not run (start under mpirun with 2 or more ranks)\n";
        } else {
          std::cout << "Ping-pong: not run (a single rank)\n";
        }
      }
      std::cout.flush();
    }
    int code = flagged.empty() ? tools::kExitOk : tools::kExitFailed;
    if (mpi) MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return code;
  }

 private:
  const GlobalOptions& global_;
  CLI::App* app_ = nullptr;
  PingPongOptions o_ = [] { PingPongOptions o; o.provider.clear(); return o; }();
  LinkThresholds t_;
  std::string bw_bytes_ = "1M";
  bool all_ = false, json_ = false, no_pingpong_ = false;
  SystemRoot root_;
};

}  // namespace

std::unique_ptr<Command> make_fabric_command(CLI::App& parent, const GlobalOptions& global) {
  return std::make_unique<FabricCommand>(parent, global);
}

}  // namespace smddp::diag
