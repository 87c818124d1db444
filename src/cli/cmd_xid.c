#include <stdio.h>
#include "cli/cli.h"

int cmd_xid(int argc, char **argv)
{
        (void)argc; (void)argv;
        fprintf(stderr, "ghostvram xid: not built yet\n");
        return EXIT_USAGE;
}
