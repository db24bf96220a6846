/* libguard.c — crashes of HDF5 and libconfig as tool errors (libguard.h). */
#define _GNU_SOURCE

#include "libguard.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

/* What each signal did before: a crash that is not a library's goes there
 * (the default action, or a sanitizer's report). */
static struct sigaction previous[sizeof fatal_signals / sizeof fatal_signals[0]];

enum { MAX_CLEANUPS = 4 };
static void (*volatile cleanups[MAX_CLEANUPS])(void);
static volatile sig_atomic_t after_main;
static volatile sig_atomic_t main_status;

void tn_libguard_add_cleanup(void (*fn)(void)) {
  for (int i = 0; i < MAX_CLEANUPS; i++)
    if (cleanups[i] == fn)
      return;
  for (int i = 0; i < MAX_CLEANUPS; i++)
    if (!cleanups[i]) {
      cleanups[i] = fn;
      return;
    }
}

void tn_libguard_remove_cleanup(void (*fn)(void)) {
  for (int i = 0; i < MAX_CLEANUPS; i++)
    if (cleanups[i] == fn)
      cleanups[i] = NULL;
}

void tn_libguard_cleanup(void) {
  for (int i = 0; i < MAX_CLEANUPS; i++) {
    void (*fn)(void) = cleanups[i];
    cleanups[i] = NULL;
    if (fn)
      fn();
  }
}

void tn_libguard_main_returned(int status) {
  /* A library's exit handler may still crash, and the handler then ends
   * the process with _exit: what tune printed must be out before. */
  fflush(NULL);
  main_status = status;
  after_main = 1;
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static bool starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* The object (shared library or program) whose code faulted: the first
 * frame past this handler that is not in libc, the loader, the kernel's
 * signal trampoline or a sanitizer runtime, so that a crash in memcpy or
 * abort() called by HDF5 counts as HDF5's. */
static const char *faulting_object(void) {
  void *pc[48];
  int depth = backtrace(pc, 48), i = 0;
  Dl_info self;
  if (!dladdr((void *)faulting_object, &self))
    self.dli_fname = NULL;
  /* First this handler's own frames (and a sanitizer's interceptor of
   * backtrace), then the signal trampoline. */
  for (; i < depth; i++) {
    Dl_info info;
    if (!self.dli_fname || !dladdr(pc[i], &info) || !info.dli_fname)
      break;
    if (info.dli_fname != self.dli_fname && !starts(base_name(info.dli_fname), "libasan") &&
        !starts(base_name(info.dli_fname), "libubsan"))
      break;
  }
  for (; i < depth; i++) {
    Dl_info info;
    if (!dladdr(pc[i], &info) || !info.dli_fname)
      continue;
    const char *name = base_name(info.dli_fname);
    if (starts(name, "libc.so") || starts(name, "ld-linux") || starts(name, "linux-vdso") ||
        starts(name, "libasan") || starts(name, "libubsan") || strstr(name, "failmalloc"))
      continue;
    return name;
  }
  return "?";
}

static void say(const char *s) {
  ssize_t w = write(STDERR_FILENO, s, strlen(s));
  (void)w;
}

static const char *signal_name(int sig) {
  switch (sig) {
  case SIGSEGV: return "SIGSEGV";
  case SIGBUS: return "SIGBUS";
  case SIGABRT: return "SIGABRT";
  case SIGFPE: return "SIGFPE";
  case SIGILL: return "SIGILL";
  default: return "a fatal signal";
  }
}

static void on_fatal(int sig) {
  const char *obj = faulting_object();
  const char *lib = starts(obj, "libhdf5") ? "HDF5" : starts(obj, "libconfig") ? "libconfig" : NULL;
  if (!lib && !after_main) {
    /* tune's own crash: let it happen as it would have. */
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
      if (fatal_signals[i] == sig)
        sigaction(sig, &previous[i], NULL);
    raise(sig);
    return;
  }
  tn_libguard_cleanup();
  if (after_main) {
    /* Only exit handlers run after main: a library's (HDF5 closing what a
     * failed allocation left open).  tune's work and its status stand. */
    say("tune: warning: a library crashed in its exit handler (");
    say(signal_name(sig));
    say(") after tune had finished; HDF5 1.10 does when one of its allocations failed\n");
    _exit(main_status == 0 || main_status == 1 ? main_status : 2);
  }
  say("tune: error: out of memory, most likely: ");
  say(lib);
  say(" crashed (");
  say(signal_name(sig));
  say("), as it does when one of its allocations fails; nothing half-written was left\n");
  _exit(2);
}

void tn_libguard_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  /* backtrace loads its unwinder on first use: not in a crash, and not
   * while memory is short. */
  void *pc[1];
  (void)backtrace(pc, 1);
  for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
    sigaction(fatal_signals[i], &sa, &previous[i]);
}
