/* cli_log.c — timestamped log lines (cli.h). */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "cli.h"

void tn_log(const char *fmt, ...) {
  char stamp[32] = "";
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm))
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  va_list ap;
  va_start(ap, fmt);
  /* One write per line, so lines of concurrent writers do not interleave. */
  char line[4096];
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s tune: %s%s\n", stamp, line, n >= (int)sizeof line ? "..." : "");
}
