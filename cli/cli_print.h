/* cli_print.h - what the `coli` commands print the same way. */
#ifndef COLI_CLI_PRINT_H
#define COLI_CLI_PRINT_H

#include <stddef.h>

#include <jansson.h>

/* Print J on stdout as json_dumps(J, FLAGS) and a newline, then release
 * J (the reference is the caller's; NULL prints nothing). 0, or -ENOMEM
 * when J is NULL or could not be serialized. */
int cli_print_json(json_t *j, size_t flags);

#endif
