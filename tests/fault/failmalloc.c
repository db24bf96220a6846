/* failmalloc.c — an LD_PRELOAD library that makes one allocation fail.
 *
 *   TUNE_FAILMALLOC=N        the Nth allocation (1-based) returns NULL with
 *                            errno ENOMEM; 0 or unset fails nothing
 *   TUNE_FAILMALLOC_PERSIST=1  every allocation from the Nth on fails, not
 *                            only the Nth (a host that stays out of memory)
 *   TUNE_FAILMALLOC_LOG=FILE at the first failed allocation and at exit,
 *                            append "allocations=K failed=F" to FILE (the
 *                            last line is the one to read: a process that
 *                            dies without running its exit handlers, as
 *                            under an AddressSanitizer report, leaves the
 *                            first),
 *                            and "caller=OBJECT" naming the library (or the
 *                            program) that asked for the failed allocation;
 *                            on a crash, "signal=S in=OBJECT after_main=0|1"
 *                            is added (where it crashed, and whether main()
 *                            had returned: a crash in an exit handler); an
 *                            exit() called from a library, not from main,
 *                            adds "exit_from=OBJECT"
 *   TUNE_FAILMALLOC_IN=LIB   count only the allocations that LIB asks for
 *                            (the first object on the call stack besides
 *                            libc, e.g. libgomp): to hit one library's
 *                            failure points without walking all the others
 *   TUNE_FAILMALLOC_FUNC=F   count only the allocations that function F (an
 *                            exported symbol of the program, e.g.
 *                            chk_accums_leaf_map) makes itself: with
 *                            _PERSIST, a host that can give F nothing while
 *                            every other allocation succeeds, as when only
 *                            the large blocks fail under an address-space
 *                            limit
 *   TUNE_FAILMALLOC_UNDER=F  count only the allocations made while function F
 *                            (an exported symbol, e.g. tn_results_list_runs)
 *                            is on the call stack, whoever makes them: to
 *                            walk every failure point of one operation,
 *                            the libraries' allocations included
 *   TUNE_FAILMALLOC_TRACE=1  print the call stack of each failed allocation
 *                            on stderr (to find the code that mishandles it)
 *
 * When HDF5's H5FL_blk_malloc is on the stack of the (first) failed
 * allocation, the log line adds "via=H5FL_blk_malloc".  HDF5 1.10 (1.10.8,
 * Debian 12) has a use-after-free there: it creates the free-list node for
 * a new block size, its malloc fails, it garbage-collects its free lists
 * (which frees that node, unused so far), retries the malloc, and on success
 * counts the block in the freed node.  The heap is then corrupt, and glibc
 * aborts at some later allocation, often in tune's code.  walk.sh uses the
 * marker to tell that HDF5 bug from a crash of tune's.
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
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <execinfo.h>
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
static int trace;                  /* TUNE_FAILMALLOC_TRACE */
static const char *only_in;        /* TUNE_FAILMALLOC_IN */
static const char *only_func;      /* TUNE_FAILMALLOC_FUNC */
static const char *only_under;     /* TUNE_FAILMALLOC_UNDER */
static __thread int naming;        /* inside name_caller: do not count */
static main_fn real_main;
static const char *log_path;       /* TUNE_FAILMALLOC_LOG */
static char caller[256];           /* object that made the failed allocation */
static volatile sig_atomic_t main_returned;
static char exit_from[256];        /* who called exit(), when not main */
static int via_h5fl_blk;           /* H5FL_blk_malloc made the failed allocation */

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

static const char *object_of(void *pc) {
  Dl_info info;
  const char *name = dladdr(pc, &info) && info.dli_fname ? info.dli_fname : "?";
  const char *base = strrchr(name, '/');
  return base ? base + 1 : name;
}

/* The first object on the call stack pc[from..depth) that is neither this
 * shim, nor libc, nor a sanitizer runtime: strdup, fopen or vasprintf
 * allocating for HDF5 count as HDF5's, and so does a crash in strcmp called
 * by HDF5. */
static const char *first_other(void *const *pc, int from, int depth) {
  const char *name = "?";
  for (int i = from; i < depth; i++) {
    name = object_of(pc[i]);
    if (strncmp(name, "libc.so", 7) != 0 && strstr(name, "failmalloc") == NULL &&
        strncmp(name, "libasan", 7) != 0 && strncmp(name, "libubsan", 8) != 0)
      break;
  }
  return name;
}

