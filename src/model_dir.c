/* model_dir.c - see model_dir.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include "model_dir.h"

static int has_manifest(const char *dir)
{
	char p[4096];
	struct stat st;
	if (snprintf(p, sizeof p, "%s/manifest.json", dir) >= (int)sizeof p)
		return 0;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int coli_model_dir_resolve(const char *arg, char *out, size_t cap, coli_err *err)
{
	const char *env = getenv("COLI_MODEL");
	const char *pick = arg && *arg ? arg : env && *env ? env : NULL;
	if (pick) {
		if (strlen(pick) >= cap)
			return coli_err_set(err, -ENAMETOOLONG, "model path too long: %s", pick);
		strcpy(out, pick);
		return 0;
	}
	/* Running from the build tree must find the shipped model without an
	 * install step; an installed binary finds it under PKGDATADIR. */
	const char *candidates[] = { COLI_SRCDIR "/data/default-model", COLI_DATADIR "/default-model" };
	for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
		if (has_manifest(candidates[i]) && strlen(candidates[i]) < cap) {
			strcpy(out, candidates[i]);
			return 0;
		}
	}
	return coli_err_set(err, -ENOENT,
			    "no model given: pass a model directory or set COLI_MODEL "
			    "(the default model was not found in %s)", COLI_DATADIR);
}

static int has_file(const char *dir, const char *name)
{
	char p[4096];
	struct stat st;
	if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
		return 0;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int has_safetensors(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		found = n > 12 && !strcmp(de->d_name + n - 12, ".safetensors");
	}
	closedir(d);
	return found;
}

int coli_model_dir_explain(const char *dir, coli_err *err)
{
	struct stat st;
	if (stat(dir, &st) < 0)
		return coli_err_set(err, -errno, "%s/manifest.json: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return coli_err_set(err, -ENOTDIR, "%s: not a directory (a model is a container "
				    "directory made by `coli convert` or `coli pull`)", dir);
	if (has_file(dir, "config.json") && has_safetensors(dir))
		return coli_err_set(err, -ENOENT,
				    "%s: a Hugging Face checkpoint, not a colitop model container; "
				    "make one with `coli convert %s OUT_DIR` (or straight from the Hub: "
				    "`coli pull ORG/NAME OUT_DIR`) and pass OUT_DIR", dir, dir);
	return coli_err_set(err, -ENOENT,
			    "%s: neither a colitop model container (no manifest.json) nor a "
			    "Hugging Face checkpoint (config.json and *.safetensors); make a "
			    "container with `coli pull ORG/NAME %s`", dir, dir);
}
