/* store_size.c - size_parse: units, percentages of available memory, auto,
 * bad input; /proc/meminfo and cgroup parsing; the store's shared flag and
 * environment parser. */
#include "config.h"

#include "expert_store.h"
#include "expert_store_int.h"
#include "store_iobench.h"
#include "util_size_parse.h"
#include "store_test.h"

static void ok(const char *s, int64_t avail, int64_t want)
{
	int64_t v = -2;
	coli_err e;
	coli_err_clear(&e);
	int rc = size_parse_with(s, avail, "--x", &v, &e);
	if (rc || v != want) {
		fprintf(stderr, "'%s': rc %d value %lld, want %lld (%s)\n", s, rc, (long long)v, (long long)want, e.msg);
		exit(1);
	}
}

static void bad(const char *s)
{
	int64_t v;
	coli_err e;
	coli_err_clear(&e);
	REQUIRE(size_parse_with(s, 1000, "--expert-cache", &v, &e) < 0);
	REQUIRE(strstr(e.msg, "--expert-cache"));
}

int main(void)
{
	const int64_t K = 1024, M = K * K, G = M * K;
	ok("0", -1, 0);
	ok("4096", -1, 4096);
	ok("512MB", -1, 512 * M);
	ok("512M", -1, 512 * M);
	ok("512 MiB", -1, 512 * M);
	ok("8GB", -1, 8 * G);
	ok("8g", -1, 8 * G);
	ok("1.5GiB", -1, 3 * G / 2);
	ok("2T", -1, 2048 * G);
	ok("64k", -1, 64 * K);
	ok("100B", -1, 100);
	ok("25%", 8 * G, 2 * G);
	ok("100%", 1000, 1000);
	ok("0%", 1000, 0);
	ok("auto", -1, -1);
	ok("AUTO", -1, -1);
	bad("");
	bad("abc");
	bad("12XB");
	bad("-5");
	bad("150%");
	bad("5%%");
	bad("8GBs");
	bad("1e30T");

	REQUIRE(size_meminfo_available("MemTotal: 100 kB\nMemFree: 5 kB\nMemAvailable:   2048 kB\n") == 2048 * K);
	REQUIRE(size_meminfo_available("MemTotal: 100 kB\n") == -1);
	REQUIRE(size_cgroup_limit("max\n") == -1);
	REQUIRE(size_cgroup_limit("1073741824\n") == G);
	REQUIRE(size_cgroup_limit("9223372036854771712\n") == -1); /* v1 "unlimited" */
	REQUIRE(size_mem_available() > 0);
	char cg[256];
	const char *v1 = "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n";
	REQUIRE(size_cgroup_path(v1, 0, cg, sizeof cg) == 0 && !strcmp(cg, "/process_api/abc"));
	REQUIRE(size_cgroup_path(v1, 1, cg, sizeof cg) == 0 && !strcmp(cg, "/"));
	REQUIRE(size_cgroup_path("5:cpu,memory:/a/b\n", 0, cg, sizeof cg) == 0 && !strcmp(cg, "/a/b"));
	REQUIRE(size_cgroup_path("0::/user.slice/x.scope", 1, cg, sizeof cg) == 0 && !strcmp(cg, "/user.slice/x.scope"));
	REQUIRE(size_cgroup_path("4:memoryx:/z\n", 0, cg, sizeof cg) == -ENOENT);
	REQUIRE(size_cgroup_path("", 1, cg, sizeof cg) == -ENOENT);
	int64_t v;
	REQUIRE(size_parse("10%", "x", &v, NULL) == 0 && v > 0);

	char buf[32];
	REQUIRE(!strcmp(size_format(512 * M, buf, sizeof buf), "512.0 MiB"));
	REQUIRE(!strcmp(size_format(3 * G / 2, buf, sizeof buf), "1.50 GiB"));

	/* the shared flag parser */
	expert_store_opts o;
	expert_store_opts_default(&o);
	coli_err e;
	REQUIRE(o.cache_bytes == -1 && o.pin_bytes == -1 && o.prefetch == 1 && o.direct == -1);
	REQUIRE(expert_store_opts_parse_flag(&o, "--expert-cache", "8GB", &e) == 1 && o.cache_bytes == 8 * G);
	REQUIRE(expert_store_opts_parse_flag(&o, "--pin-budget=1G", NULL, &e) == 0 && o.pin_bytes == G);
	REQUIRE(expert_store_opts_parse_flag(&o, "--no-prefetch", NULL, &e) == 0 && o.prefetch == 0);
	REQUIRE(expert_store_opts_parse_flag(&o, "--no-direct", NULL, &e) == 0 && o.direct == 0);
	REQUIRE(expert_store_opts_parse_flag(&o, "--direct", NULL, &e) == 0 && o.direct == 1);
	REQUIRE(expert_store_opts_parse_flag(&o, "--mirror", "/a", &e) == 1);
	REQUIRE(expert_store_opts_parse_flag(&o, "--mirror=/b", NULL, &e) == 0);
	REQUIRE(o.mirrors && !strcmp(o.mirrors[0], "/a") && !strcmp(o.mirrors[1], "/b") && !o.mirrors[2]);
	REQUIRE(expert_store_opts_parse_flag(&o, "--mirror-weights", "1,2.5,0.5", &e) == 1);
	REQUIRE(o.mirror_weights[1] == 2.5 && o.mirror_weights[2] == 0.5);
	REQUIRE(expert_store_opts_parse_flag(&o, "--cache-policy", "lfu-decay", &e) == 1 &&
	      o.policy == EXPERT_POLICY_LFU_DECAY);
	REQUIRE(expert_store_opts_parse_flag(&o, "--verify-mirrors", NULL, &e) == 0 && o.verify_mirrors == 1);
	REQUIRE(expert_store_opts_parse_flag(&o, "--port", "80", &e) == -ENOENT);
	REQUIRE(expert_store_opts_parse_flag(&o, "--expert-cache", "lots", &e) == -EINVAL);
	REQUIRE(strstr(e.msg, "--expert-cache"));
	REQUIRE(expert_store_opts_parse_flag(&o, "--expert-cache", NULL, &e) == -EINVAL);
	REQUIRE(expert_store_opts_parse_flag(&o, "--no-prefetch=1", NULL, &e) == -EINVAL);
	REQUIRE(expert_store_opts_parse_flag(&o, "--mirror-weights", "1,x", &e) == -EINVAL);

	expert_store_opts_default(&o);
	setenv("COLI_EXPERT_CACHE", "2GB", 1);
	setenv("COLI_PIN_BUDGET", "0", 1);
	setenv("COLI_PREFETCH", "0", 1);
	setenv("COLI_DIRECT", "auto", 1);
	setenv("COLI_MODEL_MIRROR", "/m1:/m2", 1);
	REQUIRE(expert_store_opts_from_env(&o, &e) == 0);
	REQUIRE(o.cache_bytes == 2 * G && o.pin_bytes == 0 && o.prefetch == 0 && o.direct == -1);
	REQUIRE(!strcmp(o.mirrors[0], "/m1") && !strcmp(o.mirrors[1], "/m2") && !o.mirrors[2]);
	setenv("COLI_PREFETCH", "always", 1);
	REQUIRE(expert_store_opts_from_env(&o, &e) == 0 && o.prefetch == 2);
	/* the prefetch gate pauses only when reads bind and guesses are poor,
	 * reopens below the closing point, and never in modes 0 / 2 */
	REQUIRE(store_prefetch_gate(1, 0, 0.6, 0.5) == 1);
	REQUIRE(store_prefetch_gate(1, 0, 0.3, 0.5) == 0);
	REQUIRE(store_prefetch_gate(1, 0, 0.9, 0.9) == 0);
	REQUIRE(store_prefetch_gate(1, 1, 0.45, 0.5) == 1);
	REQUIRE(store_prefetch_gate(1, 1, 0.35, 0.5) == 0);
	REQUIRE(store_prefetch_gate(2, 0, 0.9, 0.1) == 0 && store_prefetch_gate(0, 0, 0.9, 0.1) == 0);
	setenv("COLI_PREFETCH", "maybe", 1);
	REQUIRE(expert_store_opts_from_env(&o, &e) == -EINVAL && strstr(e.msg, "COLI_PREFETCH"));
	/* iobench's pure helpers */
	int net = -1;
	REQUIRE(!strcmp(store_iobench_fs_name(0xEF53, &net), "ext4") && net == 0);
	REQUIRE(!strcmp(store_iobench_fs_name(0x6969, &net), "nfs") && net == 1);
	REQUIRE(!strcmp(store_iobench_fs_name((long)0xFF534D42u, &net), "cifs") && net == 1);
	REQUIRE(store_iobench_fs_name(0x1234, &net) == NULL && net == 0);
	double tps = store_iobench_decode_ceiling(2e9, 1000000000, 0);
	REQUIRE(tps > 1.99 && tps < 2.01);
	tps = store_iobench_decode_ceiling(2e9, 1000000000, 0.9);
	REQUIRE(tps > 19.9 && tps < 20.1);
	return test_summary(__FILE__);
}
