/* h5probe.c — reading an HDF5 file once in a child process (h5probe.h). */
#define _DEFAULT_SOURCE /* wait4, for the child's CPU time */
#define _POSIX_C_SOURCE 200809L

#include "h5probe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "h5headers.h"
#include "h5util.h"

/* Child exit statuses.  Anything else (a signal, a sanitizer's exit
 * status) is a crash. */
enum { PROBE_OK = 0, PROBE_NOMEM = 3, PROBE_BAD_HEADER = 4 };

/* Memory the child may use beyond what it had at the fork: enough for any
 * object of a sound file (what a file of that size can expand to, even
 * compressed), far below what a damaged size asks for. */
static rlim_t memory_bound(off_t file_size) {
  const rlim_t floor = (rlim_t)1 << 30;
  rlim_t scaled = file_size > 0 ? (rlim_t)file_size * 64 : 0;
  return scaled > floor ? scaled : floor;
}

/* CPU seconds the child may take: generous for a sound file of that size.
 * CPU time, not wall time, because a starved machine (a loaded CI box)
 * can keep a sound small file's read from finishing in 30 s of wall
 * time; a damaged file that makes HDF5 loop burns CPU and meets it. */
static unsigned time_bound(off_t file_size) {
  return 30u + (unsigned)(file_size / (1 << 20));
}

/* Wall seconds, the backstop for a child that waits instead of running
 * (one that inherited a lock held across fork would wait forever). */
static unsigned wall_bound(off_t file_size) {
  return 3u * time_bound(file_size);
}

/* Test hook: TUNE_TEST_PROBE="spin CPU WALL" or "wait CPU WALL" makes the
 * child burn CPU, or sleep, instead of reading, under bounds of CPU and
 * WALL seconds, so that a test sees each bound end it. */
typedef struct {
  int mode; /* 0: read the file; 1: spin; 2: wait */
  unsigned cpu, wall;
} probe_bounds;

static probe_bounds bounds_for(off_t file_size) {
  probe_bounds b = {0, time_bound(file_size), wall_bound(file_size)};
  const char *t = getenv("TUNE_TEST_PROBE");
  char mode[8];
  unsigned c, w;
  if (t && sscanf(t, "%7s %u %u", mode, &c, &w) == 3 && c > 0 && w > 0) {
    b.mode = strcmp(mode, "spin") == 0 ? 1 : strcmp(mode, "wait") == 0 ? 2 : 0;
    b.cpu = c;
    b.wall = w;
  }
  return b;
}

/* The child's address space now, from /proc; 0 when unknown. */
static rlim_t current_vm(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (!f)
    return 0;
  if (fscanf(f, "%lu", &pages) != 1)
    pages = 0;
  fclose(f);
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (rlim_t)pages * (rlim_t)page : 0;
}

/* ---- the child's reading ------------------------------------------------ */

typedef struct probe {
  bool nomem;
  int fd;             /* the file, for h5headers.h */
  tn_h5_layout lay;
  hlo_error err;      /* the first damaged header */
  bool bad;
  const char *obj;    /* the object being read, for note_failure */
} probe;

/* HDF5 failed on the current object.  For want of memory under the
 * child's bound, the file claims too much.  Any other failure means the
 * object is damaged, and the file is refused here rather than left for
 * the reader: HDF5 1.10 leaks what it had allocated when it gives up on a
 * damaged object (H5Dopen2 on a corrupt dataset header loses some 20 kB),
 * and in the child that is thrown away with the process. */
static void note_failure(probe *p, const char *what) {
  if (tn_h5_failed_for_memory()) {
    p->nomem = true;
  } else if (!p->bad) {
    tn_h5_fail(&p->err, "/%s: HDF5 cannot %s (a damaged object)", p->obj ? p->obj : "", what);
    p->bad = true;
  }
  H5Eclear2(H5E_DEFAULT);
}

/* Reads npoints elements of file type ftype through its native type, and
 * gives back what variable-length data the read allocated. */
