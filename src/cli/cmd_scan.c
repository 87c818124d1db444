#include <stdio.h>
#include "cli/cli.h"

int cmd_scan(int argc, char **argv)
{
        (void)argc; (void)argv;
        fprintf(stderr, "ghostvram scan: not built yet\n");
        return EXIT_USAGE;
}
