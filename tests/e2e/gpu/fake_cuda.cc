// A stand-in for the CUDA runtime and a one-rank NCCL, LD_PRELOADed into
// smddp-bench / smddp-diag by the tests that run on hosts without a GPU
// (gpu_e2e.py fake_*). "Device memory" is host memory, but the ordering
// rules are CUDA's, so ordering bugs show up as wrong values:
//  - work on a stream runs only when something waits for it (a stream or
//    event synchronise or query, cudaStreamWaitEvent, a synchronous copy):
//    as late as CUDA allows, never earlier than a wait forces;
//  - the legacy default stream (0) waits for, and is waited for by, blocking
//    streams (cudaStreamCreate) but not cudaStreamNonBlocking ones;
//  - cudaMemset and a pageable host-to-device cudaMemcpy are queued on the
//    legacy stream (CUDA returns before the DMA is done).
// Environment:
//  FAKE_CUDA_LOG=PATH        one line per call: "pid ppid name args"
//  FAKE_CUDA_DEVICES=N       device count (default 1); "insufficient": the
//                            runtime's cudaErrorInsufficientDriver, 0: none
//  FAKE_CUDA_MAX_PITCH=B     cudaDevAttrMaxPitch (default 2^31 - 1)
//  FAKE_CUDA_BUSIDS=a,b      PCI bus ids of the devices (ordinal order)
//  FAKE_CUDA_FAIL_WAITS=N    the N+1-th wait (query/synchronise) fails with
//                            cudaErrorLaunchFailure
// Kernels cannot run here: tests avoid the ops that launch them (avg).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

std::recursive_mutex g_mu;

void log_call(const char* fmt, ...) {
  const char* path = std::getenv("FAKE_CUDA_LOG");
  if (!path || !*path) return;
  char line[512];
  int n = std::snprintf(line, sizeof line, "%d %d ", static_cast<int>(getpid()), static_cast<int>(getppid()));
  va_list ap;
  va_start(ap, fmt);
  n += std::vsnprintf(line + n, sizeof line - n, fmt, ap);
  va_end(ap);
  if (n >= static_cast<int>(sizeof line) - 1) n = sizeof line - 2;
  line[n++] = '\n';
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, line, static_cast<size_t>(n));
  (void)w;
  close(fd);
}

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

struct FakeStream {
  bool blocking = true;
  std::deque<std::function<void()>> work;
};

FakeStream g_legacy;
std::vector<FakeStream*> g_streams;            // blocking and non-blocking, alive
std::map<const char*, size_t> g_device_allocs;  // device "memory": start -> bytes
std::map<const char*, size_t> g_pinned;         // cudaHostAlloc / cudaMallocHost
thread_local int t_device = 0;
long g_waits = 0;

FakeStream* stream_of(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return &g_legacy;
  return reinterpret_cast<FakeStream*>(s);
}

void drain(FakeStream* s) {
  while (!s->work.empty()) {
    auto fn = std::move(s->work.front());
    s->work.pop_front();
    fn();
  }
}

// The legacy stream's implicit synchronisation with blocking streams.
void enqueue(cudaStream_t handle, std::function<void()> fn) {
  FakeStream* s = stream_of(handle);
  if (s == &g_legacy) {
    for (FakeStream* b : g_streams) {
      if (b->blocking) drain(b);
    }
  } else if (s->blocking) {
    drain(&g_legacy);
  }
  s->work.push_back(std::move(fn));
}

bool in_map(const std::map<const char*, size_t>& m, const void* p) {
  const char* c = static_cast<const char*>(p);
  auto it = m.upper_bound(c);
  if (it == m.begin()) return false;
  --it;
  return c >= it->first && c < it->first + std::max<size_t>(it->second, 1);
}

bool is_device(const void* p) { return in_map(g_device_allocs, p); }

// A wait on device work; FAKE_CUDA_FAIL_WAITS makes one fail.
cudaError_t waited() {
  const long fail_after = env_long("FAKE_CUDA_FAIL_WAITS", -1);
  if (fail_after >= 0 && g_waits++ >= fail_after) return cudaErrorLaunchFailure;
  return cudaSuccess;
}

struct FakeEvent {
  FakeStream* stream = nullptr;
  bool done = true;
};

int device_count_setting(cudaError_t* rc) {
  const char* v = std::getenv("FAKE_CUDA_DEVICES");
  *rc = cudaSuccess;
  if (v && std::strcmp(v, "insufficient") == 0) {
    *rc = cudaErrorInsufficientDriver;
    return 0;
  }
  const long n = v && *v ? std::strtol(v, nullptr, 10) : 1;
  if (n <= 0) *rc = cudaErrorNoDevice;
  return static_cast<int>(n > 0 ? n : 0);
}

size_t nccl_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

struct PendingP2p {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t bytes = 0;
  cudaStream_t stream = nullptr;
};
std::vector<PendingP2p> g_group_sends, g_group_recvs;
int g_group_depth = 0;

}  // namespace

