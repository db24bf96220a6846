/* progress.h — what a long check is doing, while it does it.
 *
 * On a terminal: one line on stderr, redrawn in place and cleared when the
 * unit is done:
 *
 *   [candidates] datasets/softmax.hlo:fused_softmax 37/256 divergent 0  12s, ETA 1m10s
 *
 * Not on a terminal (a cron log, a CI job): a timestamped line like the
 * sweep's log, `2026-12-01T02:30:31Z tune: progress: ...`, whenever
 * `interval` seconds have passed without one, so that a long phase (a
 * reference evaluation of minutes) still shows the run is alive.  A ticker
 * thread does the waking, so a phase that reports nothing for a while is
 * still logged.  The ETA is the candidates' pace so far; other phases
 * have none.
 *
 * tn_progress_update has the signature of tn_sweep_opts.on_progress; it
 * may be called from any thread.  Nothing is printed after tn_progress_end.
 */
#ifndef TUNE_PROGRESS_H
#define TUNE_PROGRESS_H

#include <stdbool.h>

typedef struct tn_progress tn_progress;

/* terminal: redraw in place; else log every interval seconds (> 0).
 * NULL when out of memory or the ticker cannot start (no progress then). */
tn_progress *tn_progress_begin(bool terminal, double interval);
/* A new unit: its name (FILE:FUSION) and a fresh clock. */
void tn_progress_unit(tn_progress *p, const char *file, const char *fusion);
void tn_progress_update(void *p, const char *phase, int done, int total, int divergent);
/* The unit is over: clears the terminal line. */
void tn_progress_unit_done(tn_progress *p);
void tn_progress_end(tn_progress *p);

/* The log interval: TUNE_PROGRESS_INTERVAL seconds when set (tests use a
 * short one), else 30. */
double tn_progress_interval(void);

#endif
