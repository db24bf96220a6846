/* hlo_minmax.h — HLO's maximum and minimum of floats, the one definition
 * that the device's elementwise ops and folds and the reference evaluator
 * all use.
 *
 * XLA propagates NaN (a NaN operand gives a NaN, the first one when both
 * are) and orders -0 below +0, as IEEE 754-2019's maximum and minimum do;
 * C's fmax/fmin do neither.  Written branch-free on comparisons so that
 * the folds that call it in their inner loops still vectorise. */
#ifndef TUNE_HLO_MINMAX_H
#define TUNE_HLO_MINMAX_H

#include <math.h>

static inline float hlo_max_f32(float a, float b) {
  return a != a ? a : b != b ? b : b > a || (b == a && signbit(a)) ? b : a;
}
static inline float hlo_min_f32(float a, float b) {
  return a != a ? a : b != b ? b : b < a || (b == a && signbit(b)) ? b : a;
}
static inline double hlo_max_f64(double a, double b) {
  return a != a ? a : b != b ? b : b > a || (b == a && signbit(a)) ? b : a;
}
static inline double hlo_min_f64(double a, double b) {
  return a != a ? a : b != b ? b : b < a || (b == a && signbit(b)) ? b : a;
}

#endif