/* Names who asked for the failed allocation, from ret (the allocator's
 * return address) outwards. */
static void name_caller(void *ret, char *out, size_t size) {
  void *pc[32];
  int depth = backtrace(pc, 32), i = 0;
  while (i < depth && pc[i] != ret)
    i++;
  snprintf(out, size, "%s", i < depth ? first_other(pc, i, depth) : object_of(ret));
}

/* Whether the exported function fn is on the current call stack. */
static int on_stack(const char *fn) {
  void *pc[64];
  int depth = backtrace(pc, 64);
  for (int i = 0; i < depth; i++) {
    Dl_info info;
    if (dladdr(pc[i], &info) && info.dli_sname && strcmp(info.dli_sname, fn) == 0)
      return 1;
  }
  return 0;
}

/* Whether this allocation is the one (or, persisting, one of those) to
 * fail.  ret is the allocator's return address, to name who asked. */
static void append_log(int sig, const char *where);

static int should_fail(void *ret) {
  if (!atomic_load(&armed) || naming)
    return 0;
  char who[256] = "";
  if (only_func) {
    Dl_info info;
    naming = 1;
    int named = dladdr(ret, &info) && info.dli_sname;
    naming = 0;
    if (!named || strcmp(info.dli_sname, only_func) != 0)
      return 0;
  }
  if (only_under) {
    naming = 1;
    int under = on_stack(only_under);
    naming = 0;
    if (!under)
      return 0;
  }
  if (only_in) {
    naming = 1;
    name_caller(ret, who, sizeof who);
    naming = 0;
    if (strncmp(who, only_in, strlen(only_in)) != 0)
      return 0;
  }
  unsigned long n = atomic_fetch_add(&count, 1) + 1;
  if (fail_at == 0 || n < fail_at || (n > fail_at && !persist))
    return 0;
  if (atomic_fetch_add(&failed, 1) == 0) {
    if (who[0])
      memcpy(caller, who, sizeof caller);
    else
      name_caller(ret, caller, sizeof caller);
    naming = 1;
    via_h5fl_blk = on_stack("H5FL_blk_malloc");
    naming = 0;
    /* Now, not only at exit: an ASan report ends the process with _exit,
     * and the walk would not learn whose allocation failed. */
    append_log(0, NULL);
  }
  if (trace) {
    void *pc[64];
    int depth = backtrace(pc, 64);
    static const char head[] = "failmalloc: failing this allocation:\n";
    fputs(head, stderr);
    backtrace_symbols_fd(pc, depth, 2);
  }
  return 1;
}

