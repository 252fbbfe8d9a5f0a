#!/usr/bin/env bash
# Installs every build, run and test dependency of smddp-bench from Debian's
# packages. Idempotent: quiet when everything is already installed, loud and
# non-zero when an install fails.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin
  libfabric-dev libfabric-bin
  libhwloc-dev hwloc
  libfmt-dev libbenchmark-dev libgtest-dev libgmock-dev
  prometheus-cpp-dev nlohmann-json3-dev libcli11-dev libyaml-cpp-dev libssl-dev
  prometheus prometheus-pushgateway
  python3 python3-scipy shellcheck iproute2 iperf3 procps curl
  # Fuzzing (clang's libFuzzer), browser tests of reports, the chart library
  # inlined into reports, the torch companion (gloo, CPU) and Kubernetes
  # manifest validation.
  # libclang-rt-16-dev: the sanitizer and libFuzzer runtimes clang-16 links
  # (-fsanitize=fuzzer,address,undefined; libfuzzer-16-dev alone has only libFuzzer.a).
  clang-16 libfuzzer-16-dev libclang-rt-16-dev
  chromium libjs-chart.js
  python3-torch python3-kubernetes python3-yaml
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get update -q >/dev/null; then
  echo "install-deps: apt-get update failed" >&2
  exit 1
fi
# The servers are test-only: never start them as system services here.
if ! "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/smddp-install-deps.log 2>&1; then
  cat /tmp/smddp-install-deps.log >&2
  echo "install-deps: apt-get install failed for: ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: done" >&2
