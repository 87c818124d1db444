#include <stdio.h>
#include "cli/cli.h"

int cmd_snapshot(int argc, char **argv)
{
        (void)argc; (void)argv;
        fprintf(stderr, "ghostvram snapshot: not built yet\n");
        return EXIT_USAGE;
}
