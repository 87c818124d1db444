#include "simstate.h"

#include <errno.h>
#include <stdio.h>

int simstate_library(const char *dir, char *out, size_t outlen)
{
        (void)dir; (void)out; (void)outlen;
        return -ENOENT; /* replaced by the simulator implementation */
}

int simstate_dev_prefix(const char *dir, char *out, size_t outlen)
{
        int n = snprintf(out, outlen, "%s/dev/nvidia", dir);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}
