/* libguard.h — a crash inside HDF5 or libconfig is a tool error, not a
 * signal.
 *
 * HDF5 1.10 and libconfig do not survive their own allocations failing:
 * HDF5 dereferences the NULL it got (in H5Tinsert, H5T_path_find,
 * H5CX_pop...) or crashes in its exit handler on an object it could not
 * close, and libconfig's parser does the same.  tune cannot make them
 * check their mallocs, so it makes their crash an ordinary tool error:
 * a fatal signal whose faulting code is in one of those libraries (the
 * first frame on the stack that is neither libc nor a sanitizer runtime)
 * ends tune with exit status 2 and a message saying memory most likely ran
 * out.  A crash in tune's own code keeps its signal: it is a bug to fix.
 *
 * Nothing HDF5 does is on disk (h5image.h: files are built in memory and
 * written by tune afterwards), so a crash inside HDF5 cannot leave a
 * half-written file.  What a command has begun on disk and must take back
 * on failure (the all-or-nothing `--check -o`) registers a cleanup here,
 * which runs before the exit.
 */
#ifndef TUNE_LIBGUARD_H
#define TUNE_LIBGUARD_H

/* Installs the handlers for SIGSEGV, SIGBUS, SIGABRT, SIGFPE and SIGILL.
 * Called once, at the start of main. */
void tn_libguard_install(void);

/* main has returned `status`: only exit handlers run from now on, and a
 * crash in them (HDF5's H5_term_library) is the library's.  Flushes
 * every stdio stream first. */
void tn_libguard_main_returned(int status);

/* Cleanups to run before such an exit, at most four at a time; adding
 * one already there, or removing one that is not, does nothing.  fn runs
 * in a signal handler: it may only make async-signal-safe calls (rename,
 * unlink). */
void tn_libguard_add_cleanup(void (*fn)(void));
void tn_libguard_remove_cleanup(void (*fn)(void));

/* Runs the registered cleanups, each once (also for a library that calls
 * exit() instead of crashing). */
void tn_libguard_cleanup(void);

#endif
