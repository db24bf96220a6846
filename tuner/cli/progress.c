/* progress.c — progress lines on stderr (progress.h). */
#include "progress.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tn_progress {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t ticker;
  bool terminal, stop, active, drawn;
  double interval;
  double redraw; /* least gap between two terminal redraws */
  double unit_t0, phase_t0, last_line;
  char name[1200];
  char phase[16];
  int done, total, divergent;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fmt_secs(char *buf, size_t n, double s) {
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60)
    snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(buf, n, "%lds", t);
}

/* The line's text, without terminal control or timestamp; p->mu held. */
static void describe(const tn_progress *p, double now, char *buf, size_t n) {
  char el[32], eta[32] = "?";
  fmt_secs(el, sizeof el, now - p->unit_t0);
  /* Candidates run at a steady pace; the default and the phases before
   * the candidates say nothing about how long the rest takes. */
  if (strcmp(p->phase, "candidates") == 0 && p->done > 1 && p->total > 0) {
    double per = (now - p->phase_t0) / (p->done - 1);
    fmt_secs(eta, sizeof eta, per * (p->total - p->done));
  }
  int k = snprintf(buf, n, "[%s] %s", p->phase, p->name);
  if (k > 0 && (size_t)k < n && p->total > 0)
    k += snprintf(buf + k, n - (size_t)k, " %d/%d divergent %d", p->done, p->total, p->divergent);
  if (k > 0 && (size_t)k < n)
    snprintf(buf + k, n - (size_t)k, "  %s elapsed, ETA %s", el, eta);
}

/* Draws or logs the line; p->mu held. */
static void emit(tn_progress *p, double now) {
  char text[1400];
  describe(p, now, text, sizeof text);
  if (p->terminal) {
    fprintf(stderr, "\r%s\033[K", text);
    p->drawn = true;
  } else {
    char stamp[32] = "";
    time_t t = time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm))
      strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%s tune: progress: %s\n", stamp, text);
  }
  fflush(stderr);
  p->last_line = now;
}

static void *tick(void *arg) {
  tn_progress *p = arg;
  pthread_mutex_lock(&p->mu);
  while (!p->stop) {
    /* Wake often enough to keep a terminal's elapsed time live, and to
     * log within a tenth of the interval of its due time. */
    double step = p->terminal ? 1.0 : p->interval / 10;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double when = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + step;
    ts.tv_sec = (time_t)when;
    ts.tv_nsec = (long)((when - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    double now = now_s();
    if (!p->stop && p->active && (p->terminal || now - p->last_line >= p->interval))
      emit(p, now);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

double tn_progress_interval(void) {
  const char *s = getenv("TUNE_PROGRESS_INTERVAL");
  char *end = NULL;
  double v = s ? strtod(s, &end) : 0;
  return s && end != s && *end == '\0' && v > 0 && v <= 3600 ? v : 30.0;
}

tn_progress *tn_progress_begin(bool terminal, double interval) {
  tn_progress *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->terminal = terminal;
  p->interval = interval > 0 ? interval : 30.0;
  /* Ten redraws a second is as fast as anyone reads; a shorter interval
   * lowers it too, so a test can see a phase that lasts a few ms. */
  p->redraw = p->interval < 0.1 ? p->interval : 0.1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  if (pthread_create(&p->ticker, NULL, tick, p) != 0) {
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
    return NULL;
  }
  return p;
}

void tn_progress_unit(tn_progress *p, const char *file, const char *fusion) {
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  snprintf(p->name, sizeof p->name, "%s:%s", file, fusion);
  snprintf(p->phase, sizeof p->phase, "start");
  p->done = p->total = p->divergent = 0;
  p->unit_t0 = p->phase_t0 = now_s();
  /* The first log line is due one interval into the run, not at once: a
   * short check stays as quiet as before.  Later ones keep the interval
   * across units. */
  if (!p->terminal && p->last_line == 0)
    p->last_line = p->unit_t0;
  p->active = true;
  pthread_mutex_unlock(&p->mu);
}

void tn_progress_update(void *vp, const char *phase, int done, int total, int divergent) {
  tn_progress *p = vp;
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  double now = now_s();
  if (strcmp(p->phase, phase) != 0) {
    snprintf(p->phase, sizeof p->phase, "%s", phase);
    p->phase_t0 = now;
  }
  p->done = done;
  p->total = total;
  p->divergent = divergent;
  /* A terminal gets every change, at most ten redraws a second. */
  if (p->terminal && now - p->last_line >= p->redraw)
    emit(p, now);
  pthread_mutex_unlock(&p->mu);
}

void tn_progress_unit_done(tn_progress *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  p->active = false;
  if (p->terminal && p->drawn) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = false;
  }
  pthread_mutex_unlock(&p->mu);
}

void tn_progress_end(tn_progress *p) {
  if (!p)
    return;
  tn_progress_unit_done(p);
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->ticker, NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}
