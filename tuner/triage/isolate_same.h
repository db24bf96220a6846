/* isolate_same.h — is the one single-op kernel of a fusion's unfused run
 * (isolate.h) the fused kernel over again?
 *
 * A fusion whose fused computation holds one op besides its parameters
 * and constants (a lone dot, a reduce with its init value inline) has an
 * unfused run of one kernel: that op cut out as a module of its own
 * (tn_unit_module: parameters for its operands in first-use order, the
 * constants it reads kept inline).  When that module's entry is, in every
 * respect the device's lowering can read, the fused computation itself,
 * the device compiles the same kernel twice; isolate.c then takes the
 * fused output for the unfused one, given the rest of its conditions
 * (the same config, operands and timing-independent run: isolate.c says
 * why each is needed).
 *
 * The comparison is structural, by hlo_module_equal on two views that
 * share the modules' storage: the fusion unit module um with its launch
 * entry left out and its fused computation as the entry, against the
 * single-op module om whose entry bears the fused computation's name.  So
 * every instruction must match in order: name, opcode, shape with layout,
 * operands by position, parameter number, literal bits, typed and raw
 * attributes, callees by name; and every computation the op calls must
 * match too, as must the module header (replica and partition counts).
 * Left out, because the device reads neither: the name of the kernel
 * computation (the fused computation's own against the entry's; it only
 * names the kernel in messages) and a computation signature as written
 * in the text (the parameters themselves are compared).  Nor is the
 * fusion instruction compared (its kind, backend config): the built-in
 * device reads the launch only to bind the kernel's arguments.
 */
#ifndef TUNE_ISOLATE_SAME_H
#define TUNE_ISOLATE_SAME_H

#include <stdbool.h>
#include <stddef.h>

#include "hlo/hlo.h"

/* um: a fusion unit module (tn_unit_module: parameters and constants
 * around a root fusion); om: one instruction of its fused computation cut
 * out the same way.  True when om's kernel is um's fused computation as
 * above.  False (with the first difference in why, when why is not NULL)
 * otherwise, also when either is not of that form or memory runs out. */
bool tn_iso_same_kernel(const hlo_module *um, const hlo_module *om, char *why, size_t why_len);

#endif
