/* lock.c — the results file's writer lock (lock.h). */
#define _DEFAULT_SOURCE /* flock, gethostname */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

int tn_lock_take(const char *path, int *fd, char *holder, size_t holder_len, hlo_error *err) {
  char lock[4096];
  if (holder_len)
    holder[0] = '\0';
  if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
    return hlo_error_set(err, 0, 0, "%s: name too long", path);
  int f = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (f < 0)
    return hlo_error_set(err, 0, 0, "%s: cannot open it: %s", lock, strerror(errno));
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    int busy = errno == EWOULDBLOCK;
    if (busy && holder_len) {
      ssize_t n = pread(f, holder, holder_len - 1, 0);
      holder[n > 0 ? n : 0] = '\0';
      holder[strcspn(holder, "\n")] = '\0';
    }
    if (!busy)
      hlo_error_set(err, 0, 0, "%s: cannot lock it: %s", lock, strerror(errno));
    close(f);
    return busy ? 1 : -1;
  }
  /* Who holds it, for the message the next sweep prints. */
  char host[128] = "?", stamp[32] = "";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm))
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  char text[256];
  int len = snprintf(text, sizeof text, "pid %ld on %s since %s\n", (long)getpid(), host, stamp);
  if (ftruncate(f, 0) != 0 || pwrite(f, text, (size_t)len, 0) != len) {
    /* The lock is held all the same; only the note is missing. */
  }
  *fd = f;
  return 0;
}

void tn_lock_release(int fd) {
  if (fd >= 0)
    close(fd); /* closing the last descriptor releases the flock */
}
