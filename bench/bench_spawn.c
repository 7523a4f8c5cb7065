/* Run a command N times (fork/exec, output discarded) and print the median and best CPU time
 * (user + system, from wait4) and wall time of one run, as JSON, for the shell benchmarks
 * that compare our CLI with other systems' CLIs (bench/run_change.sh).
 *
 *   bench_spawn N cmd [args...]   ->  {"runs":N,"cpu_ms_p50":..,"cpu_ms_min":..,"wall_ms_p50":..}
 *
 * A run that exits non-zero stops the benchmark with exit code 1 (its stderr is shown). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_spawn N cmd [args...]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (n < 1) n = 1;
    double *cpu = calloc((size_t)n, sizeof *cpu), *wall = calloc((size_t)n, sizeof *wall);
    if (!cpu || !wall) return 1;
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0) dup2(fd, 1);
            execvp(argv[2], argv + 2);
            perror(argv[2]);
            _exit(127);
        }
        int st = 0;
        struct rusage ru;
        if (wait4(pid, &st, 0, &ru) < 0) {
            perror("wait4");
            return 1;
        }
        wall[i] = now_ms() - t0;
        cpu[i] = (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3 +
                 (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_spawn: %s failed (status %d)\n", argv[2], st);
            return 1;
        }
    }
    qsort(cpu, (size_t)n, sizeof *cpu, cmp_d);
    qsort(wall, (size_t)n, sizeof *wall, cmp_d);
    printf("{\"runs\":%d,\"cpu_ms_p50\":%.3f,\"cpu_ms_min\":%.3f,\"wall_ms_p50\":%.3f}\n", n,
           cpu[n / 2], cpu[0], wall[n / 2]);
    free(cpu);
    free(wall);
    return 0;
}
