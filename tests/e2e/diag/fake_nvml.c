/* An NVML stand-in for the smddp-diag tests: the entry points smddp-diag
 * loads with dlopen, answering from FAKE_NVML_* environment variables.
 * A comma list gives one value per GPU (the last one repeats):
 *   FAKE_NVML_INIT_ERROR=9           nvmlInit_v2 fails with this code
 *   FAKE_NVML_COUNT=8                GPUs
 *   FAKE_NVML_NAME=...               device names
 *   FAKE_NVML_BUSIDS=10:1c.0,...     PCI bus ids (default: p4d's eight)
 *   FAKE_NVML_TEMP=40                degrees C
 *   FAKE_NVML_ECC_VOLATILE=0, FAKE_NVML_ECC_AGGREGATE=0   uncorrectable ECC errors
 *   FAKE_NVML_RETIRED_SBE=0, FAKE_NVML_RETIRED_DBE=0, FAKE_NVML_RETIRED_PENDING=0
 *   FAKE_NVML_REMAP_CORR=0, FAKE_NVML_REMAP_UNC=0, FAKE_NVML_REMAP_PENDING=0, FAKE_NVML_REMAP_FAILED=0
 *   FAKE_NVML_THROTTLE=0             clocks throttle reason bits (0x40: HW thermal)
 *   FAKE_NVML_UTIL=25                percent
 *   FAKE_NVML_MEM_TOTAL, FAKE_NVML_MEM_USED   bytes
 *   FAKE_NVML_POWER_MW=65000
 *   FAKE_NVML_FAIL=nvmlDeviceGetTemperature=15,...   a function returns that code
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct fake_device* nvmlDevice_t;
struct fake_device {
  unsigned index;
};
typedef struct {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

enum { OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, INSUFFICIENT_SIZE = 7 };

static struct fake_device devices[64];
static int initialized;

/* The i-th comma-separated item of variable `name` (the last repeats), or NULL. */
static const char* item(const char* name, unsigned i, char* buf, size_t len) {
  const char* v = getenv(name);
  if (!v || !*v) return NULL;
  const char* start = v;
  for (unsigned k = 0; k < i; ++k) {
    const char* comma = strchr(start, ',');
    if (!comma) break;
    start = comma + 1;
  }
  size_t n = strcspn(start, ",");
  if (n >= len) n = len - 1;
  memcpy(buf, start, n);
  buf[n] = '\0';
  return buf;
}

static unsigned long long value(const char* name, unsigned i, unsigned long long fallback) {
  char buf[64];
  const char* s = item(name, i, buf, sizeof buf);
  return s ? strtoull(s, NULL, 0) : fallback;
}

static int failure(const char* function) {
  const char* v = getenv("FAKE_NVML_FAIL");
  if (!v) return 0;
  size_t n = strlen(function);
  for (const char* p = strstr(v, function); p; p = strstr(p + 1, function)) {
    if ((p == v || p[-1] == ',') && p[n] == '=') return atoi(p + n + 1);
  }
  return 0;
}

static unsigned count(void) { return (unsigned)value("FAKE_NVML_COUNT", 0, 8); }

#define ENTER(dev)                          \
  do {                                      \
    if (!initialized) return UNINITIALIZED; \
    int code_ = failure(__func__);          \
    if (code_) return code_;                \
    if (!(dev)) return INVALID_ARGUMENT;    \
  } while (0)

nvmlReturn_t nvmlInit_v2(void) {
  int code = (int)value("FAKE_NVML_INIT_ERROR", 0, 0);
  if (code) return code;
  initialized = 1;
  return OK;
}

