/* chat_jinja_test.c - the Jinja interpreter's pieces, each case's
 * expected text produced by python3-jinja2 in Hugging Face's environment
 * (tests/chat_template_ref.py's): whitespace control with trim_blocks and
 * lstrip_blocks, raw, loops (loop.*, filters, else, break/continue,
 * per-iteration scope), namespace, set and block set, macros with
 * defaults and call blocks, filters, tests, string methods, slicing,
 * operators, Python's str() of values; and errors: raise_exception's
 * message, type errors, undefined attributes, the immutable sandbox,
 * syntax errors, never a crash. */
#include "config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "chat_jinja.h"
#include "test_util.h"

static const struct {
	const char *tpl, *vars, *want, *err;
} cases[] = {
	{ "a\n  {% if true %}\n  b\n  {% endif %}\nc",
	  "{}",
	  "a\n  b\nc", NULL },
	{ "a  {%- if true -%}  b  {%- endif -%}  c",
	  "{}",
	  "abc", NULL },
	{ "x {{- ' y ' -}} z\n",
	  "{}",
	  "x y z", NULL },
	{ "{# c #}\n  {#- d -#}  e\n{%+ if true %}f{% endif %}",
	  "{}",
	  "e\nf", NULL },
	{ "{% raw %}{{ not }}{% endraw %}|{%- raw -%}  {% x %}  {%- endraw %}",
	  "{}",
	  "{{ not }}|{% x %}", NULL },
	{ "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}:{{ x }};{% endfor %}",
	  "{\"xs\": [\"a\", \"b\", \"c\"]}",
	  "10TrueFalse33:a;21FalseFalse32:b;32FalseTrue31:c;", NULL },
	{ "{% for x in xs if x > 1 %}{{ loop.index }}={{ x }},{% else %}none{% endfor %}",
	  "{\"xs\": [1, 2, 3]}",
	  "1=2,2=3,", NULL },
	{ "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}",
	  "{}",
	  "empty", NULL },
	{ "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
	  "{}",
	  "0134", NULL },
	{ "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
	  "{\"d\": {\"b\": 1, \"a\": [1, \"x\"]}}",
	  "b=1;a=[1, 'x'];ba", NULL },
	{ "{% set x = 1 %}{% for i in range(2) %}{% set x = x + 10 %}{{ x }},{% endfor %}{{ x }}",
	  "{}",
	  "11,11,1", NULL },
	{ "{% set ns = namespace(n=0, s='') %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}",
	  "{}",
	  "3 012", NULL },
	{ "{% set a, b = 1, 'two' %}{{ a }}{{ b }}{% set t %}  block {{ a }} {% endset %}[{{ t }}]{% set u | upper %}up{% endset %}{{ u }}",
	  "{}",
	  "1two[  block 1 ]UP", NULL },
	{ "{% macro m(a, b='B', c=none) %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}|{{ m('x').upper() }}",
	  "{}",
	  "1-B-None|1-2-None|1-B-3|X-B-NONE", NULL },
	{ "{% macro w(t) %}<{{ t }}:{{ caller() }}>{% endmacro %}{% call w('p') %}inner {{ 1 + 1 }}{% endcall %}",
	  "{}",
	  "<p:inner 2>", NULL },
	{ "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ '\xc3""\xa9""\"\\n' | tojson }}|{{ '\xc3""\xa9""' | tojson(ensure_ascii=True) }}|{{ d | tojson(separators=(',', ':'), sort_keys=true) }}",
	  "{\"d\": {\"z\": 1.5, \"a\": [true, null, 1e-07, 100.0]}}",
	  "{\"z\": 1.5, \"a\": [true, null, 1e-07, 100.0]}|{\n  \"z\": 1.5,\n  \"a\": [\n    true,\n    null,\n    1e-07,\n    100.0\n  ]\n}|\"\xc3""\xa9""\\\"\\n\"|\"\\u00e9\"|{\"a\":[true,null,1e-07,100.0],\"z\":1.5}", NULL },
	{ "{{ '  x  ' | trim }}|{{ xs | length }}|{{ 'h\xc3""\xa9""llo' | length }}|{{ xs | first }}|{{ xs | last }}|{{ xs | join('-') }}|{{ xs | list }}|{{ 'ab' | list }}",
	  "{\"xs\": [3, 1, 2]}",
	  "x|3|5|3|2|3-1-2|[3, 1, 2]|['a', 'b']", NULL },
	{ "{{ 'aBc dEf' | lower }} {{ 'aBc dEf' | upper }} {{ 'aBc dEf' | capitalize }} {{ 'aBc dEf' | title }} {{ 'aaa' | replace('a', 'b', 2) }}",
	  "{}",
	  "abc def ABC DEF Abc def Abc Def bba", NULL },
	{ "{{ u | default('d') }}|{{ none | default('d') }}|{{ '' | default('d', true) }}|{{ u | d('x') }}",
	  "{}",
	  "d|None|d|x", NULL },
	{ "{{ ms | map(attribute='r') | join(',') }}|{{ ms | selectattr('r', 'equalto', 'a') | list | length }}|{{ ms | rejectattr('r', 'equalto', 'a') | map(attribute='r') | list }}|{{ [0, 1, 2] | select | list }}|{{ [0, 1, 2] | reject('odd') | list }}|{{ ['a','b'] | map('upper') | list }}",
	  "{\"ms\": [{\"r\": \"a\"}, {\"r\": \"b\"}, {\"r\": \"a\"}]}",
	  "a,b,a|2|['b']|[1, 2]|[0, 2]|['A', 'B']", NULL },
	{ "{{ 3 | string ~ 'x' }}|{{ '12' | int + 1 }}|{{ '1.5' | float }}|{{ -3 | abs }}|{{ 2.567 | round(2) }}|{{ 2 | round }}|{{ 'x' | safe }}|{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}",
	  "{\"d\": {\"a\": 1}}",
	  "3x|13|1.5|3|2.57|2|x|a1", NULL },
	{ "{{ u is defined }}{{ u is undefined }}{{ none is none }}{{ 's' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 's' is sequence }}{{ 1.5 is number }}{{ true is boolean }}{{ 2 is equalto 2 }}{{ 1 is in [1] }}{{ 3 is odd }}{{ 'a' is not string }}",
	  "{}",
	  "FalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalse", NULL },
	{ "{{ s.startswith('ab') }}{{ s.endswith(('x', 'cd')) }}|{{ s.split('b') }}|{{ 'a b  c '.split() }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ 'a,b,c'.split(',', 1) }}|[{{ '\\n x \\n'.strip() }}]|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\na'.lstrip('\\n') }}|{{ 'a  '.rstrip() }}|{{ s.find('c') }}{{ s.find('z') }}|{{ s.replace('b', 'B') }}|{{ s.upper() }}",
	  "{\"s\": \"abcd\"}",
	  "TrueTrue|['a', 'cd']|['a', 'b', 'c']|['a,b', 'c']|['a', 'b,c']|[x]|a|a|a|2-1|aBcd|ABCD", NULL },
	{ "{{ '%s and %d' % ('x', 3) }}|{{ 'v%s' % 1 }}|{{ '{} is {}'.format('a', 2) }}",
	  "{}",
	  "x and 3|v1|a is 2", NULL },
	{ "{{ s[1:3] }}|{{ s[::-1] }}|{{ s[-2:] }}|{{ xs[1:] }}|{{ xs[:-1] }}|{{ xs[::2] }}|{{ '\xc3""\xa9""\xe6""\xbc""\xa2""\xe5""\xad""\x97""'[1:] }}|{{ s[0] }}{{ xs[-1] }}",
	  "{\"s\": \"abcdef\", \"xs\": [1, 2, 3, 4]}",
	  "bc|fedcba|ef|[2, 3, 4]|[1, 2, 3]|[1, 3]|\xe6""\xbc""\xa2""\xe5""\xad""\x97""|a4", NULL },
	{ "{{ 'b' in 'abc' }}{{ 'z' not in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}|{{ 1 ~ 'a' ~ none }}|{{ x is not none }}|{{ {'a': [1, {'b': 2}]}['a'][1].b }}|{{ d.get('a') }}{{ d.get('z', 'dflt') }}{{ d.get('z') }}|{{ d.keys() | list }}{{ d.values() | list }}",
	  "{\"x\": 1, \"d\": {\"a\": 1}}",
	  "TrueTrueTrueTrue|1aNone|True|2|1dfltNone|['a'][1]", NULL },
	{ "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 1 / 4 }} {{ 2 ** 3 }} {{ 1 + 2.0 }} {{ 'ab' * 2 }} {{ [1] + [2] }} {{ 'y' if 0 else 'n' }} {{ 0 or 'o' }} {{ 1 and 'a' }} {{ not 0 }}",
	  "{}",
	  "3 -4 1 2 0.25 8 3.0 abab [1, 2] n o a True", NULL },
	{ "{{ messages | length }}{{ add_generation_prompt }}{{ tools }}{{ bos_token }}",
	  "{\"messages\": [1], \"add_generation_prompt\": true, \"tools\": null, \"bos_token\": \"<s>\"}",
	  "1TrueNone<s>", NULL },
	{ "{{ [1, 'a', none, true, 1.0, {'k': 'v'}] }}|{{ \"it's\" }}|{{ [\"it's\"] }}|{{ 1e20 }}|{{ 12345678901234567.0 }}|{{ 0.0001 }}|{{ 0.00001 }}",
	  "{}",
	  "[1, 'a', None, True, 1.0, {'k': 'v'}]|it's|[\"it's\"]|1e+20|1.2345678901234568e+16|0.0001|1e-05", NULL },
	{ "{{ raise_exception('custom failure') }}",
	  "{}",
	  NULL, "custom failure" },
	{ "{{ 'a' + {} }}",
	  "{}",
	  NULL, "can only concatenate str" },
	{ "{{ u.x }}",
	  "{}",
	  NULL, "'u' is undefined" },
	{ "{% set l = [] %}{{ l.append(1) }}",
	  "{}",
	  NULL, "unsafe" },
	{ "{% for %}",
	  "{}",
	  NULL, "template line" },
	{ "{% if x %}unclosed",
	  "{}",
	  NULL, "template line" },
	{ "{{ 1 / 0 }}",
	  "{}",
	  NULL, "division by zero" },
	{ "{{ 'x' | nosuchfilter }}",
	  "{}",
	  NULL, "nosuchfilter" },
	/* bounds a template cannot pass */
	{ "{{ 9223372036854775807 + 1 }}", "{}", NULL, "integer overflow" },
	{ "{{ range(1000000) | length }}", "{}", NULL, "range too big" },
	{ "{% for i in range(100000) %}{% for j in range(100000) %}{% break %}{% endfor %}{% endfor %}", "{}", NULL,
	  "loops more than" },
	{ "{{ 'ab' * 100000000000 }}", "{}", NULL, "repetition too large" },
};

