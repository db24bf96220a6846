/* hlo_clones.h — hot loops built for the wider vector units as well.
 *
 * GCC's function multiversioning compiles a function once per target named
 * here and, when the program loads, binds the widest one the CPU runs.  The
 * loops that carry these attributes (the evaluator's and the device's f32
 * kernels, the numerics' blocks) do the same IEEE operation on every lane
 * whatever the width, and none of the targets enables FMA (the whole build
 * has -ffp-contract=off as well, m4/tune_flags.m4), so every clone gives
 * the bits of the default build; only the speed depends on the machine.
 *
 * One definition for every layer, so that a target added or dropped here
 * changes all of them together.  Elsewhere (clang, other CPUs or systems)
 * the attributes are empty and the plain build runs. */
#ifndef TUNE_HLO_CLONES_H
#define TUNE_HLO_CLONES_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define HLO_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
/* For a loop whose AVX-512 build measured slower than its AVX2 one. */
#define HLO_CLONES_AVX2 __attribute__((target_clones("avx2", "default")))
#else
#define HLO_CLONES
#define HLO_CLONES_AVX2
#endif

#endif
