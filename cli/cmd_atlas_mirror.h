/* cmd_atlas_mirror.h - `coli atlas --plan-mirror SIZE`: which expert records
 * a mirror of SIZE bytes should hold, and writing that partial copy. */
#ifndef COLI_CMD_ATLAS_MIRROR_H
#define COLI_CMD_ATLAS_MIRROR_H

/* argv[0] is the word that selected it ("atlas"), ignored; argv[1..] are
 * the atlas arguments, `--plan-mirror SIZE` among them (anywhere), so
 * `coli atlas` hands over its own argc/argv unchanged when it sees
 * --plan-mirror. Returns the exit status (0, 1 failure, 2 usage). */
int cmd_atlas_plan_mirror(int argc, char **argv);

#endif
