/* Built into the test support library only with -DOG_TSAN=ON, where every test links with
 * -Wl,--wrap=fork. ThreadSanitizer cannot follow a child forked from a process with threads
 * that starts threads of its own (as every child that opens a store does): it fails the child
 * with "dup thread with used id". So under TSan a cell that forks is skipped, saying so; its
 * threads-only cells still run. (system() and popen() do not come here: they spawn.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

pid_t __wrap_fork(void);

pid_t __wrap_fork(void)
{
    print_message("skipped under ThreadSanitizer: this cell forks a child that starts threads, "
                  "which TSan cannot follow\n");
    skip();
    return -1; /* not reached */
}
