/* Replays a fuzz corpus (a directory of inputs, or files) through LLVMFuzzerTestOneInput, so
 * that every corpus runs as an ordinary test without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path, unsigned *n)
{
        char *data;
        size_t len;
        if (read_file_at(-100 /* AT_FDCWD */, path, 16u << 20, &data, &len) < 0) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                return -1;
        }
        LLVMFuzzerTestOneInput((const uint8_t *)data, len);
        free(data);
        (*n)++;
        return 0;
}

int main(int argc, char **argv)
{
        unsigned n = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "replay: %s: no such corpus\n", argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (replay_file(argv[i], &n) < 0)
                                return 1;
                        continue;
                }
                DIR *d = opendir(argv[i]);
                if (!d)
                        return 1;
                struct dirent *e;
                while ((e = readdir(d))) {
                        if (e->d_name[0] == '.')
                                continue;
                        char p[4096];
                        snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
                        if (replay_file(p, &n) < 0) {
                                closedir(d);
                                return 1;
                        }
                }
                closedir(d);
        }
        if (n == 0) {
                fprintf(stderr, "replay: empty corpus\n");
                return 1;
        }
        printf("replayed %u inputs: %u passed, 0 failed\n", n, n);
        return 0;
}