extern "C" {

// ---- what smddp-bench and smddp-diag call, in the order of cuda_runtime_api.h

cudaError_t cudaGetDeviceCount(int* count) {
  std::lock_guard lock(g_mu);
  cudaError_t rc;
  *count = device_count_setting(&rc);
  log_call("cudaGetDeviceCount %d rc=%d", *count, static_cast<int>(rc));
  return rc;
}

cudaError_t cudaSetDevice(int device) {
  cudaError_t rc;
  const int n = device_count_setting(&rc);
  log_call("cudaSetDevice %d", device);
  if (device < 0 || device >= n) return cudaErrorInvalidDevice;
  t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = t_device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrMaxPitch: *value = static_cast<int>(env_long("FAKE_CUDA_MAX_PITCH", 2147483647L)); break;
    case cudaDevAttrMultiProcessorCount: *value = 4; break;
    default: *value = 0; break;
  }
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "Fake GPU %d", device);
  prop->totalGlobalMem = size_t{16} << 30;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus, int len, int device) {
  std::string ids = std::getenv("FAKE_CUDA_BUSIDS") ? std::getenv("FAKE_CUDA_BUSIDS") : "";
  std::vector<std::string> list;
  for (size_t start = 0; start < ids.size();) {
    size_t comma = ids.find(',', start);
    if (comma == std::string::npos) comma = ids.size();
    list.push_back(ids.substr(start, comma - start));
    start = comma + 1;
  }
  char fallback[32];
  std::snprintf(fallback, sizeof fallback, "0000:%02x:00.0", 0x10 + device);
  const std::string id = device < static_cast<int>(list.size()) ? list[device] : fallback;
  std::snprintf(bus, static_cast<size_t>(len), "%s", id.c_str());
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = size_t{16} << 30;
  *free_bytes = size_t{15} << 30;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) { return cudaSuccess; }

const char* cudaGetErrorName(cudaError_t rc) {
  switch (rc) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorInvalidPitchValue: return "cudaErrorInvalidPitchValue";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t rc) {
  switch (rc) {
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    default: return cudaGetErrorName(rc);
  }
}

cudaError_t cudaStreamCreate(cudaStream_t* s) {
  std::lock_guard lock(g_mu);
  auto* fs = new FakeStream;
  g_streams.push_back(fs);
  *s = reinterpret_cast<cudaStream_t>(fs);
  log_call("cudaStreamCreate %p blocking", static_cast<void*>(fs));
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  std::lock_guard lock(g_mu);
  auto* fs = new FakeStream;
  fs->blocking = (flags & cudaStreamNonBlocking) == 0;
  g_streams.push_back(fs);
  *s = reinterpret_cast<cudaStream_t>(fs);
  log_call("cudaStreamCreate %p %s", static_cast<void*>(fs), fs->blocking ? "blocking" : "non-blocking");
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::lock_guard lock(g_mu);
  FakeStream* fs = stream_of(s);
  if (fs == &g_legacy) return cudaSuccess;
  drain(fs);
  for (size_t i = 0; i < g_streams.size(); ++i) {
    if (g_streams[i] == fs) g_streams.erase(g_streams.begin() + static_cast<long>(i));
  }
  delete fs;
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t e, unsigned) {
  std::lock_guard lock(g_mu);
  auto* fe = reinterpret_cast<FakeEvent*>(e);
  if (fe->stream) drain(fe->stream);  // the event's work runs no later than the waiter's next work
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  std::lock_guard lock(g_mu);
  FakeStream* fs = stream_of(s);
  if (fs == &g_legacy) {
    for (FakeStream* b : g_streams) {
      if (b->blocking) drain(b);
    }
  }
  drain(fs);
  return waited();
}

cudaError_t cudaStreamQuery(cudaStream_t s) { return cudaStreamSynchronize(s); }

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = reinterpret_cast<cudaEvent_t>(new FakeEvent);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  std::lock_guard lock(g_mu);
  auto* fe = reinterpret_cast<FakeEvent*>(e);
  fe->stream = stream_of(s);
  fe->done = false;
  enqueue(s, [fe] { fe->done = true; });
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::lock_guard lock(g_mu);
  auto* fe = reinterpret_cast<FakeEvent*>(e);
  if (fe->stream) drain(fe->stream);
  return waited();
}

cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<FakeEvent*>(e);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  std::lock_guard lock(g_mu);
  *p = std::malloc(std::max<size_t>(bytes, 1));
  std::memset(*p, 0x5c, bytes);  // not what anyone expects
  g_device_allocs[static_cast<char*>(*p)] = bytes;
  log_call("cudaMalloc %zu on %d", bytes, t_device);
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  std::lock_guard lock(g_mu);
  if (!p) return cudaSuccess;
  drain(&g_legacy);
  for (FakeStream* s : g_streams) drain(s);
  g_device_allocs.erase(static_cast<char*>(p));
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  std::lock_guard lock(g_mu);
  *p = std::malloc(std::max<size_t>(bytes, 1));
  g_pinned[static_cast<char*>(*p)] = bytes;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned) { return cudaMallocHost(p, bytes); }

