/* A fake CUDA driver and NVRTC with the prototypes of cuda.h and nvrtc.h,
   for testing the purego bindings without a GPU. Device memory is host
   memory; a "compiled" module is the source text; a launch runs the
   kernel's host-harness launcher pt_launch_<name> from the library named
   by FAKE_CUDA_KERNELS (when set) and is logged. Stream capture records
   launches, and a graph launch replays them. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct { char name[128]; } fn_t;
typedef struct { fn_t* f; unsigned g[3], b[3], shmem; void* stream; void** params; } rec_t;

static int inited, capturing, nrec, nlaunch, ncapture, ngraph;
static rec_t recs[100000];
static void* kernels;
static char kpath[4096];
static char logbuf[1 << 20];
static size_t loglen;

CUresult cuInit(unsigned flags) { inited = flags == 0; return inited ? 0 : 1; }
CUresult cuDriverGetVersion(int* v) { *v = 12040; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
/* The compute capability is 9.0, or FAKE_CUDA_SM (such as 75). */
CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
  const char* sm = getenv("FAKE_CUDA_SM");
  int cc = sm ? atoi(sm) : 90;
  if (attr == 75) *v = cc / 10; else if (attr == 76) *v = cc % 10; else *v = 0;
  return dev == 0 ? 0 : 101;
}
CUresult cuDeviceGetName(char* name, int len, int dev) { snprintf(name, len, "fake device %d", dev); return 0; }
CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev) { *ctx = (void*)0x1234; return 0; }
CUresult cuDevicePrimaryCtxRelease(int dev) { return 0; }
CUresult cuCtxSetCurrent(void* ctx) { return ctx == (void*)0x1234 ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) { *p = (CUdeviceptr)aligned_alloc(256, (n + 255) / 256 * 256); return *p ? 0 : 2; }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void*)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { memcpy((void*)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { memcpy(d, (void*)s, n); return 0; }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) { memmove((void*)d, (void*)s, n); return 0; }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void*)d, v, n); return 0; }
CUresult cuModuleLoadData(void** m, const void* image) { *m = strdup((const char*)image); return 0; }
CUresult cuModuleUnload(void* m) { free(m); return 0; }
CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
  char want[160];
  snprintf(want, sizeof want, " %s(", name);
  if (!strstr((const char*)m, want)) return 500; /* CUDA_ERROR_NOT_FOUND */
  fn_t* fn = calloc(1, sizeof *fn);
  snprintf(fn->name, sizeof fn->name, "%s", name);
  *f = fn;
  return 0;
}

static CUresult run(rec_t* r) {
  loglen += snprintf(logbuf + loglen, sizeof logbuf - loglen, "%s %u,%u,%u %u,%u,%u %u\n", r->f->name,
                     r->g[0], r->g[1], r->g[2], r->b[0], r->b[1], r->b[2], r->shmem);
  nlaunch++;
  const char* path = getenv("FAKE_CUDA_KERNELS");
  if (!path) return 0;
  if (!kernels || strcmp(path, kpath) != 0) {
    kernels = dlopen(path, RTLD_NOW);
    if (!kernels) return 300;
    snprintf(kpath, sizeof kpath, "%s", path);
  }
  char sym[160];
  snprintf(sym, sizeof sym, "pt_launch_%s", r->f->name);
  int (*launch)(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void**) = dlsym(kernels, sym);
  if (!launch) return 500;
  return launch(r->g[0], r->g[1], r->g[2], r->b[0], r->b[1], r->b[2], r->params) ? 719 : 0;
}

CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void* stream, void** params, void** extra) {
  if (extra) return 1;
  rec_t r = {(fn_t*)f, {gx, gy, gz}, {bx, by, bz}, shmem, stream, params};
  if (capturing) { if (nrec == 100000) return 2; recs[nrec++] = r; return 0; }
  return run(&r);
}
CUresult cuStreamCreate(void** s, unsigned flags) { *s = (void*)0x5678; return 0; }
CUresult cuStreamDestroy_v2(void* s) { return 0; }
CUresult cuStreamSynchronize(void* s) { return s == (void*)0x5678 ? 0 : 400; }
CUresult cuStreamBeginCapture_v2(void* s, int mode) { capturing = 1; nrec = 0; ncapture++; return 0; }
CUresult cuStreamEndCapture(void* s, void** graph) { capturing = 0; *graph = (void*)0x9abc; return 0; }
CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) { *exec = (void*)0xdef0; return graph ? 0 : 1; }
CUresult cuGraphLaunch(void* exec, void* stream) {
  ngraph++;
  for (int i = 0; i < nrec; i++) { CUresult r = run(&recs[i]); if (r) return r; }
  return 0;
}
CUresult cuGraphExecDestroy(void* e) { return 0; }
CUresult cuGraphDestroy(void* g) { return 0; }
CUresult cuEventCreate(void** e, unsigned flags) { *e = (void*)1; return 0; }
CUresult cuEventRecord(void* e, void* s) { return 0; }
CUresult cuEventSynchronize(void* e) { return 0; }
CUresult cuEventElapsedTime(float* ms, void* a, void* b) { *ms = 1.5f; return 0; }
CUresult cuEventDestroy_v2(void* e) { return 0; }
CUresult cuGetErrorString(CUresult r, const char** s) { *s = r == 0 ? "no error" : "fake error"; return 0; }

/* What the test reads back. */
int fake_counts(int* launches, int* captures, int* graphs) { *launches = nlaunch; *captures = ncapture; *graphs = ngraph; return inited; }
const char* fake_log(void) { return logbuf; }
void fake_reset(void) { loglen = 0; logbuf[0] = 0; nlaunch = ncapture = ngraph = 0; }

/* NVRTC: "compiles" by copying the source. */
typedef struct { char* src; } prog_t;
int nvrtcVersion(int* major, int* minor) { *major = 11; *minor = 8; return 0; }
const char* nvrtcGetErrorString(int r) { return r ? "fake nvrtc error" : "NVRTC_SUCCESS"; }
int nvrtcCreateProgram(prog_t** p, const char* src, const char* name, int n, const char* const* h, const char* const* inc) {
  *p = calloc(1, sizeof **p); (*p)->src = strdup(src); return 0;
}
int nvrtcCompileProgram(prog_t* p, int n, const char* const* opts) {
  for (int i = 0; i < n; i++) if (strncmp(opts[i], "--gpu-architecture=sm_", 22) != 0) return 5;
  return strstr(p->src, "__global__") ? 0 : 6;
}
int nvrtcDestroyProgram(prog_t** p) { free((*p)->src); free(*p); *p = 0; return 0; }
int nvrtcGetProgramLogSize(prog_t* p, size_t* n) { *n = 1; return 0; }
int nvrtcGetProgramLog(prog_t* p, char* log) { log[0] = 0; return 0; }
int nvrtcGetCUBINSize(prog_t* p, size_t* n) { *n = strlen(p->src) + 1; return 0; }
int nvrtcGetCUBIN(prog_t* p, char* b) { strcpy(b, p->src); return 0; }
int nvrtcGetPTXSize(prog_t* p, size_t* n) { return 7; }
int nvrtcGetPTX(prog_t* p, char* b) { return 7; }
