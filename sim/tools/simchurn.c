/* gv-simchurn: tests only. A busy process that changes its address space all the time, as a
 * data loader or an allocator does: it takes its mmap lock for writing again and again, and
 * /proc's maps waits for it between the chunks of a read. With --fork it also starts, over and
 * over, a child that maps memory and exits at once: processes that come and go between the
 * iterators of one BPF walk (seen by the task iterator, their address space gone or replaced
 * by the time the mapping iterator comes). Nothing of it is ever in the driver.
 *
 *   gv-simchurn [--fork] [PATH]
 *                        maps PATH shared (when given: a simulated device file, so that a scan
 *                        must read its maps to see it hold the node) and closes it, prints
 *                        "ready", then maps, touches and unmaps anonymous memory in a loop
 *                        (with --fork: in a child each time) until killed
 *
 * Errors: one line "error MESSAGE" on stdout and exit 1. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHURN_BYTES (1u << 20)

static void churn(void)
{
        volatile char *p = mmap(NULL, CHURN_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return;
        p[0] = 1;
        p[CHURN_BYTES - 1] = 1;
        munmap((void *)p, CHURN_BYTES);
}

int main(int argc, char **argv)
{
        int i = 1;
        bool forks = argc > 1 && strcmp(argv[1], "--fork") == 0;
        i += forks;
        if (argc > i + 1) {
                printf("error usage: gv-simchurn [--fork] [PATH]\n");
                return 1;
        }
        if (argc == i + 1) {
                int fd = open(argv[i], O_RDWR | O_CLOEXEC);
                /* never touched: the simulated node is an empty file */
                void *m = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                if (m == MAP_FAILED) {
                        printf("error %s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                close(fd);
        }
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                if (!forks) {
                        churn();
                        continue;
                }
                pid_t c = fork();
                if (c == 0) {
                        churn();
                        _exit(0);
                }
                if (c > 0)
                        while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
                                ;
        }
}
