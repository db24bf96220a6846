/* verdict.h — what the checker concludes about one candidate. */
#ifndef TUNE_CHECK_VERDICT_H
#define TUNE_CHECK_VERDICT_H

/* X(enum suffix, text name) — the text names are stored in HDF5 and
 * printed; never rename one without bumping the store's schema version. */
#define CHK_VERDICT_LIST(X)                                                          \
  X(MATCH, "match")                       /* bitwise equal to the default */          \
  X(BENIGN, "benign")                     /* within the derived tolerance */          \
  X(MISMATCH_CANDIDATE, "mismatch-candidate") /* the candidate is wrong */            \
  X(MISMATCH_DEFAULT, "mismatch-default") /* the default is wrong, not the candidate */ \
  X(MISMATCH_BOTH, "mismatch-both")       /* both disagree with the reference */       \
  X(COMPILE_ERROR, "compile-error")       /* illegal block shape, VMEM exhausted */   \
  X(RUNTIME_ERROR, "runtime-error")       /* redzone write, poisoned read, hang */     \
  X(TIMEOUT, "timeout")                                                               \
  X(NONDETERMINISTIC, "nondeterministic") /* same input, different output on rerun */ \
  X(TOOL_ERROR, "tool-error")             /* the host failed (out of memory...):     \
                                             says nothing about the device */

typedef enum chk_verdict {
#define X(e, name) CHK_VERDICT_##e,
  CHK_VERDICT_LIST(X)
#undef X
  CHK_VERDICT_COUNT
} chk_verdict;

const char *chk_verdict_name(chk_verdict v);
/* -1 when the name is not a verdict. */
int chk_verdict_from_name(const char *name);
/* A divergence is a finding: any mismatch, a runtime error, or
 * nondeterminism.  compile-error, timeout and tool-error are not findings. */
int chk_verdict_is_divergent(chk_verdict v);

#endif