int main(int argc, char **argv)
{
	(void)argc;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		coli_err err = { 0 };
		chat_jinja *t = NULL;
		char *out = NULL;
		json_t *vars = json_loads(cases[i].vars, 0, NULL);
		REQUIRE(vars, "case %zu: vars", i);
		int rc = chat_jinja_parse(cases[i].tpl, &t, &err);
		if (rc == 0)
			rc = chat_jinja_render(t, vars, &out, &err);
		if (cases[i].want) {
			CHECK(rc == 0, "case %zu: %s", i, err.msg);
			if (rc == 0)
				CHECK(!strcmp(out, cases[i].want), "case %zu: got \"%s\" want \"%s\"", i, out,
				      cases[i].want);
		} else {
			CHECK(rc < 0, "case %zu: rendered \"%s\", want an error", i, out ? out : "");
			CHECK(strstr(err.msg, cases[i].err) != NULL, "case %zu: error \"%s\" lacks \"%s\"", i,
			      err.msg, cases[i].err);
		}
		free(out);
		chat_jinja_free(t);
		json_decref(vars);
	}
	/* nesting a parser would recurse on is refused, not a stack overflow */
	static const char *const opens[] = { "(", "not ", "-", "[", "{% if 1 %}" };
	static const char *const closes[] = { ")", "", "", "]", "" };
	for (size_t k = 0; k < sizeof opens / sizeof opens[0]; k++) {
		size_t n = 100000, l = strlen(opens[k]), m = strlen(closes[k]);
		int is_expr = opens[k][0] != '{';
		char *src = malloc(n * (l + m) + 16);
		REQUIRE(src);
		strcpy(src, is_expr ? "{{ " : "");
		size_t at = strlen(src);
		for (size_t i = 0; i < n; i++, at += l)
			memcpy(src + at, opens[k], l);
		src[at++] = is_expr ? '1' : 'x';
		for (size_t i = 0; i < n; i++, at += m)
			memcpy(src + at, closes[k], m);
		strcpy(src + at, is_expr ? " }}" : "");
		coli_err err = { 0 };
		chat_jinja *t = NULL;
		CHECK(chat_jinja_parse(src, &t, &err) < 0 && strstr(err.msg, "nested too deep"), "deep %s: %s",
		      opens[k], err.msg);
		chat_jinja_free(t);
		free(src);
	}
	return test_summary(argv[0]);
}