static void read_data(probe *p, hid_t obj, bool is_attr, hid_t ftype, hid_t space) {
  hid_t mtype = H5Tget_native_type(ftype, H5T_DIR_ASCEND);
  hssize_t n = H5Sget_select_npoints(space);
  size_t esize = mtype >= 0 ? H5Tget_size(mtype) : 0;
  if (mtype < 0 || n < 0 || esize == 0) {
    note_failure(p, is_attr ? "describe an attribute's values" : "describe its values");
    tn_h5_close_type(mtype);
    return;
  }
  if (n == 0 || (uint64_t)n > SIZE_MAX / esize) {
    tn_h5_close_type(mtype);
    return;
  }
  void *buf = calloc((size_t)n, esize);
  if (!buf) {
    p->nomem = true;
    tn_h5_close_type(mtype);
    return;
  }
  herr_t r = is_attr ? H5Aread(obj, mtype, buf) : H5Dread(obj, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
  if (r < 0)
    note_failure(p, is_attr ? "read an attribute" : "read it");
  else if (H5Tdetect_class(mtype, H5T_VLEN) > 0 || H5Tis_variable_str(mtype) > 0)
    H5Dvlen_reclaim(mtype, space, H5P_DEFAULT, buf);
  free(buf);
  tn_h5_close_type(mtype);
}

static herr_t visit_attr(hid_t loc, const char *name, const H5A_info_t *info, void *ctx) {
  (void)info;
  probe *p = ctx;
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  hid_t t = a >= 0 ? H5Aget_type(a) : -1, s = a >= 0 ? H5Aget_space(a) : -1;
  if (t >= 0 && s >= 0)
    read_data(p, a, true, t, s);
  else
    note_failure(p, "open an attribute");
  tn_h5_close_space(s);
  tn_h5_close_type(t);
  tn_h5_close_attr(a);
  return 0;
}

/* A dataset of variable-length strings or sequences stored contiguously:
 * its descriptors are checked (h5headers.h) before HDF5 allocates what
 * they claim. */
static int check_vlen_dataset(probe *p, hid_t d, hid_t t, hid_t s) {
  bool str = H5Tis_variable_str(t) > 0;
  if (!str && H5Tget_class(t) != H5T_VLEN)
    return 0;
  haddr_t off = H5Dget_offset(d);
  hssize_t n = H5Sget_simple_extent_npoints(s);
  if (off == HADDR_UNDEF || n <= 0)
    return 0; /* compact or not yet written: nothing stored apart */
  size_t unit = 1;
  if (!str) {
    hid_t base = H5Tget_super(t);
    unit = base >= 0 ? H5Tget_size(base) : 1;
    tn_h5_close_type(base);
  }
  size_t esize = 4 + p->lay.addr_size + 4; /* length, heap address, index */
  return tn_h5_check_vlen_data(p->fd, &p->lay, (uint64_t)off, (uint64_t)n, esize, unit ? unit : 1, &p->err);
}

static herr_t visit_obj(hid_t root, const char *name, const H5O_info_t *info, void *ctx) {
  probe *p = ctx;
  p->obj = strcmp(name, ".") == 0 ? "" : name;
  hid_t o = H5Oopen(root, name, H5P_DEFAULT);
  if (o < 0) {
    note_failure(p, "open it");
    return p->bad ? 1 : 0;
  }
  hsize_t idx = 0;
  if (H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, visit_attr, p) < 0)
    note_failure(p, "list its attributes");
  if (info->type == H5O_TYPE_DATASET) {
    hid_t t = H5Dget_type(o), s = H5Dget_space(o);
    if (t >= 0 && s >= 0 && check_vlen_dataset(p, o, t, s) != 0) {
      char what[sizeof p->err.msg];
      snprintf(what, sizeof what, "%s", p->err.msg);
      tn_h5_fail(&p->err, "/%s: %s", name, what);
      p->bad = true;
    } else if (t >= 0 && s >= 0) {
      read_data(p, o, false, t, s);
    } else {
      note_failure(p, "read its type or shape");
    }
    tn_h5_close_space(s);
    tn_h5_close_type(t);
  }
  tn_h5_close_obj(o);
  return p->bad ? 1 : 0;
}

/* First pass: every object's header bytes, before HDF5 decodes any of
 * its attributes (listing objects does not). */
static herr_t visit_header(hid_t root, const char *name, const H5O_info_t *info, void *ctx) {
  (void)root;
  probe *p = ctx;
  if (tn_h5_check_header(p->fd, &p->lay, (uint64_t)info->addr, &p->err) != 0) {
    char what[sizeof p->err.msg];
    snprintf(what, sizeof what, "%s", p->err.msg);
    tn_h5_fail(&p->err, "/%s: %s", strcmp(name, ".") == 0 ? "" : name, what);
    p->bad = true;
    return 1; /* stop */
  }
  return 0;
}

