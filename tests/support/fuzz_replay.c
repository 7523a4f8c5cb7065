/* Replays fuzz inputs through a LLVMFuzzerTestOneInput target without libFuzzer, so every
 * build (gcc included) runs the seed corpus and the saved crash regressions under ctest.
 * Usage: <target>_replay FILE_OR_DIR...  Exit 0 when every input ran without crashing. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 0;
}

static int run_path(const char *path, unsigned *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "missing corpus path %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return run_file(path);
    }
    DIR *d = opendir(path);
    if (!d) return 1;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        rc |= run_path(sub, count);
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    unsigned count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= run_path(argv[i], &count);
    printf("%u passed, %d failed\n", count, rc ? 1 : 0);
    return rc;
}