void *malloc(size_t n) {
  resolve();
  if (!real_malloc)
    return boot_alloc(n);
  if (should_fail(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_malloc(n);
}

void *calloc(size_t k, size_t n) {
  resolve();
  if (!real_calloc) /* boot is zero-initialised and never reused */
    return (n && k > (size_t)-1 / n) ? NULL : boot_alloc(k * n);
  if (should_fail(__builtin_return_address(0))) {
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
  if (should_fail(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_realloc(p, n);
}

void *reallocarray(void *p, size_t k, size_t n) {
  resolve();
  if (!real_reallocarray)
    return NULL;
  if (should_fail(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_reallocarray(p, k, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
  resolve();
  if (!real_posix_memalign)
    return ENOMEM;
  if (should_fail(__builtin_return_address(0)))
    return ENOMEM;
  return real_posix_memalign(out, align, n);
}

void *memalign(size_t align, size_t n) {
  resolve();
  if (!real_memalign)
    return NULL;
  if (should_fail(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n) {
  resolve();
  if (!real_aligned_alloc)
    return NULL;
  if (should_fail(__builtin_return_address(0))) {
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

/* Formats the log line into buf (no allocation: it also runs in a signal
 * handler). */
static int log_line(char *buf, size_t size, int sig, const char *where) {
  int n = snprintf(buf, size, "allocations=%lu failed=%lu caller=%s", atomic_load(&count),
                   atomic_load(&failed), caller[0] ? caller : "-");
  if (sig)
    n += snprintf(buf + n, size - (size_t)n, " signal=%d in=%s after_main=%d", sig, where,
                  (int)main_returned);
  if (exit_from[0])
    n += snprintf(buf + n, size - (size_t)n, " exit_from=%s", exit_from);
  if (via_h5fl_blk)
    n += snprintf(buf + n, size - (size_t)n, " via=H5FL_blk_malloc");
  n += snprintf(buf + n, size - (size_t)n, "\n");
  return n;
}

static void append_log(int sig, const char *where) {
  if (!log_path)
    return;
  char buf[768];
  int n = log_line(buf, sizeof buf, sig, where);
  int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  ssize_t w = write(fd, buf, (size_t)n);
  (void)w;
  close(fd);
}

static void write_log(void) {
  atomic_store(&armed, 0);
  append_log(0, NULL);
}

/* A crash is logged, then takes its default course (core, status). */
static void on_crash(int sig) {
  void *pc[32];
  int depth = backtrace(pc, 32);
  append_log(sig, first_other(pc, 0, depth));
  signal(sig, SIG_DFL);
  raise(sig);
}

static void catch_crashes(void) {
  /* On its own stack, so that a stack overflow is caught too. */
  static char alt[64 * 1024];
  stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
  sigaltstack(&ss, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  sigaction(SIGABRT, &sa, NULL);
  sigaction(SIGFPE, &sa, NULL);
  sigaction(SIGILL, &sa, NULL);
}

/* A child that tune forks (the damaged-file probe, h5probe.h) is a helper
 * of the failure point being walked, not a failure point of its own: it
 * neither counts, nor fails, nor writes the log, so that the walk's count
 * and log are the parent's alone. */
static void in_child(void) {
  atomic_store(&armed, 0);
  log_path = NULL;
}

static int counting_main(int argc, char **argv, char **envp) {
  pthread_atfork(NULL, NULL, in_child);
  int (*h5open)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "H5open");
  if (h5open)
    (void)h5open();
  const char *s = getenv("TUNE_FAILMALLOC");
  fail_at = s ? strtoul(s, NULL, 10) : 0;
  s = getenv("TUNE_FAILMALLOC_PERSIST");
  persist = s && *s && strcmp(s, "0") != 0;
  only_in = getenv("TUNE_FAILMALLOC_IN");
  if (only_in && !*only_in)
    only_in = NULL;
  only_func = getenv("TUNE_FAILMALLOC_FUNC");
  if (only_func && !*only_func)
    only_func = NULL;
  only_under = getenv("TUNE_FAILMALLOC_UNDER");
  if (only_under && !*only_under)
    only_under = NULL;
  s = getenv("TUNE_FAILMALLOC_TRACE");
  trace = s && *s && strcmp(s, "0") != 0;
  void *pc[1]; /* backtrace loads its unwinder on first use: not while failing */
  (void)backtrace(pc, 1);
  log_path = getenv("TUNE_FAILMALLOC_LOG");
  if (log_path && !*log_path)
    log_path = NULL;
  if (log_path)
    catch_crashes();
  /* Registered before main so that it runs after tune's own exit work
   * (atexit handlers run in reverse order), counting all of it. */
  atexit(write_log);
  atomic_store(&armed, 1);
  int status = real_main(argc, argv, envp);
  main_returned = 1;
  return status;
}

/* A library that gives up calls exit() itself (HDF5 does); note who, so
 * that the walk can tell it from tune's own exit. */
void exit(int status) {
  typedef void (*exit_fn)(int) __attribute__((noreturn));
  static exit_fn real_exit;
  if (!real_exit)
    real_exit = (exit_fn)dlsym(RTLD_NEXT, "exit");
  if (atomic_load(&armed) && !main_returned) {
    void *pc[32];
    int depth = backtrace(pc, 32);
    const char *who = first_other(pc, 0, depth);
    if (strstr(who, "failmalloc") == NULL)
      snprintf(exit_from, sizeof exit_from, "%s", who);
  }
  real_exit(status);
}

/* A program that ends with _exit() skips the atexit log: log here. */
void _exit(int status) {
  typedef void (*exit_fn)(int) __attribute__((noreturn));
  exit_fn real = (exit_fn)dlsym(RTLD_NEXT, "_exit");
  if (atomic_load(&armed))
    write_log();
  real(status);
}

/* glibc calls main through __libc_start_main: wrap it to know when main
 * starts. */
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
  start_main_fn next = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
  real_main = main;
  return next(counting_main, argc, argv, init, fini, rtld_fini, stack_end);
}
