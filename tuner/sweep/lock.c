/* lock.c — the results file's writer lock (lock.h). */
#define _DEFAULT_SOURCE /* flock, gethostname */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int tn_lock_take(const char *path, int *fd, hlo_error *err) {
  char lock[4096];
  if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
    return hlo_error_set(err, 0, 0, "%s: name too long", path);
  /* O_NONBLOCK: a FIFO planted under the name must not hang the open. */
  int f = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (f < 0 && errno == ELOOP)
    return hlo_error_set(err, 0, 0, "%s: is a symbolic link; not locking through it (remove it)", lock);
  if (f < 0)
    return hlo_error_set(err, 0, 0, "%s: cannot open it: %s", lock, strerror(errno));
  struct stat st;
  if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    close(f);
    return hlo_error_set(err, 0, 0, "%s: not a plain file of its own (a hard link, or not a regular file); "
                         "not locking through it (remove it)", lock);
  }
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    int busy = errno == EWOULDBLOCK;
    char holder[256] = "";
    if (busy) {
      ssize_t n = pread(f, holder, sizeof holder - 1, 0);
      holder[n > 0 ? n : 0] = '\0';
      holder[strcspn(holder, "\n")] = '\0';
      for (char *c = holder; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
          *c = '?'; /* anyone can write the file: keep the terminal safe */
    }
    if (busy)
      hlo_error_set(err, 0, 0, "%s is locked by another writer (%s); not starting a second one", path,
                    holder[0] ? holder : "holder unknown");
    else
      hlo_error_set(err, 0, 0, "%s: cannot lock it: %s", lock, strerror(errno));
    close(f);
    return -1;
  }
  /* Who holds it, for the message the next writer prints. */
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