static int child_read(const char *path, int report) {
  probe p = {.nomem = false};
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  p.fd = open(path, O_RDONLY | O_CLOEXEC);
  if (p.fd < 0)
    return PROBE_OK; /* the real reader says why */
  if (tn_h5_read_layout(p.fd, &p.lay, &p.err) != 0)
    return PROBE_OK; /* not HDF5 at all: HDF5 refuses it cleanly */
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0)
    return PROBE_OK;
  if (H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_NATIVE, visit_header, &p, H5O_INFO_BASIC) < 0) {
    /* The second walk below says so if the tree is damaged. */
    p.nomem = p.nomem || tn_h5_failed_for_memory();
    H5Eclear2(H5E_DEFAULT);
  }
  if (p.bad) {
    size_t len = strlen(p.err.msg);
    if (write(report, p.err.msg, len) < 0)
      len = 0; /* the parent then gives its general message */
    return PROBE_BAD_HEADER;
  }
  /* A walk that breaks off leaves objects unchecked that a reader going
   * by path may still reach: the file is refused. */
  if (H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_NATIVE, visit_obj, &p, H5O_INFO_BASIC) < 0 && !p.bad) {
    tn_h5_fail(&p.err, "its tree of groups and datasets cannot be walked");
    p.bad = true;
  }
  H5Fclose(f);
  if (p.bad) {
    size_t len = strlen(p.err.msg);
    if (write(report, p.err.msg, len) < 0)
      len = 0;
    return PROBE_BAD_HEADER;
  }
  return p.nomem ? PROBE_NOMEM : PROBE_OK;
}

/* Set by a sanitizer runtime when there is one (weak: absent otherwise).
 * A fuzzer registers a death callback through it that records the input
 * as a crash; in the child, a crash of HDF5 is the answer we asked for,
 * not a finding. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* ---- files already found sound ------------------------------------------- */

/* One command reads the same results file many times: a sweep looks for a
 * run to resume, starts its run, then lists, compares and reports the runs
 * (eight opens for one fusion), and each probe reads the whole file in a
 * child.  A file this process has already probed is not probed again
 * while its identity is unchanged: the same inode, size, modification and
 * status-change times.  Any write to the file changes its times (the
 * status-change time cannot be set from user space), so a changed file is
 * probed anew, save a same-size rewrite in the very clock tick of the
 * probe.  A writer racing tune's reads that closely is another tune, whose
 * writes are sound and go through the lock, or one that could as well
 * damage the file between the probe and the read, which no check made
 * before the read can stop.  The store vouches for what it has just
 * written itself (tn_h5_probe_vouch), as edit_by_copy (store.c) already
 * trusted the file it wrote last. */
typedef struct {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
} sound_file;

enum { SOUND_FILES = 8 }; /* a command opens a handful of files at most */
static sound_file sound[SOUND_FILES];
static unsigned nsound;       /* entries filled; the ring's next slot is nsound % SOUND_FILES */
static unsigned long nchildren; /* probes run, for tests */
static pthread_mutex_t sound_mu = PTHREAD_MUTEX_INITIALIZER;

