/* peak.h — the expected and actual values around an error map's peak
 * (tn_peak_window, result.h), taken when the map is made. */
#ifndef TUNE_PEAK_H
#define TUNE_PEAK_H

#include "result.h"

/* Fills e->peak from e's data (the peak: the largest |error|, the first
 * NaN when there is one, the first element when all are 0) and the two
 * output leaves the map compares, which have e's shape: actual is the
 * candidate's, expected what it was compared with. */
void tn_peak_window_fill(tn_error_map *e, const hlo_value *actual, const hlo_value *expected);

#endif
