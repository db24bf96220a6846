/* dev_backend.h — the small interface behind which the device sits, so a
 * different implementation (a shared object) can stand in for the built-in
 * simulator: `tune --backend PATH.so`.
 *
 * A backend exports one symbol, `tune_backend_v1`, of type dev_backend.  It
 * describes a fusion's candidate space, compiles a fusion + config into a
 * kernel (or refuses with a compile error), runs a kernel on arguments, and
 * reports the kernel's simulated cost.  Kernels are owned by the backend and
 * released with release().  Values follow hlo_value.h.
 *
 * A backend that wants the host's HLO semantics (a reference backend, a
 * backend that checks itself, a test double) also exports
 * `tune_backend_attach_v1`, a dev_backend_attach_fn: tune calls it once,
 * right after loading, with a dev_host (dev_host.h) whose functions stay
 * valid until the process exits.  So a backend needs only this header and the HLO layer's
 * (hlo.h, hlo_value.h, hlo_error.h), never tune's checker.
 */
#ifndef TUNE_DEV_BACKEND_H
#define TUNE_DEV_BACKEND_H

#include <stdint.h>

#include "dev_config.h"
#include "dev_defect.h"
#include "dev_fusion.h"
#include "dev_host.h"
#include "dev_machine.h"
#include "hlo/hlo_value.h"

/* 2: dev_host_opts gained rng_seed, so a backend built against 1 hands the
 * host a shorter struct than it reads.
 * 3: dev_backend gained caps at its end, so tune would read a backend built
 * against 2 past the end of its struct.
 * 4: dev_backend gained default_config at its end, for the same reason. */
#define DEV_BACKEND_ABI 4

/* What tune may assume of a backend's kernels (dev_backend.caps).
 *
 * DEV_BACKEND_CAP_ACCUM_ORDER: its kernels accumulate in the order that
 * dev_accum_depth() and dev_fft_depth() derive from the config, so the
 * checker may bound a candidate's rounding by that depth.  Without it the
 * backend's lowering is its own and every comparison takes the bound of
 * every order.  The backend's name says nothing about this. */
#define DEV_BACKEND_CAP_ACCUM_ORDER 1u

/* DEV_BACKEND_CAP_EAGER_TIMING: its run() honours DEV_JITTER_EAGER. */
#define DEV_BACKEND_CAP_EAGER_TIMING 2u

/* DEV_BACKEND_CAP_TIMING_BY_RACE: a kernel's output changes with the
 * jitter seed only when the compiler carries DEV_DEFECT_DMA_RACE (a
 * missing wait); otherwise every seed gives the same bits, so a second
 * run with another seed can only repeat the first and may be skipped. */
#define DEV_BACKEND_CAP_TIMING_BY_RACE 4u

/* A jitter seed with this bit set asks for the earliest-completion timing:
 * every transfer lands at once, the other bits being ignored.  A schedule
 * that waits for its transfers computes the same bits under any timing;
 * one that issues a transfer into a buffer a step is still reading (a
 * missing wait) then shows it on every such transfer, where a drawn
 * timing shows it only when the draw happens to be fast.  The checker's
 * first run of a candidate uses it, and a rerun with a drawn seed tells a
 * race (outputs that change with timing) from a deterministic mismatch.
 * A backend without the cap reads it as any other seed. */
#define DEV_JITTER_EAGER (UINT64_C(1) << 63)

typedef struct dev_kernel dev_kernel; /* backend-defined */

typedef enum dev_status {
  DEV_OK = 0,
  DEV_COMPILE_ERROR,   /* illegal block shape, VMEM exhausted, unsupported */
  DEV_RUNTIME_ERROR,   /* redzone write, uninitialised read, hang */
  DEV_TIMEOUT
} dev_status;

typedef struct dev_run {
  dev_status status;
  char message[512];   /* for errors: what, where (buffer, offset, index) */
  hlo_value *out;      /* the kernel's output, one reference (NULL on error) */
  uint64_t steps;      /* grid steps executed */
} dev_run;

typedef struct dev_backend {
  int abi;             /* DEV_BACKEND_ABI */
  const char *name;
  /* The candidate space: *cands is malloc'd (the caller frees), *dflt the
   * config the compiler would pick itself.  0 or -1 with err. */
  int (*space)(const dev_fusion *f, const dev_machine *m, dev_config **cands, int *ncands,
               dev_config *dflt, hlo_error *err);
  /* DEV_OK with *k set, or DEV_COMPILE_ERROR with the reason in why. */
  dev_status (*compile)(const dev_fusion *f, const dev_config *cfg, const dev_machine *m,
                        const dev_compiler *cc, dev_kernel **k, char *why, size_t why_len);
  /* Runs the module on its entry arguments (in parameter order): the launch
   * around the kernel (parameters, bitcasts, tuples...) and the kernel
   * itself; out is the entry root's value.  Each call uses fresh output
   * buffers; jitter_seed drives modelled timing jitter (DMA completion
   * order), so two seeds can expose a race. */
  void (*run)(dev_kernel *k, hlo_value *const *args, int nargs, uint64_t jitter_seed, dev_run *out);
  /* Simulated seconds of one run. */
  double (*cost)(const dev_kernel *k);
  void (*release)(dev_kernel *k);
  unsigned caps;       /* DEV_BACKEND_CAP_* flags; 0 assumes nothing */
  /* Optional (NULL: tune calls space() and keeps its *dflt): the config the
   * compiler would pick itself, without listing the space, for callers
   * that run the default alone (tune --isolate).  0 or -1 with err. */
  int (*default_config)(const dev_fusion *f, const dev_machine *m, dev_config *dflt, hlo_error *err);
} dev_backend;

typedef void dev_backend_attach_fn(const dev_host *host);

/* The built-in simulated device. */
const dev_backend *dev_sim_backend(void);

/* Loads PATH.so and returns its tune_backend_v1; -1 with err when the file,
 * the symbol or the ABI version is wrong.  When the object exports
 * tune_backend_attach_v1 it is called with host (which may be NULL for a
 * caller that offers nothing; the backend must then not need it). */
int dev_backend_load(const char *path, const dev_host *host, const dev_backend **out, hlo_error *err);

#endif
