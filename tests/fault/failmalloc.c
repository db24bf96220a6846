/* failmalloc.c — an LD_PRELOAD library that makes one allocation fail.
 *
 *   TUNE_FAILMALLOC=N        the Nth allocation (1-based) returns NULL with
 *                            errno ENOMEM; 0 or unset fails nothing
 *   TUNE_FAILMALLOC_PERSIST=1  every allocation from the Nth on fails, not
 *                            only the Nth (a host that stays out of memory)
 *   TUNE_FAILMALLOC_LOG=FILE at exit, append "allocations=K failed=F" to FILE
 *
 * Only allocations made after the program's main() starts are counted:
 * what the dynamic loader and the libraries' constructors allocate before
 * main cannot be handled by tune, and leaving it out makes the count the
 * same whatever the libraries do at load time.  Everything after main is
 * counted, including what libc, HDF5, libconfig and OpenMP allocate on
 * tune's behalf: tune must cope with their error returns too.
 *
 * One exception: HDF5 initialises itself on its first call, and that
 * initialisation (1.10) does not survive a failed allocation: it recurses
 * in its error stack or dereferences NULL in its property lists, a crash
 * no caller can prevent.  So when the program links HDF5, the shim calls
 * H5open() before counting starts, as if HDF5 were initialised at load
 * time.  Every later HDF5 allocation (opening, creating, writing, closing
 * files) is counted.
 *
 * The real allocator is the next one in the symbol search order (libc's,
 * or the sanitizer runtime's when tune is built with --enable-sanitizers
 * and ASAN_OPTIONS has verify_asan_link_order=0), so frees of counted
 * blocks go to the allocator that made them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef void (*free_fn)(void *);
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                             void (*)(void), void *);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static reallocarray_fn real_reallocarray;
static posix_memalign_fn real_posix_memalign;
static memalign_fn real_memalign;
static memalign_fn real_aligned_alloc;
static free_fn real_free;

static atomic_int armed;           /* set once main() starts */
static atomic_ulong count;         /* counted allocations so far */
static atomic_ulong failed;        /* allocations made to fail */
static unsigned long fail_at;      /* TUNE_FAILMALLOC */
static int persist;                /* TUNE_FAILMALLOC_PERSIST */
static main_fn real_main;

/* dlsym may itself allocate before the real functions are known: serve
 * those few requests from a static arena that is never given back. */
static _Alignas(max_align_t) char boot[4096];
static size_t boot_used;

static void *boot_alloc(size_t n) {
  size_t a = _Alignof(max_align_t);
  n = (n + a - 1) / a * a;
  if (n > sizeof boot - boot_used)
    return NULL;
  void *p = boot + boot_used;
  boot_used += n;
  return p;
}

static int is_boot(const void *p) {
  return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static int resolving;

static void resolve(void) {
  if (real_malloc || resolving)
    return;
  resolving = 1;
  real_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
  real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
  real_reallocarray = (reallocarray_fn)dlsym(RTLD_NEXT, "reallocarray");
  real_posix_memalign = (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
  real_memalign = (memalign_fn)dlsym(RTLD_NEXT, "memalign");
  real_aligned_alloc = (memalign_fn)dlsym(RTLD_NEXT, "aligned_alloc");
  real_free = (free_fn)dlsym(RTLD_NEXT, "free");
  real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
  resolving = 0;
}

/* Whether this allocation is the one (or, persisting, one of those) to fail. */
static int should_fail(void) {
  if (!atomic_load(&armed))
    return 0;
  unsigned long n = atomic_fetch_add(&count, 1) + 1;
  if (fail_at == 0 || n < fail_at || (n > fail_at && !persist))
    return 0;
  atomic_fetch_add(&failed, 1);
  return 1;
}

void *malloc(size_t n) {
  resolve();
  if (!real_malloc)
    return boot_alloc(n);
  if (should_fail()) {
    errno = ENOMEM;
    return NULL;
  }
  return real_malloc(n);
}

void *calloc(size_t k, size_t n) {
  resolve();
  if (!real_calloc) /* boot is zero-initialised and never reused */
    return (n && k > (size_t)-1 / n) ? NULL : boot_alloc(k * n);
  if (should_fail()) {
    errno = ENOMEM;
    return NULL;
  }
  return real_calloc(k, n);
}

void *realloc(void *p, size_t n) {
  resolve();
  if (is_boot(p)) { /* move a boot block to the real heap */
    void *q = malloc(n);
    if (q)
      memcpy(q, p, n < (size_t)(boot + sizeof boot - (char *)p) ? n : (size_t)(boot + sizeof boot - (char *)p));
    return q;
  }
  if (!real_realloc)
    return NULL;
  if (should_fail()) {
    errno = ENOMEM;
    return NULL;
  }
  return real_realloc(p, n);
}

void *reallocarray(void *p, size_t k, size_t n) {
  resolve();
  if (!real_reallocarray)
    return NULL;
  if (should_fail()) {
    errno = ENOMEM;
    return NULL;
  }
  return real_reallocarray(p, k, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
  resolve();
  if (!real_posix_memalign)
    return ENOMEM;
  if (should_fail())
    return ENOMEM;
  return real_posix_memalign(out, align, n);
}

void *memalign(size_t align, size_t n) {
  resolve();
  if (!real_memalign)
    return NULL;
  if (should_fail()) {
    errno = ENOMEM;
    return NULL;
  }
  return real_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n) {
  resolve();
  if (!real_aligned_alloc)
    return NULL;
  if (should_fail()) {
    errno = ENOMEM;
    return NULL;
  }
  return real_aligned_alloc(align, n);
}

void free(void *p) {
  if (!p || is_boot(p))
    return;
  resolve();
  if (real_free)
    real_free(p);
}

static void write_log(void) {
  const char *path = getenv("TUNE_FAILMALLOC_LOG");
  atomic_store(&armed, 0); /* the log's own buffers are not counted */
  if (!path || !*path)
    return;
  FILE *f = fopen(path, "a");
  if (!f)
    return;
  fprintf(f, "allocations=%lu failed=%lu\n", atomic_load(&count), atomic_load(&failed));
  fclose(f);
}

static int counting_main(int argc, char **argv, char **envp) {
  int (*h5open)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "H5open");
  if (h5open)
    (void)h5open();
  const char *s = getenv("TUNE_FAILMALLOC");
  fail_at = s ? strtoul(s, NULL, 10) : 0;
  s = getenv("TUNE_FAILMALLOC_PERSIST");
  persist = s && *s && strcmp(s, "0") != 0;
  /* Registered before main so that it runs after tune's own exit work
   * (atexit handlers run in reverse order), counting all of it. */
  atexit(write_log);
  atomic_store(&armed, 1);
  return real_main(argc, argv, envp);
}

/* glibc calls main through __libc_start_main: wrap it to know when main
 * starts. */
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
  start_main_fn next = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
  real_main = main;
  return next(counting_main, argc, argv, init, fini, rtld_fini, stack_end);
}
