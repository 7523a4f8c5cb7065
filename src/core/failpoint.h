/* Named failpoints: OG_FAILPOINT("mutation.post_sidecar") marks a place where tests may inject
 * a failure. They exist only in a testing build (-DOG_TESTING, what ctest builds and runs): in a
 * release build OG_FAILPOINT(name) is the constant 0 and nothing below is declared or defined,
 * so the library users get cannot be made to fail, or exit, by its environment. In a testing
 * build an unarmed failpoint costs one relaxed atomic load.
 * Arm them with core_fp_set() or the environment:
 *   OG_FAILPOINTS="name=error;other=exit(3);third=count;fourth=2*error(-2)"
 * Actions: error[(code)] returns an injected error (default OG_E_STORAGE, kind io);
 * exit[(status)] ends the process at once with _exit (default status 86);
 * count only counts hits. "N*" fires on the N-th hit only (hits before it pass). */
#ifndef OG_CORE_FAILPOINT_H
#define OG_CORE_FAILPOINT_H

#ifdef OG_TESTING

#include <stdatomic.h>
#include <stdint.h>

typedef enum core_fp_action {
    CORE_FP_OFF = 0,
    CORE_FP_ERROR,
    CORE_FP_EXIT,
    CORE_FP_COUNT,
} core_fp_action;

#define CORE_FP_EXIT_STATUS 86

extern atomic_int core_fp_armed;

/* 0 to go on, or a negative og_code (with the error set) when the failpoint fires. */
int core_fp_eval(const char *name);

#define OG_FAILPOINT(name)                                                                         \
    (__builtin_expect(atomic_load_explicit(&core_fp_armed, memory_order_relaxed) != 0, 0)          \
         ? core_fp_eval(name)                                                                      \
         : 0)

/* Arm `name`. arg: the error code for ERROR (0 = OG_E_STORAGE), the status for EXIT.
 * nth: fire only on the nth hit from now (0 = on every hit). */
int core_fp_set(const char *name, core_fp_action action, int arg, uint64_t nth);
void core_fp_clear(const char *name);
void core_fp_clear_all(void);
/* Hits of an armed failpoint since it was armed (0 if not armed). */
uint64_t core_fp_hits(const char *name);
/* Arm from a spec string in the OG_FAILPOINTS syntax. OG_E_BAD_REQUEST on a bad spec. */
int core_fp_parse(const char *spec);

#else

#define OG_FAILPOINT(name) 0

#endif /* OG_TESTING */

#endif