static bool same_time(struct timespec a, struct timespec b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

static bool same_file(const sound_file *f, const struct stat *st) {
  return f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size && same_time(f->mtime, st->st_mtim) &&
         same_time(f->ctime, st->st_ctim);
}

static bool known_sound(const struct stat *st) {
  bool hit = false;
  pthread_mutex_lock(&sound_mu);
  for (unsigned i = 0; i < nsound && i < SOUND_FILES && !hit; i++)
    hit = same_file(&sound[i], st);
  pthread_mutex_unlock(&sound_mu);
  return hit;
}

static void remember_sound(const struct stat *st) {
  pthread_mutex_lock(&sound_mu);
  sound[nsound % SOUND_FILES] =
      (sound_file){.dev = st->st_dev, .ino = st->st_ino, .size = st->st_size, .mtime = st->st_mtim, .ctime = st->st_ctim};
  nsound++;
  pthread_mutex_unlock(&sound_mu);
}

void tn_h5_probe_vouch(const struct stat *st) {
  if (S_ISREG(st->st_mode))
    remember_sound(st);
}

unsigned long tn_h5_probe_children(void) {
  pthread_mutex_lock(&sound_mu);
  unsigned long n = nchildren;
  pthread_mutex_unlock(&sound_mu);
  return n;
}

/* ---- the parent ----------------------------------------------------------- */

int tn_h5_probe(const char *path, hlo_error *err) {
  struct stat st;
  if (stat(path, &st) != 0)
    return tn_h5_fail(err, "%s: %s", path, strerror(errno));
  if (known_sound(&st))
    return 0;
  int fds[2];
  if (pipe(fds) != 0)
    return tn_h5_fail(err, "%s: cannot check the file (pipe: %s)", path, strerror(errno));
  probe_bounds pb = bounds_for(st.st_size);
  fflush(NULL); /* nothing buffered may be written twice */
  pthread_mutex_lock(&sound_mu);
  nchildren++;
  pthread_mutex_unlock(&sound_mu);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return tn_h5_fail(err, "%s: cannot check the file (fork: %s)", path, strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    /* A crash report of the library is not ours to print. */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, STDERR_FILENO);
    rlim_t vm = current_vm();
    if (vm > 0) {
      struct rlimit rl = {vm + memory_bound(st.st_size), vm + memory_bound(st.st_size)};
      setrlimit(RLIMIT_AS, &rl);
    }
    /* A crash of the library must end the child, not run handlers a
     * sanitizer or a fuzzer installed in the parent (they would report
     * HDF5's crash as ours). */
    const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM, SIGXCPU};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
      signal(fatal[i], SIG_DFL);
    if (__sanitizer_set_death_callback)
      __sanitizer_set_death_callback(NULL);
    /* the soft limit sends SIGXCPU; the hard one, a little later, kills */
    struct rlimit cpu = {pb.cpu, pb.cpu + 5};
    setrlimit(RLIMIT_CPU, &cpu);
    alarm(pb.wall);
    for (volatile unsigned long spin = 0; pb.mode == 1;)
      spin++;
    while (pb.mode == 2)
      pause();
    _exit(child_read(path, fds[1]));
  }
  close(fds[1]);
  char why[sizeof err->msg];
  size_t got = 0;
  for (;;) {
    ssize_t r = read(fds[0], why + got, sizeof why - 1 - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0 || (got += (size_t)r) == sizeof why - 1)
      break;
  }
  why[got] = '\0';
  close(fds[0]);
  int status = 0;
  struct rusage ru;
  pid_t w;
  do
    w = wait4(pid, &status, 0, &ru);
  while (w < 0 && errno == EINTR);
  if (w < 0)
    return tn_h5_fail(err, "%s: cannot check the file (wait: %s)", path, strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == PROBE_OK) {
    /* Remembered only when the file did not change while it was read. */
    struct stat after;
    if (stat(path, &after) == 0 && S_ISREG(after.st_mode)) {
      sound_file before = {st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
      if (same_file(&before, &after))
        remember_sound(&after);
    }
    return 0;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == PROBE_BAD_HEADER)
    return tn_h5_fail(err, "%s: corrupt HDF5 file: %s", path, got ? why : "a damaged object header");
  if (WIFEXITED(status) && WEXITSTATUS(status) == PROBE_NOMEM)
    return tn_h5_fail(err, "%s: corrupt HDF5 file: a stored size asks for more memory than the file can hold", path);
  /* A damaged file can make HDF5 loop; a sound but very large file can
   * also run out of time, and saying only "corrupt" would wrong it. */
  /* SIGKILL counts only when the CPU time shows it was the hard limit
   * (not, say, the kernel's out-of-memory killer). */
  bool cpu_out = WIFSIGNALED(status) &&
                 (WTERMSIG(status) == SIGXCPU ||
                  (WTERMSIG(status) == SIGKILL && (unsigned)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) >= pb.cpu));
  if (cpu_out)
    return tn_h5_fail(err,
                      "%s: corrupt HDF5 file, or one too large to check on this machine: reading it did not "
                      "finish in %u s of CPU time",
                      path, pb.cpu);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    return tn_h5_fail(err,
                      "%s: cannot check the file: reading it did not finish in %u s and was given up (the machine "
                      "may be overloaded; try again)",
                      path, pb.wall);
  return tn_h5_fail(err, "%s: corrupt HDF5 file: the HDF5 library cannot read it without crashing", path);
}
