# Man pages are generated from man/*.in so the version never drifts. Each
# module adds its pages to man_MANS (generated name) and EXTRA_DIST (.in).
# The pattern is written [@]VERSION[@]: configure substitutes a plain
# @VERSION@ in this rule itself, which left every page showing @VERSION@.
man_MANS += man/coli.1 man/coli-generate.1 man/coli-logits.1 man/coli-bench.1 man/coli-doctor.1 \
	man/coli-atlas.1
EXTRA_DIST += man/coli.1.in man/coli-generate.1.in man/coli-logits.1.in man/coli-bench.1.in man/coli-doctor.1.in \
	man/coli-atlas.1.in \
	man/engine-options.inc
CLEANFILES += $(man_MANS)

# engine-options.inc is the list of engine flags shared by every command
# that runs the model; @ENGINE_OPTIONS@ in a page is replaced by it.
man_subst = sed -e 's|[@]VERSION[@]|$(PACKAGE_VERSION)|g' \
	-e 's|@PKGDATADIR@|$(pkgdatadir)|g' \
	-e '/@ENGINE_OPTIONS@/{r $(srcdir)/man/engine-options.inc' -e 'd;}'

man/%.1: $(srcdir)/man/%.1.in $(srcdir)/man/engine-options.inc
	$(AM_V_GEN)$(MKDIR_P) man && $(man_subst) $< > $@
man/%.5: $(srcdir)/man/%.5.in
	$(AM_V_GEN)$(MKDIR_P) man && $(man_subst) $< > $@

# mandoc -Tlint over every page (warnings fail the check).
check-local: check-man
check-man: $(man_MANS)
	@if command -v mandoc >/dev/null 2>&1; then \
		out=$$(mandoc -Tlint -W warning $(man_MANS) 2>&1); \
		if [ -n "$$out" ]; then echo "$$out"; exit 1; fi; \
		echo "man pages: mandoc -Tlint clean"; \
	fi
.PHONY: check-man