cudaError_t cudaFreeHost(void* p) {
  std::lock_guard lock(g_mu);
  if (!p) return cudaSuccess;
  drain(&g_legacy);
  for (FakeStream* s : g_streams) drain(s);
  g_pinned.erase(static_cast<char*>(p));
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* a, const void* p) {
  std::lock_guard lock(g_mu);
  std::memset(a, 0, sizeof *a);
  a->type = is_device(p) ? cudaMemoryTypeDevice : (in_map(g_pinned, p) ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered);
  a->device = t_device;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind) {
  std::lock_guard lock(g_mu);
  // Synchronous on the legacy stream, except that a pageable host-to-device
  // copy may return before the data reached the device: queued.
  cudaStreamSynchronize(nullptr);
  if (is_device(dst) && !is_device(src) && !in_map(g_pinned, src)) {
    std::vector<char> staged(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
    enqueue(nullptr, [dst, staged] { std::memcpy(dst, staged.data(), staged.size()); });
    return cudaSuccess;
  }
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind, cudaStream_t s) {
  std::lock_guard lock(g_mu);
  enqueue(s, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind, cudaStream_t s) {
  std::lock_guard lock(g_mu);
  const auto most = static_cast<size_t>(env_long("FAKE_CUDA_MAX_PITCH", 2147483647L));
  log_call("cudaMemcpy2DAsync dpitch=%zu spitch=%zu width=%zu rows=%zu", dpitch, spitch, width, height);
  if (dpitch > most || spitch > most || width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
  enqueue(s, [=] {
    for (size_t r = 0; r < height; ++r) {
      std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
    }
  });
  return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  std::lock_guard lock(g_mu);
  enqueue(nullptr, [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
  std::lock_guard lock(g_mu);
  enqueue(s, [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) {
  log_call("cudaLaunchKernel (not supported by the fake)");
  return cudaErrorNotSupported;
}

// dlopen of the driver libraries is what "CUDA / NVML initialised in this
// process" means on a real node: logged, then passed on.
void* dlopen(const char* name, int flags) {
  using Real = void* (*)(const char*, int);
  static Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "dlopen"));
  if (name && (std::strstr(name, "libcuda.so") || std::strstr(name, "nvidia-ml"))) log_call("dlopen %s", name);
  return real(name, flags);
}

// ---- NCCL, one rank: every collective is a copy on the given stream.

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof *id);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t*) {
  log_call("ncclCommInitRankConfig nranks=%d rank=%d device=%d", nranks, rank, t_device);
  if (nranks != 1) return ncclInvalidUsage;
  *comm = reinterpret_cast<ncclComm_t>(new int(1));
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* state) {
  *state = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommFinalize(ncclComm_t) { return ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete reinterpret_cast<int*>(comm);
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }
const char* ncclGetErrorString(ncclResult_t) { return "fake NCCL error"; }
const char* ncclGetLastError(ncclComm_t) { return ""; }

static ncclResult_t copy_on(const void* send, void* recv, size_t bytes, cudaStream_t s) {
  if (send != recv) cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDefault, s);
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t, ncclComm_t,
                           cudaStream_t s) {
  return copy_on(send, recv, count * nccl_size(t), s);
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t t, ncclComm_t, cudaStream_t s) {
  return copy_on(send, recv, count * nccl_size(t), s);
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t, ncclComm_t,
                               cudaStream_t s) {
  return copy_on(send, recv, count * nccl_size(t), s);
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int, ncclComm_t,
                           cudaStream_t s) {
  return copy_on(send, recv, count * nccl_size(t), s);
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t, int, ncclComm_t,
                        cudaStream_t s) {
  return copy_on(send, recv, count * nccl_size(t), s);
}
ncclResult_t ncclGroupStart() {
  ++g_group_depth;
  return ncclSuccess;
}
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t t, int, ncclComm_t, cudaStream_t s) {
  g_group_sends.push_back({send, nullptr, count * nccl_size(t), s});
  return ncclSuccess;
}
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t t, int, ncclComm_t, cudaStream_t s) {
  g_group_recvs.push_back({nullptr, recv, count * nccl_size(t), s});
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (--g_group_depth > 0) return ncclSuccess;
  if (g_group_sends.size() != g_group_recvs.size()) return ncclInvalidUsage;
  for (size_t i = 0; i < g_group_sends.size(); ++i) {
    copy_on(g_group_sends[i].send, g_group_recvs[i].recv, g_group_recvs[i].bytes, g_group_recvs[i].stream);
  }
  g_group_sends.clear();
  g_group_recvs.clear();
  return ncclSuccess;
}

}  // extern "C"
