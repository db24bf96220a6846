/* hlo_opcode.h — every opcode XLA can write in HLO text.
 *
 * The list is the union of XLA's HLO_OPCODE_LIST and the spellings seen in
 * real dumps.  Being complete matters more than being supported: the parser
 * must accept a module even when evaluation later refuses one of its ops, and
 * it must reject a name that is not an opcode at all.
 */
#ifndef TUNE_HLO_OPCODE_H
#define TUNE_HLO_OPCODE_H

#include <stddef.h>

/* X(enum suffix, text name) */
#define HLO_OPCODE_LIST(X)                               \
  X(ABS, "abs")                                          \
  X(ADD, "add")                                          \
  X(ADD_DEPENDENCY, "add-dependency")                    \
  X(AFTER_ALL, "after-all")                              \
  X(ALL_GATHER, "all-gather")                            \
  X(ALL_GATHER_START, "all-gather-start")                \
  X(ALL_GATHER_DONE, "all-gather-done")                  \
  X(ALL_REDUCE, "all-reduce")                            \
  X(ALL_REDUCE_START, "all-reduce-start")                \
  X(ALL_REDUCE_DONE, "all-reduce-done")                  \
  X(ALL_TO_ALL, "all-to-all")                            \
  X(AND, "and")                                          \
  X(ASYNC_START, "async-start")                          \
  X(ASYNC_UPDATE, "async-update")                        \
  X(ASYNC_DONE, "async-done")                            \
  X(ATAN2, "atan2")                                      \
  X(BATCH_NORM_GRAD, "batch-norm-grad")                  \
  X(BATCH_NORM_INFERENCE, "batch-norm-inference")        \
  X(BATCH_NORM_TRAINING, "batch-norm-training")          \
  X(BITCAST, "bitcast")                                  \
  X(BITCAST_CONVERT, "bitcast-convert")                  \
  X(BROADCAST, "broadcast")                              \
  X(CALL, "call")                                        \
  X(CBRT, "cbrt")                                        \
  X(CEIL, "ceil")                                        \
  X(CHOLESKY, "cholesky")                                \
  X(CLAMP, "clamp")                                      \
  X(CLZ, "count-leading-zeros")                          \
  X(COLLECTIVE_BROADCAST, "collective-broadcast")        \
  X(COLLECTIVE_PERMUTE, "collective-permute")            \
  X(COLLECTIVE_PERMUTE_START, "collective-permute-start") \
  X(COLLECTIVE_PERMUTE_DONE, "collective-permute-done")  \
  X(COMPARE, "compare")                                  \
  X(COMPLEX, "complex")                                  \
  X(CONCATENATE, "concatenate")                          \
  X(CONDITIONAL, "conditional")                          \
  X(CONSTANT, "constant")                                \
  X(CONVERT, "convert")                                  \
  X(CONVOLUTION, "convolution")                          \
  X(COPY, "copy")                                        \
  X(COPY_START, "copy-start")                            \
  X(COPY_DONE, "copy-done")                              \
  X(COSINE, "cosine")                                    \
  X(CUSTOM_CALL, "custom-call")                          \
  X(DIVIDE, "divide")                                    \
  X(DOMAIN, "domain")                                    \
  X(DOT, "dot")                                          \
  X(DYNAMIC_RESHAPE, "dynamic-reshape")                  \
  X(DYNAMIC_SLICE, "dynamic-slice")                      \
  X(DYNAMIC_UPDATE_SLICE, "dynamic-update-slice")        \
  X(ERF, "erf")                                          \
  X(EXP, "exponential")                                  \
  X(EXPM1, "exponential-minus-one")                      \
  X(FFT, "fft")                                          \
  X(FLOOR, "floor")                                      \
  X(FUSION, "fusion")                                    \
  X(GATHER, "gather")                                    \
  X(GET_DIMENSION_SIZE, "get-dimension-size")            \
  X(GET_TUPLE_ELEMENT, "get-tuple-element")              \
  X(IMAG, "imag")                                        \
  X(INFEED, "infeed")                                    \
  X(IOTA, "iota")                                        \
  X(IS_FINITE, "is-finite")                              \
  X(LOG, "log")                                          \
  X(LOG1P, "log-plus-one")                               \
  X(LOGISTIC, "logistic")                                \
  X(MAP, "map")                                          \
  X(MAXIMUM, "maximum")                                  \
  X(MINIMUM, "minimum")                                  \
  X(MULTIPLY, "multiply")                                \
  X(NEGATE, "negate")                                    \
  X(NOT, "not")                                          \
  X(OPT_BARRIER, "opt-barrier")                          \
  X(OR, "or")                                            \
  X(OUTFEED, "outfeed")                                  \
  X(PAD, "pad")                                          \
  X(PARAMETER, "parameter")                              \
  X(PARTITION_ID, "partition-id")                        \
  X(POPCNT, "popcnt")                                    \
  X(POWER, "power")                                      \
  X(RAGGED_ALL_TO_ALL, "ragged-all-to-all")              \
  X(RAGGED_DOT, "ragged-dot")                            \
  X(REAL, "real")                                        \
  X(RECV, "recv")                                        \
  X(RECV_DONE, "recv-done")                              \
  X(REDUCE, "reduce")                                    \
  X(REDUCE_PRECISION, "reduce-precision")                \
  X(REDUCE_SCATTER, "reduce-scatter")                    \
  X(REDUCE_WINDOW, "reduce-window")                      \
  X(REMAINDER, "remainder")                              \
  X(REPLICA_ID, "replica-id")                            \
  X(RESHAPE, "reshape")                                  \
  X(REVERSE, "reverse")                                  \
  X(RNG, "rng")                                          \
  X(RNG_BIT_GENERATOR, "rng-bit-generator")              \
  X(RNG_GET_AND_UPDATE_STATE, "rng-get-and-update-state") \
  X(ROUND_AFZ, "round-nearest-afz")                      \
  X(ROUND_EVEN, "round-nearest-even")                    \
  X(RSQRT, "rsqrt")                                      \
  X(SCALED_DOT, "scaled-dot")                            \
  X(SCATTER, "scatter")                                  \
  X(SELECT, "select")                                    \
  X(SELECT_AND_SCATTER, "select-and-scatter")            \
  X(SEND, "send")                                        \
  X(SEND_DONE, "send-done")                              \
  X(SET_DIMENSION_SIZE, "set-dimension-size")            \
  X(SHIFT_LEFT, "shift-left")                            \
  X(SHIFT_RIGHT_ARITHMETIC, "shift-right-arithmetic")    \
  X(SHIFT_RIGHT_LOGICAL, "shift-right-logical")          \
  X(SIGN, "sign")                                        \
  X(SINE, "sine")                                        \
  X(SLICE, "slice")                                      \
  X(SORT, "sort")                                        \
  X(SQRT, "sqrt")                                        \
  X(STOCHASTIC_CONVERT, "stochastic-convert")            \
  X(SUBTRACT, "subtract")                                \
  X(TAN, "tan")                                          \
  X(TANH, "tanh")                                        \
  X(TOPK, "topk")                                        \
  X(TRANSPOSE, "transpose")                              \
  X(TRIANGULAR_SOLVE, "triangular-solve")                \
  X(TUPLE, "tuple")                                      \
  X(WHILE, "while")                                      \
  X(XOR, "xor")

typedef enum hlo_opcode {
  HLO_OP_INVALID = 0,
#define X(e, name) HLO_OP_##e,
  HLO_OPCODE_LIST(X)
#undef X
  HLO_OP_COUNT
} hlo_opcode;

const char *hlo_opcode_name(hlo_opcode op);
/* Looks up n bytes of text; HLO_OP_INVALID when it names no opcode. */
hlo_opcode hlo_opcode_from_name(const char *s, size_t n);

#endif
