/* cli_print.c - see cli_print.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_print.h"

int cli_print_json(json_t *j, size_t flags)
{
	char *s = j ? json_dumps(j, flags) : NULL;
	json_decref(j);
	if (!s)
		return -ENOMEM;
	puts(s);
	free(s);
	return 0;
}