nvmlReturn_t nvmlShutdown(void) {
  initialized = 0;
  return OK;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned len) {
  if (!initialized) return UNINITIALIZED;
  snprintf(version, len, "%s", "550.00-fake");
  return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  ENTER(n);
  *n = count();
  return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* dev) {
  ENTER(dev);
  if (index >= count() || index >= 64) return INVALID_ARGUMENT;
  devices[index].index = index;
  *dev = &devices[index];
  return OK;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned len) {
  ENTER(d);
  char buf[96];
  const char* s = item("FAKE_NVML_NAME", d->index, buf, sizeof buf);
  snprintf(name, len, "%s", s ? s : "NVIDIA A100-SXM4-40GB");
  return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned len) {
  ENTER(d);
  snprintf(uuid, len, "GPU-fake-%04u", d->index);
  return OK;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int* major, int* minor) {
  ENTER(d);
  *major = 8;  /* the A100 of the p4d fixtures */
  *minor = 0;
  return OK;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  static const char* p4d[] = {"10:1c.0", "10:1d.0", "20:1c.0", "20:1d.0", "90:1c.0", "90:1d.0", "a0:1c.0", "a0:1d.0"};
  ENTER(d);
  char buf[32];
  const char* s = item("FAKE_NVML_BUSIDS", d->index, buf, sizeof buf);
  if (!s) s = d->index < 8 ? p4d[d->index] : "f0:00.0";
  memset(pci, 0, sizeof *pci);
  unsigned bus = 0, dev = 0, fn = 0;
  sscanf(s, "%x:%x.%x", &bus, &dev, &fn);
  pci->bus = bus;
  pci->device = dev;
  pci->pciDeviceId = 0x20b010de;
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:%02X.%X", bus, dev, fn);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:%02X.%X", bus, dev, fn);
  return OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* t) {
  ENTER(d);
  if (sensor != 0 || !t) return INVALID_ARGUMENT;
  *t = (unsigned)value("FAKE_NVML_TEMP", d->index, 40);
  return OK;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long* n) {
  ENTER(d);
  if (!n) return INVALID_ARGUMENT;
  if (type != 1) {
    *n = 0;
    return OK;
  }
  *n = value(counter == 0 ? "FAKE_NVML_ECC_VOLATILE" : "FAKE_NVML_ECC_AGGREGATE", d->index, 0);
  return OK;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned* n, unsigned long long* addresses) {
  ENTER(d);
  if (!n) return INVALID_ARGUMENT;
  unsigned have = (unsigned)value(cause == 0 ? "FAKE_NVML_RETIRED_SBE" : "FAKE_NVML_RETIRED_DBE", d->index, 0);
  if (*n < have) {
    *n = have;
    return INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < have && addresses; ++i) addresses[i] = 0x1000ull * (i + 1);
  *n = have;
  return OK;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int* pending) {
  ENTER(d);
  *pending = (int)value("FAKE_NVML_RETIRED_PENDING", d->index, 0);
  return OK;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failed) {
  ENTER(d);
  *corr = (unsigned)value("FAKE_NVML_REMAP_CORR", d->index, 0);
  *unc = (unsigned)value("FAKE_NVML_REMAP_UNC", d->index, 0);
  *pending = (unsigned)value("FAKE_NVML_REMAP_PENDING", d->index, 0);
  *failed = (unsigned)value("FAKE_NVML_REMAP_FAILED", d->index, 0);
  return OK;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* reasons) {
  ENTER(d);
  *reasons = value("FAKE_NVML_THROTTLE", d->index, 0);
  return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  ENTER(d);
  u->gpu = (unsigned)value("FAKE_NVML_UTIL", d->index, 25);
  u->memory = (unsigned)value("FAKE_NVML_MEM_UTIL", d->index, 10);
  return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  ENTER(d);
  m->total = value("FAKE_NVML_MEM_TOTAL", d->index, 42949672960ull);
  m->used = value("FAKE_NVML_MEM_USED", d->index, 1073741824ull);
  m->free = m->total > m->used ? m->total - m->used : 0;
  return OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* milliwatts) {
  ENTER(d);
  *milliwatts = (unsigned)value("FAKE_NVML_POWER_MW", d->index, 65000);
  return OK;
}
