/* sim_host: what the unit tests that make a temporary simulated host (`ghostvram sim init`)
 * share. */
#pragma once
#include <unistd.h>

#include "util/fileio.h"

/* Remove the host's directory: again for 2 s at most while the simulated driver's teardown
 * watchers still write into it as the test's jobs die. */
static inline void sim_host_remove(const char *dir)
{
        for (int i = 0; i < 40 && remove_tree(dir) < 0; i++)
                usleep(50 * 1000);
}
