/* convert_manifest.c - unit tests of the manifest helpers (model_manifest.c) and
 * of container-open edge cases that need no model. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_container.h"
#include "convert.h"
#include "model_manifest.h"
#include "test_util.h"

static void test_paths(void)
{
	CHECK(manifest_path_safe("dense/layer-000.bin"));
	CHECK(manifest_path_safe("tokenizer/tokenizer.json"));
	CHECK(manifest_path_safe("a"));
	CHECK(!manifest_path_safe(""));
	CHECK(!manifest_path_safe(NULL));
	CHECK(!manifest_path_safe("/etc/passwd"));
	CHECK(!manifest_path_safe("../x"));
	CHECK(!manifest_path_safe("dense/../../x"));
	CHECK(!manifest_path_safe("dense/./x"));
	CHECK(!manifest_path_safe("dense//x"));
	CHECK(!manifest_path_safe("dense/"));
	CHECK(manifest_path_safe("dense/..x"));
	char *j = manifest_join("/m", "dense/a.bin");
	CHECK(j && !strcmp(j, "/m/dense/a.bin"));
	free(j);
	CHECK(manifest_is_sha256_hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	CHECK(!manifest_is_sha256_hex("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
	CHECK(!manifest_is_sha256_hex("e3b0"));
}

static void test_getters(void)
{
	coli_err err = { 0, "" };
	json_t *o = json_pack("{s:i,s:s,s:f,s:[],s:{}}", "n", 5, "s", "x", "r", 1.5, "a", "o");
	int64_t v;
	const char *s;
	json_t *x;
	CHECK(manifest_get_int(o, "n", 0, 10, &v, "w", &err) == 0 && v == 5);
	CHECK(manifest_get_int(o, "n", 6, 10, &v, "w", &err) == -EINVAL);
	CHECK(strstr(err.msg, "w: \"n\" = 5 out of range") != NULL);
	CHECK(manifest_get_int(o, "r", 0, 10, &v, "w", &err) == -EINVAL);
	CHECK(strstr(err.msg, "must be an integer") != NULL);
	CHECK(manifest_get_int(o, "missing", 0, 10, &v, "ctx", &err) == -EINVAL);
	CHECK(!strcmp(err.msg, "ctx: missing key \"missing\""));
	CHECK(manifest_get_str(o, "s", &s, "w", &err) == 0 && !strcmp(s, "x"));
	CHECK(manifest_get_str(o, "n", &s, "w", &err) == -EINVAL);
	CHECK(manifest_get_arr(o, "a", &x, "w", &err) == 0);
	CHECK(manifest_get_arr(o, "o", &x, "w", &err) == -EINVAL);
	CHECK(manifest_get_obj(o, "o", &x, "w", &err) == 0);
	json_decref(o);
}

static void test_files(const char *dir)
{
	coli_err err = { 0, "" };
	char path[4096], tmp[4200];
	snprintf(path, sizeof path, "%s/m.json", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	json_t *o = json_pack("{s:s,s:i,s:f}", "format", MANIFEST_FORMAT, "version", 1, "x", 0.1);
	CHECK(manifest_save(path, o, &err) == 0);
	/* no temporary file (m.json.tmp.PID.N, util_file.h) is left */
	CHECK(access(tmp, F_OK) != 0);
	{
		DIR *d = opendir(dir);
		struct dirent *e;
		int left = 0;
		while (d && (e = readdir(d)))
			left += !strncmp(e->d_name, "m.json.tmp", 10);
		if (d)
			closedir(d);
		CHECK(d && left == 0, "%d temporary files left", left);
	}
	char *data = NULL;
	size_t len = 0;
	CHECK(manifest_read_file(path, &data, &len, &err) == 0);
	CHECK(data && len > 2 && data[len - 1] == '\n' && data[len] == '\0');
	/* key order is kept: format first */
	CHECK(data && strstr(data, "\"format\"") < strstr(data, "\"version\""));
	free(data);
	json_t *back = NULL;
	CHECK(manifest_load(path, &back, &err) == 0 && json_equal(o, back));
	json_decref(back);
	json_decref(o);
	/* parse errors name file, line and column */
	CHECK(manifest_write_atomic(path, "{\n\"a\": }", 8, &err) == 0);
	CHECK(manifest_load(path, &back, &err) == -EINVAL);
	CHECK(strstr(err.msg, "m.json: line 2") != NULL);
	/* duplicate keys are refused */
	CHECK(manifest_write_atomic(path, "{\"a\":1,\"a\":2}", 13, &err) == 0);
	CHECK(manifest_load(path, &back, &err) == -EINVAL);
	CHECK(manifest_read_file("/nonexistent/x", &data, &len, &err) == -ENOENT);
	CHECK(strstr(err.msg, "/nonexistent/x") != NULL);
	unlink(path);
}

static void test_container_edges(const char *dir)
{
	coli_err err = { 0, "" };
	coli_container *c = (coli_container *)1;
	coli_container_free(NULL);
	CHECK(coli_container_open("/nonexistent-model", NULL, &c, &err) < 0);
	CHECK(c == NULL);
	CHECK(strstr(err.msg, "/nonexistent-model/manifest.json") != NULL);
	char path[4096];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	CHECK(manifest_write_atomic(path, "[1,2]", 5, &err) == 0);
	CHECK(coli_container_open(dir, NULL, &c, &err) == -EINVAL);
	CHECK(strstr(err.msg, "not a JSON object") != NULL);
	const char *v = "{\"format\":\"colitop-model\",\"version\":\"1\"}";
	CHECK(manifest_write_atomic(path, v, strlen(v), &err) == 0);
	CHECK(coli_container_open(dir, NULL, &c, &err) == -EINVAL);
	CHECK(strstr(err.msg, "\"version\" must be an integer") != NULL);
	unlink(path);
}

static void test_names(void)
{
	CHECK(!strcmp(convert_class_name(CONVERT_CLS_ATTENTION), "attention"));
	CHECK(!strcmp(convert_class_name(CONVERT_CLS_LM_HEAD), "lm_head"));
	CHECK(convert_class_name(CONVERT_CLS_COUNT) == NULL);
	CHECK(!strcmp(convert_alt_name(CONVERT_CLS_EXPERTS, COLI_Q_INT4), "rel_rms_sym_int4"));
	CHECK(!strcmp(convert_alt_name(CONVERT_CLS_EMBED, COLI_Q_INT8), "rel_rms_int4"));
	CHECK(convert_alt_name(CONVERT_CLS_ATTENTION, COLI_Q_INT8) == NULL);
	CHECK(convert_rel_rms(0, 0) == 0.0 && convert_rel_rms(1, 4) == 0.5);
}

int main(void)
{
	char tmpl[] = "/tmp/convert_manifest.XXXXXX";
	char *dir = mkdtemp(tmpl);
	if (!dir) {
		perror("mkdtemp");
		return 1;
	}
	test_paths();
	test_getters();
	test_files(dir);
	test_container_edges(dir);
	test_names();
	rmdir(dir);
	return test_summary(__FILE__);
}
